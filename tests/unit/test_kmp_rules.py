"""KMP pure rules: relation grading, read scopes, timeline cursors and paging, ask's confidence,
failure diagnosis."""

from __future__ import annotations

import base64
from dataclasses import replace
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import given

from governance.kmp.confidence import ProofFacts, confidence
from governance.kmp.cursors import (
    MAX_SPAN,
    CursorError,
    TimelineKey,
    Window,
    decode_cursor,
    encode_cursor,
    forward,
    locate,
    near,
    page,
    rewind,
)
from governance.kmp.diagnose import AnswerFacts, classify
from governance.kmp.relations import (
    CAUSAL_SPINE,
    CONFLICTING,
    SEMANTIC_CLASSES,
    SUPERSEDING,
    VOCABULARY,
    Grade,
    RelationFacts,
    count,
    grade,
)
from governance.kmp.scope import ResolvedScope, ScopeError, dimension_key, resolve_scope

# ---------------------------------------------------------------------------------------------- relations


def _facts(rel: str = "depends_on", **changes: Any) -> RelationFacts:
    base = RelationFacts(
        rel=rel,
        semantic_class=sorted(VOCABULARY[rel].classes)[0] if rel in VOCABULARY else "CAUSAL",
        why="the deploy needs the migration",
        evidence_refs=("ev:1",),
        source_known=True,
        target_known=True,
        target_about=None,
        evidence_known=True,
        target_in_context=True,
        self_loop=False,
    )
    return replace(base, **changes)


RICH = sorted(r for r, t in VOCABULARY.items() if t.quality == "RICH")
ANEMIC = sorted(r for r, t in VOCABULARY.items() if t.quality == "ANEMIC")
STRUCTURAL = sorted(r for r, t in VOCABULARY.items() if t.quality == "STRUCTURAL")


def test_vocabulary_is_the_briefs() -> None:
    assert set(RICH) == {
        "depends_on", "chosen_because", "triggers", "authorizes", "verified_by", "semantic_delta_from",
        "updates_state", "supports", "supersedes", "contradicts", "satisfies_constraint", "violates_constraint",
        "derived_from", "corrects", "refines", "replaces", "caused_by", "blocks", "resolves",
    }  # fmt: skip
    assert set(ANEMIC) == {"follows", "answers", "uses_background", "near"}
    assert set(STRUCTURAL) == {"contains", "member_of", "scoped_to"}
    for t in VOCABULARY.values():
        assert t.classes and t.classes <= SEMANTIC_CLASSES and t.meaning
    assert all(VOCABULARY[r].classes == {"STRUCTURAL", "PROCEDURAL"} for r in ANEMIC)
    assert all(VOCABULARY[r].classes == {"STRUCTURAL"} for r in STRUCTURAL)
    assert VOCABULARY["verified_by"].classes == VOCABULARY["supports"].classes == {"EVIDENTIAL"}
    assert VOCABULARY["satisfies_constraint"].classes == VOCABULARY["violates_constraint"].classes == {"CONSTRAINT"}
    assert {"MOTIVATIONAL", "CAUSAL"} <= VOCABULARY["chosen_because"].classes
    assert VOCABULARY["depends_on"].classes == {"CAUSAL", "PROCEDURAL"}
    # the special sets are rich relations of the vocabulary
    assert {"supersedes", "replaces", "corrects"} == SUPERSEDING and {"contradicts"} == CONFLICTING
    causal = {"depends_on", "chosen_because", "triggers", "caused_by", "authorizes", "derived_from", "updates_state"}
    assert causal | {"resolves"} == CAUSAL_SPINE
    assert set(RICH) >= SUPERSEDING | CONFLICTING | CAUSAL_SPINE
    with pytest.raises(TypeError):
        VOCABULARY["x"] = VOCABULARY["near"]  # type: ignore[index]


@pytest.mark.parametrize("rel", sorted(VOCABULARY))
def test_every_relation_with_every_allowed_class_gets_its_own_quality(rel: str) -> None:
    for cls in VOCABULARY[rel].classes:
        assert grade(_facts(rel, semantic_class=cls)) == Grade(VOCABULARY[rel].quality, "OK")


