"""A conversation between named people (``governance.kmms.phrasing.people``): each person's first-person statements
are that person's facts, whatever their turns' role, and never the memory owner's; a chat whose only named speaker
is its user stays the owner's (the local consolidator, ``inference.kmms.local``, and the engine's pairs)."""

from __future__ import annotations

from datetime import UTC, datetime

from governance.kmms.consolidation import ConsolidationEngine, ScopeState
from governance.kmms.phrasing import named_lines, people
from governance.kmms.values import EpisodeText
from inference.kmms.local import LocalConsolidator, sentence_facts

TALK = ("user: Caroline: I live in Porto. It is lovely in spring.\n"
        "assistant: Melanie: I moved to Lisbon last year.\n"
        "user: Where should we meet?")  # fmt: skip


def _facts(entity: str, text: str) -> list[tuple[str, str, str]]:
    return [(shown, h.key, h.value) for shown, hits in sentence_facts(entity, text, 0) for h in hits]


def test_each_line_knows_its_speaker_and_two_names_make_a_conversation_between_people() -> None:
    assert named_lines(TALK) == [("user", "Caroline", "I live in Porto. It is lovely in spring."),
                                 ("assistant", "Melanie", "I moved to Lisbon last year."),
                                 ("user", None, "Where should we meet?")]  # fmt: skip
    assert people(TALK) == {"Caroline", "Melanie"}
    assert people("user: Ana: I live in Porto.\nassistant: Noted.") == frozenset()  # one named user: the owner


def test_a_persons_statements_are_theirs_not_the_owners() -> None:
    assert _facts("Caroline", TALK) == [("Caroline: I live in Porto.", "residence", "Porto")]
    assert _facts("Melanie", TALK) == [("Melanie: I moved to Lisbon last year.", "residence", "Lisbon")]
    assert _facts("user", TALK) == []
    # a summary's items keep the label, and are read as the person's own
    assert _facts("Melanie", "Melanie: I moved to Lisbon last year.") == [
        ("Melanie: I moved to Lisbon last year.", "residence", "Lisbon")
    ]


def test_a_chat_whose_only_named_speaker_is_its_user_stays_the_owners() -> None:
    assert [(k, v) for _, k, v in _facts("user", "user: Ana: I live in Porto.\nassistant: Noted.")] == [
        ("residence", "Porto")
    ]


def test_the_engine_files_each_persons_facts_under_their_name() -> None:
    engine, st = ConsolidationEngine(LocalConsolidator(), batch=3), ScopeState()
    days = ["2026-03-02", "2026-03-03", "2026-03-04"]
    texts = [TALK, "user: Caroline: I work at Acme.\nuser: Melanie: I work at Globex.",
             "user: Melanie: How was the week?\nuser: Caroline: Busy, lots of travel."]  # fmt: skip
    emitted = []
    for i, (day, text) in enumerate(zip(days, texts, strict=True)):
        at = int(datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp() * 1000)
        engine.stored(st, EpisodeText(f"e{i}", f"s{i}", at, text))
        emitted += engine.enriched(st, f"e{i}", "user", "other", f"e{i}", owner=True)
    facts = sorted((x.node.entity, x.node.fact_key, x.node.fact_value) for x in emitted
                   if x.kind == "NODE_CREATED" and x.node is not None and x.node.layer == 2)  # fmt: skip
    assert facts == [("Caroline", "employer", "Acme"), ("Caroline", "residence", "Porto"),
                     ("Melanie", "employer", "Globex"), ("Melanie", "residence", "Lisbon")]  # fmt: skip
    summaries = {x.node.entity: x.node.content for x in emitted if x.node is not None and x.node.layer == 3}
    assert "Melanie: I moved to Lisbon" in summaries["Melanie"] and "Porto" not in summaries["Melanie"]
    assert "Caroline: I live in Porto" in summaries["Caroline"]
    # the owner's summary holds the owner's unnamed line only, none of the people's words
    assert "Where should we meet?" in summaries["user"] and "Porto" not in summaries["user"]
