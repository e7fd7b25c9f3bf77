"""A window where the owner said nothing gets no summary (``ConsolidationEngine._summarize``): a chat's other side
sent as the assistant's named turns leaves the local consolidator nothing to summarise, and a summary of nothing
would be a node no vector can be computed from, holding its episodes back from ``/memory/indexed`` for ever."""

from __future__ import annotations

from datetime import UTC, datetime

from governance.kmms.consolidation import ConsolidationEngine, ScopeState
from governance.kmms.values import EpisodeText
from inference.kmms.local import LocalConsolidator


def _ep(eid: str, day: str, text: str) -> EpisodeText:
    return EpisodeText(eid, "s-" + eid, int(datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp() * 1000), text)


def _consolidate(texts: list[str]) -> list[tuple[str, str]]:
    engine, st = ConsolidationEngine(LocalConsolidator(), batch=3), ScopeState()
    out: list[tuple[str, str]] = []
    for i, text in enumerate(texts):
        e = _ep(f"e{i}", f"2026-03-0{i + 2}", text)
        engine.stored(st, e)
        out += [(x.kind, x.node.content if x.node else "") for x in engine.enriched(st, e.episode_id, "user", "other",
                                                                                   e.episode_id)]  # fmt: skip
    return out


def test_a_window_the_owner_said_nothing_in_gets_no_summary() -> None:
    said = ["assistant: Nebraas: No he said strict bed rest", "assistant: Nebraas: Like I can walk around a little",
            "assistant: Vanessa: Get well soon!"]  # fmt: skip
    assert _consolidate(said) == []


def test_a_window_the_owner_spoke_in_still_gets_its_summary() -> None:
    said = ["assistant: Nebraas: No he said strict bed rest", "user: Vanessa: I live in Porto now.",
            "assistant: Vanessa: Get well soon!"]  # fmt: skip
    created = [content for kind, content in _consolidate(said) if kind == "NODE_CREATED"]
    assert created and all(content.strip() for content in created)
    assert any("Porto" in content for content in created)