@pytest.mark.parametrize("rel", sorted(VOCABULARY))
def test_every_relation_with_a_class_not_allowed_is_suspect(rel: str) -> None:
    for cls in SEMANTIC_CLASSES - VOCABULARY[rel].classes:
        assert grade(_facts(rel, semantic_class=cls)) == Grade("SUSPECT", "CLASS_NOT_ALLOWED")


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"rel": "relates_to"}, "UNKNOWN_RELATION"),
        ({"rel": "DEPENDS_ON"}, "UNKNOWN_RELATION"),
        ({"semantic_class": "causal"}, "BAD_CLASS"),
        ({"semantic_class": ""}, "BAD_CLASS"),
        ({"source_known": False}, "UNKNOWN_SOURCE"),
        ({"target_known": False}, "UNKNOWN_TARGET"),
        ({"target_about": "incident:2"}, "OTHER_ABOUT"),
        ({"self_loop": True}, "SELF_LOOP"),
        ({"evidence_known": False}, "UNKNOWN_EVIDENCE"),
    ],
)
def test_reject_cases(changes: dict[str, Any], reason: str) -> None:
    for rel in ("depends_on", "near", "contains"):
        assert grade(replace(_facts(rel), **changes)) == Grade("REJECTED", reason)


def test_reject_wins_over_suspect_and_the_order_is_the_documented_one() -> None:
    worst = _facts(why="", evidence_refs=(), target_in_context=False, semantic_class="STRUCTURAL")
    assert grade(replace(worst, self_loop=True)).reason == "SELF_LOOP"
    assert grade(replace(worst, source_known=False, target_known=False)).reason == "UNKNOWN_SOURCE"
    assert grade(replace(worst, target_known=False, target_about="other")).reason == "UNKNOWN_TARGET"
    assert grade(replace(worst, rel="nope", semantic_class="nope")).reason == "UNKNOWN_RELATION"
    assert grade(replace(worst, semantic_class="nope", source_known=False)).reason == "BAD_CLASS"
    assert grade(worst).reason == "CLASS_NOT_ALLOWED"
    assert grade(replace(worst, semantic_class="CAUSAL")).reason == "MISSING_WHY"
    assert grade(replace(worst, semantic_class="CAUSAL", why="w")).reason == "MISSING_EVIDENCE"
    # no evidence ref: nothing fails to resolve
    assert grade(replace(worst, semantic_class="CAUSAL", evidence_known=False)).reason == "MISSING_WHY"


@pytest.mark.parametrize("rel", RICH)
@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"why": ""}, "MISSING_WHY"),
        ({"why": "  \n\t"}, "MISSING_WHY"),
        ({"evidence_refs": ()}, "MISSING_EVIDENCE"),
        ({"target_in_context": False}, "TARGET_NOT_READ"),
    ],
)
def test_suspect_cases_of_rich_relations(rel: str, changes: dict[str, Any], reason: str) -> None:
    assert grade(_facts(rel, **changes)) == Grade("SUSPECT", reason)


@pytest.mark.parametrize("rel", ANEMIC + STRUCTURAL)
def test_anemic_and_structural_need_no_why_evidence_or_reading(rel: str) -> None:
    bare = _facts(rel, why="", evidence_refs=(), evidence_known=False, target_in_context=False)
    assert grade(bare) == Grade(VOCABULARY[rel].quality, "OK")
    assert grade(replace(bare, evidence_refs=("ev:x",))) == Grade("REJECTED", "UNKNOWN_EVIDENCE")


def test_count_tallies_and_evidence_coverage() -> None:
    facts = [
        _facts("depends_on"),  # RICH, evidence
        _facts("near", evidence_refs=()),  # ANEMIC, none
        _facts("contains", evidence_refs=()),  # STRUCTURAL: not in coverage
        _facts("supports", why=""),  # SUSPECT, evidence
        _facts("follows", target_known=False, evidence_refs=()),  # REJECTED: not in coverage
        _facts("triggers", evidence_refs=()),  # SUSPECT, none
    ]
    grades = [grade(f) for f in facts]
    assert [g.quality for g in grades] == ["RICH", "ANEMIC", "STRUCTURAL", "SUSPECT", "REJECTED", "SUSPECT"]
    counts = count(grades, facts, context_observed=7)
    assert (counts.rich, counts.anemic, counts.structural, counts.suspect, counts.rejected) == (1, 1, 1, 2, 1)
    assert counts.evidence_coverage == 2 / 4 and counts.context_observed == 7
    assert count([], [], 0).evidence_coverage == 1.0
    only_structural = [_facts("member_of", evidence_refs=())]
    assert count([grade(f) for f in only_structural], only_structural, 0).evidence_coverage == 1.0
    with pytest.raises(ValueError):
        count(grades[:1], facts, 0)
    with pytest.raises(ValueError):
        count([], [], -1)


