"""KMP answers from a snapshot, without a database: wake's state and spine, trace's path, inspect's
summary-versus-raw rule, all from the incident story as the read model would hold it."""

from __future__ import annotations

import pytest

from contracts.kmp_records import decode_kmp
from contracts.topics import TopicNames
from processors.kmp.core import KmpDriver
from projections.kmp.queries import inspect
from projections.kmp.views import (
    SUMMARY_CHARS,
    EntryRow,
    EvidenceView,
    Moved,
    NavError,
    RelationView,
    Snapshot,
    move,
    trace,
    wake,
)
from tests.kmp_story import story
from tests.unit.test_kmp_processor import T0, envelope


def snapshot_of_story(upto: int = 4) -> Snapshot:
    """The story through the processor, then folded the way the read model folds it."""
    d = KmpDriver(TopicNames())
    s = Snapshot("inc-1", 2**62)
    for n, (writer, p) in enumerate(story("inc-1", T0)[:upto]):
        ev = decode_kmp(d.pipe(envelope(p, claw=writer), T0 + 1_000 * n)[0].value)
        base = n * 1024
        s.entries += [EntryRow("inc-1", e.id, e.kind, e.text, e.occurred_at, ev.at, base + i,
                               tuple(c.dimension for c in e.coordinates), writer)
                      for i, e in enumerate(ev.ingest.entries)]  # fmt: skip
        s.relations += [RelationView(about="inc-1", source_ref=r.source_ref, target_ref=r.target_ref, rel=r.rel,
                                     semantic_class=r.semantic_class, why=r.why, evidence_refs=r.evidence_refs,
                                     quality=g.quality, known_at=ev.at)
                        for r, g in zip(ev.ingest.relations, ev.grades, strict=True)]  # fmt: skip
        s.evidence += [EvidenceView(ref=v.id, about="inc-1", text=v.text, supports=v.supports, source=v.source,
                                    known_at=ev.at) for v in ev.ingest.evidence]  # fmt: skip
    s.entries.sort(key=lambda e: e.key)
    return s


def test_wake_before_and_after_the_rollback() -> None:
    early = wake(snapshot_of_story(3), 20, None)
    assert [e.ref for e in early.open_loops] == ["hyp-pool", "q-canary"] and early.next_actions == []
    assert "res-restart" in {e.ref for e in early.current_state}
    late = wake(snapshot_of_story(4), 20, "tok")
    assert late.objective is not None and late.objective.ref == "obj" and late.resume_cursor == "tok"
    state = {e.ref for e in late.current_state}
    assert "res-restart" not in state and "res-fixed" in state  # superseded by the rollback decision
    assert [e.ref for e in late.open_loops] == ["hyp-pool"]  # the canary question is resolved now
    assert ("dec-rollback", "chosen_because", "cause-v42") in {(x.claim_ref, x.rel, x.because_ref)
                                                               for x in late.causal_spine}  # fmt: skip


def test_trace_prefers_explained_paths_and_stops_at_depth() -> None:
    s = snapshot_of_story()
    path, explored = trace(s, "res-fixed", "hyp-pool", 6)
    assert [(r.source_ref, r.target_ref) for r in path] == [
        ("res-fixed", "dec-rollback"), ("dec-rollback", "cause-v42"), ("cause-v42", "hyp-pool")]  # fmt: skip
    assert all(r.quality == "RICH" for r in path) and explored > 3
    assert trace(s, "res-fixed", "hyp-pool", 2)[0] == []
    assert trace(s, "obj", "obj", 6)[0] == []


def test_inspect_reads_a_summary_unless_raw_is_asked() -> None:
    s = snapshot_of_story()
    long = "x" * (SUMMARY_CHARS + 50)
    s.entries.append(EntryRow("inc-1", "long", "note", long, T0, T0, 99_999, (), "w"))
    plain = inspect(s, "long", True, True, True, raw=False)
    assert plain is not None and plain.raw is None and plain.entry is not None
    assert len(plain.entry.summary) == SUMMARY_CHARS and plain.entry.summary.endswith("…")
    raw = inspect(s, "long", True, True, True, raw=True)
    assert raw is not None and raw.raw == long
    ev = inspect(s, "ev-diff", True, True, True, raw=False)
    assert ev is not None and ev.kind == "evidence" and ev.evidence_item is not None
    assert inspect(s, "nope", True, True, True, raw=False) is None


def test_moving_through_time() -> None:
    s = snapshot_of_story()
    refs = [e.ref for e in s.entries]

    def names(m: Moved) -> list[str]:
        return [refs[i] for i in m.indices]

    goto = move(s, "goto", "dec-rollback", None, None, 3, 3, 10)
    assert names(goto) == ["dec-rollback"] and goto.landed == refs.index("dec-rollback")
    assert names(move(s, "near", None, T0 + 14 * 60_000, None, 1, 1, 10)) == ["q-canary", "dec-rollback", "res-fixed"]
    # A time between two entries lands on none: near shows the one after it and its neighbours.
    between = move(s, "near", None, T0 + 13 * 60_000, None, 1, 0, 10)
    assert between.landed is None and names(between) == ["q-canary", "dec-rollback"]
    # Paging backward from the end and forward from the start visit everything once, in order.
    back, token = True, None
    seen: list[str] = []
    while back:
        m = move(s, "rewind", None, None, token, 0, 0, 4)
        seen = names(m) + seen
        token, back = m.next_cursor, m.has_more
    assert seen == refs
    token, ahead = None, True
    seen = []
    while ahead:
        m = move(s, "forward", None, None, token, 0, 0, 3)
        seen += names(m)
        token, ahead = m.next_cursor, m.has_more
    assert seen == refs
    with pytest.raises(NavError) as err:
        move(s, "goto", None, None, None, 0, 0, 1)
    assert (err.value.status, err.value.code) == (422, "CURSOR_REQUIRED")
    with pytest.raises(NavError) as err:
        move(s, "forward", None, None, "bm90LWEtdG9rZW4", 0, 0, 1)
    assert err.value.code == "INVALID_CURSOR"
    with pytest.raises(NavError) as err:
        move(s, "near", "ghost", None, None, 1, 1, 1)
    assert (err.value.status, err.value.code) == (404, "REF_NOT_FOUND")