# ---------------------------------------------------------------------------------------------- scope


def _scope_error(mode: str, about: str | None, abouts: Any, **kw: Any) -> str:
    with pytest.raises(ScopeError) as err:
        resolve_scope(mode, about, abouts, **kw)
    assert isinstance(err.value, ValueError) and err.value.detail
    return err.value.code


def test_current_about() -> None:
    assert resolve_scope("CURRENT_ABOUT", "incident:1", None) == ResolvedScope("CURRENT_ABOUT", ("incident:1",), False)
    assert resolve_scope("CURRENT_ABOUT", "incident:1", []).abouts == ("incident:1",)
    assert _scope_error("CURRENT_ABOUT", None, None) == "ABOUT_REQUIRED"
    assert _scope_error("CURRENT_ABOUT", " ", None) == "ABOUT_REQUIRED"
    assert _scope_error("CURRENT_ABOUT", "incident:1", ["incident:2"]) == "INVALID_SCOPE"


def test_abouts() -> None:
    got = resolve_scope("ABOUTS", "ignored", ["b", "a", "b", "c", "a"])
    assert got == ResolvedScope("ABOUTS", ("b", "a", "c"), False)
    assert _scope_error("ABOUTS", "incident:1", None) == "ABOUTS_REQUIRED"
    assert _scope_error("ABOUTS", None, []) == "ABOUTS_REQUIRED"
    assert _scope_error("ABOUTS", None, ["a", ""]) == "INVALID_SCOPE"
    assert _scope_error("ABOUTS", None, "abc") == "INVALID_SCOPE"
    assert resolve_scope("ABOUTS", None, ["a", "b", "a"], max_abouts=2).abouts == ("a", "b")
    assert _scope_error("ABOUTS", None, ["a", "b", "c"], max_abouts=2) == "TOO_MANY_ABOUTS"
    assert len(resolve_scope("ABOUTS", None, [str(i) for i in range(100)]).abouts or ()) == 100
    assert _scope_error("ABOUTS", None, [str(i) for i in range(101)]) == "TOO_MANY_ABOUTS"


def test_all_abouts_is_global_within_the_tenant_and_unknown_modes_are_refused() -> None:
    assert resolve_scope("ALL_ABOUTS", None, None) == ResolvedScope("ALL_ABOUTS", None, True)
    assert resolve_scope("ALL_ABOUTS", "incident:1", []).is_global
    assert _scope_error("ALL_ABOUTS", None, ["a"]) == "INVALID_SCOPE"
    for mode in ("", "current_about", "ALL", "TENANT", "ALL_TENANTS"):
        assert _scope_error(mode, "a", ["a"]) == "INVALID_SCOPE"
    with pytest.raises(ValueError):
        resolve_scope("ABOUTS", None, ["a"], max_abouts=0)


def test_dimension_keys_of_two_abouts_never_mix() -> None:
    assert dimension_key("incident:1", "session:1") == "about:incident:1:dimension:session:1"
    assert dimension_key("incident:1", "session:1") != dimension_key("incident:2", "session:1")
    assert dimension_key("incident:1", "session:1") != dimension_key("incident:1", "session:2")
    for about, dim in (("", "s"), (" ", "s"), ("a", ""), ("x:dimension:y", "s"), ("x:dimension", "dimension:s")):
        with pytest.raises(ScopeError):
            dimension_key(about, dim)


_ID = st.text(alphabet="adimenosx:1", min_size=1, max_size=12)


@given(st.tuples(_ID, _ID), st.tuples(_ID, _ID))
def test_dimension_key_is_injective(a: tuple[str, str], b: tuple[str, str]) -> None:
    try:
        ka, kb = dimension_key(*a), dimension_key(*b)
    except ScopeError:
        return
    assert (ka == kb) == (a == b)


# ---------------------------------------------------------------------------------------------- cursors


def _keys(*occurred: int) -> list[TimelineKey]:
    return [TimelineKey(o, 100 + i, i) for i, o in enumerate(occurred)]


def test_keys_order_by_occurred_then_known_then_seq_and_are_checked() -> None:
    assert TimelineKey(1, 9, 9) < TimelineKey(2, 0, 0) < TimelineKey(2, 1, 0) < TimelineKey(2, 1, 1)
    for bad in ((True, 0, 0), (1.0, 0, 0), (2**63, 0, 0), (0, 0, -(2**63) - 1)):
        with pytest.raises(ValueError):
            TimelineKey(*bad)  # type: ignore[arg-type]
    TimelineKey(-(2**63), 2**63 - 1, 0)


def test_locate() -> None:
    keys = _keys(10, 20, 20, 30)
    assert [locate(keys, t) for t in (0, 10, 11, 20, 21, 30, 31)] == [0, 0, 1, 1, 3, 3, 4]
    assert locate(keys, keys[2]) == 2
    assert locate(keys, TimelineKey(20, 101, 2)) == 2  # between keys[1] and keys[2]
    assert locate(keys, TimelineKey(20, 999, 0)) == 3
    assert locate([], 5) == 0
    with pytest.raises(TypeError):
        locate(keys, "10")  # type: ignore[arg-type]


def test_window_near_rewind_forward() -> None:
    assert near(10, 5, Window(2, 3)) == range(3, 9)
    assert near(10, 1, Window(5, 0)) == range(0, 2)
    assert near(10, 9, Window(0, 5)) == range(9, 10)
    assert near(10, 10, Window(3, 3)) == range(7, 10)  # center after the end
    assert near(0, 0, Window(3, 3)) == range(0, 0)
    assert rewind(10, 5, 2) == range(3, 5) and list(rewind(10, 5, 2))[-1] == 4  # nearest last
    assert rewind(10, 1, 5) == range(0, 1) and rewind(10, 0, 5) == range(0, 0)
    assert rewind(10, 10, 2) == range(8, 10)
    assert forward(10, 5, 2) == range(6, 8) and forward(10, 8, 5) == range(9, 10)
    assert forward(10, 9, 5) == range(10, 10) and forward(10, 10, 5) == range(10, 10)
    assert rewind(10, 5, 0) == range(5, 5) == forward(10, 4, 0)
    for bad_window in ((-1, 0), (0, MAX_SPAN + 1), (1.5, 0)):
        with pytest.raises(ValueError):
            Window(*bad_window)  # type: ignore[arg-type]
    Window(MAX_SPAN, 0)
    for call in (lambda: near(10, 11, Window(1, 1)), lambda: rewind(10, -1, 1), lambda: forward(10, 5, MAX_SPAN + 1)):
        with pytest.raises(ValueError):
            call()


@given(st.integers(0, 50), st.data())
def test_near_rewind_forward_agree(n: int, data: st.DataObject) -> None:
    center = data.draw(st.integers(0, n))
    before, after = data.draw(st.integers(0, MAX_SPAN)), data.draw(st.integers(0, MAX_SPAN))
    around = near(n, center, Window(before, after))
    itself = range(center, center + 1) if center < n else range(center, center)
    assert list(around) == list(rewind(n, center, before)) + list(itself) + list(forward(n, center, after))


def test_cursor_round_trip_and_opacity() -> None:
    key = TimelineKey(1_776_254_400_000, 1_776_254_400_123, 42)
    token = encode_cursor(key, "forward")
    assert decode_cursor(token) == (key, "forward") and "=" not in token and "." not in token
    assert decode_cursor(encode_cursor(TimelineKey(-5, 0, 2**63 - 1), "backward")) == (
        TimelineKey(-5, 0, 2**63 - 1),
        "backward",
    )
    with pytest.raises(ValueError):
        encode_cursor(key, "sideways")


def _b64(raw: str) -> str:
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "token",
    [
        "", "garbage!", "a", "====", "x" * 200, "é",
        _b64("1.2.3"), _b64("1.2.3.4.forward"), _b64("1.2.3.sideways"), _b64("a.2.3.forward"),
        _b64("+1.2.3.forward"), _b64("01.2.3.forward"), _b64("-0.2.3.forward"), _b64(" 1.2.3.forward"),
        _b64("1_0.2.3.forward"), _b64(f"{2**63}.2.3.forward"), _b64("1.2.3.forward") + "==",
        base64.urlsafe_b64encode(b"\xff\xfe.2.3.forward").decode(), _b64('{"o":1,"k":2,"s":3,"d":"forward"}'),
    ],
)  # fmt: skip
def test_decode_of_garbage_raises_cursor_error(token: str) -> None:
    with pytest.raises(CursorError) as err:
        decode_cursor(token)
    assert err.value.code == "INVALID_CURSOR" and isinstance(err.value, ValueError)


@given(st.text(max_size=60))
def test_decode_of_any_text_is_a_key_or_cursor_error(token: str) -> None:
    try:
        key, direction = decode_cursor(token)
    except CursorError:
        return
    assert encode_cursor(key, direction) == token


_TIMES = st.integers(-(10**6), 10**6)
_TIMELINE = st.lists(st.tuples(_TIMES, _TIMES), max_size=80).map(
    lambda pairs: sorted(TimelineKey(o, k, i) for i, (o, k) in enumerate(pairs))
)


@given(_TIMELINE, st.lists(st.integers(1, 12), min_size=1, max_size=20), st.sampled_from(["forward", "backward"]))
def test_paging_with_cursors_yields_every_entry_exactly_once_in_order(
    keys: list[TimelineKey], sizes: list[int], direction: str
) -> None:
    seen: list[int] = []
    cursor: str | None = None
    for step in range(len(keys) + 2):
        size = sizes[step % len(sizes)]
        got = page(keys, size, cursor, direction)
        assert len(got.indices) == min(size, len(keys) - len(seen))
        seen.extend(got.indices if direction == "forward" else reversed(got.indices))
        assert got.has_more == (len(seen) < len(keys))
        if got.next_cursor is not None:
            cursor = got.next_cursor
        if not got.has_more:
            break
    expected = list(range(len(keys)))
    assert seen == (expected if direction == "forward" else expected[::-1])
    # an exhausted walk stays exhausted and hands its cursor back
    done = page(keys, 5, cursor, direction)
    assert len(done.indices) == 0 and done.next_cursor == cursor and not done.has_more


@given(_TIMELINE, st.lists(st.tuples(_TIMES, _TIMES), max_size=20), st.integers(1, 10))
def test_paging_forward_while_entries_arrive_never_repeats_or_skips(
    keys: list[TimelineKey], late: list[tuple[int, int]], size: int
) -> None:
    timeline = list(keys)
    returned: list[TimelineKey] = []
    cursor: str | None = None
    arrivals = iter(TimelineKey(o, k, 10_000 + i) for i, (o, k) in enumerate(late))
    while True:
        got = page(timeline, size, cursor, "forward")
        returned.extend(timeline[i] for i in got.indices)
        cursor = got.next_cursor
        arrived = next(arrivals, None)
        if arrived is not None:  # one entry arrives between two pages, anywhere in the order
            timeline = sorted([*timeline, arrived])
        elif not got.has_more:
            break
    assert returned == sorted(set(returned))  # strictly increasing: no repeat, in order
    assert set(keys) <= set(returned)  # every entry present from the start is returned
    last = returned[-1] if returned else None
    # any entry missing is one that arrived behind the cursor
    assert all(last is not None and k < last for k in set(timeline) - set(returned))


def test_page_edges() -> None:
    keys = _keys(1, 2, 3, 4, 5)
    first = page(keys, 2)
    assert first.indices == range(0, 2) and first.has_more
    assert decode_cursor(first.next_cursor or "") == (keys[1], "forward")
    assert page(keys, 2, first.next_cursor).indices == range(2, 4)
    back = page(keys, 2, direction="backward")
    assert back.indices == range(3, 5) and decode_cursor(back.next_cursor or "") == (keys[3], "backward")
    assert page(keys, 2, back.next_cursor, "backward").indices == range(1, 3)
    assert page([], 3) == page([], 3, None, "backward")
    assert page([], 3).next_cursor is None and not page([], 3).has_more
    # a cursor at a key no longer in the timeline resumes strictly after / before it
    gone = encode_cursor(TimelineKey(3, 0, 99), "forward")
    assert page(keys, 10, gone).indices == range(2, 5)
    assert page(keys, 10, encode_cursor(TimelineKey(3, 0, 99), "backward"), "backward").indices == range(0, 2)
    with pytest.raises(CursorError):
        page(keys, 2, first.next_cursor, "backward")
    with pytest.raises(CursorError):
        page(keys, 2, "nonsense!")
    for bad in (0, MAX_SPAN + 1):
        with pytest.raises(ValueError):
            page(keys, bad)
    with pytest.raises(ValueError):
        page(keys, 2, None, "up")


# ---------------------------------------------------------------------------------------------- confidence


def _proof(matched: int = 3, with_evidence: int = 2, rich: int = 1, conflicts: int = 0, **kw: Any) -> ProofFacts:
    return ProofFacts(matched, with_evidence, rich, conflicts, matched - with_evidence, kw.get("superseded", False))


POLICIES = ("EVIDENCE_OR_UNKNOWN", "SHOW_CONFLICTS", "BEST_EFFORT")


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(
    ("proof", "strict", "lenient"),
    [
        (_proof(0, 0, 0, 0), "UNKNOWN", "UNKNOWN"),
        (_proof(0, 0, 5, 5), "UNKNOWN", "UNKNOWN"),
        (_proof(3, 0), "UNKNOWN", "LOW"),
        (_proof(3, 0, rich=4, conflicts=0), "UNKNOWN", "LOW"),
        (_proof(3, 2), "HIGH", "HIGH"),
        (_proof(1, 1), "HIGH", "HIGH"),
        (_proof(3, 2, conflicts=1), "MEDIUM", "MEDIUM"),
        (_proof(3, 2, rich=0), "MEDIUM", "MEDIUM"),
        (_proof(3, 2, rich=0, conflicts=2), "MEDIUM", "MEDIUM"),
        (_proof(3, 3, superseded=True), "MEDIUM", "MEDIUM"),
        (_proof(3, 0, superseded=True), "UNKNOWN", "LOW"),
    ],
)
def test_confidence_table(proof: ProofFacts, strict: str, lenient: str, policy: Any) -> None:
    assert confidence(proof, policy) == (strict if policy == "EVIDENCE_OR_UNKNOWN" else lenient)


def test_proof_facts_must_be_consistent() -> None:
    for bad in ((3, 2, 0, 0, 0, False), (1, 2, 0, 0, -1, False), (-1, 0, 0, 0, -1, False), (1, 1, -1, 0, 0, False)):
        with pytest.raises(ValueError):
            ProofFacts(*bad)
    with pytest.raises(ValueError):
        confidence(_proof(), "GUESS")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------- diagnose

ALL = frozenset({"e:1", "e:2", "e:3"})


def _answer(correct: bool = False, lost: dict[str, frozenset[str]] | None = None) -> AnswerFacts:
    """Every expected ref reaches every stage, but those ``lost`` at a stage."""
    reach = {s: ALL - (lost or {}).get(s, frozenset()) for s in ("logged", "projected", "retrieved", "proven", "used")}
    return AnswerFacts(
        ALL, reach["logged"], reach["projected"], reach["retrieved"], reach["proven"], reach["used"], correct
    )


@pytest.mark.parametrize(
    ("stage", "failure"),
    [
        ("logged", "INGESTION_GAP"),
        ("projected", "PROJECTION_GAP"),
        ("retrieved", "RETRIEVAL_GAP"),
        ("proven", "PROOF_GAP"),
        ("used", "READER_GAP"),
    ],
)
def test_each_gap_and_the_refs_lost_there(stage: str, failure: str) -> None:
    assert classify(_answer(lost={stage: frozenset({"e:2"})})) == (failure, frozenset({"e:2"}))


def test_first_gap_wins_and_the_other_classes() -> None:
    lost_late = _answer(lost={"projected": frozenset({"e:1"}), "used": frozenset({"e:2", "e:3"})})
    assert classify(lost_late) == ("PROJECTION_GAP", frozenset({"e:1"}))
    assert classify(_answer()) == ("REASONING_GAP", frozenset())
    assert classify(_answer(True, {"logged": ALL})) == ("NONE", frozenset())
    assert classify(AnswerFacts(*(frozenset(),) * 6, correct=False)) == ("REASONING_GAP", frozenset())
    # an inconsistent report: a ref never logged but retrieved is lost at ingestion; extras are ignored
    odd = replace(_answer(lost={"logged": frozenset({"e:3"})}), retrieved=ALL | {"x:9"}, used=ALL | {"x:9"})
    assert classify(odd) == ("INGESTION_GAP", frozenset({"e:3"}))
