"""The kmp processor on the in-memory driver: one verdict per ingest — INGESTED with every relation
graded (rich, anemic, structural, suspect), or refused whole with a reason code; a replay gives the
same bytes."""

from __future__ import annotations

from typing import Any

from contracts.avro import decode_rejection, encode_envelope
from contracts.kmp_records import decode_kmp
from contracts.topics import TopicNames
from processors.kmp.core import KmpDriver
from tests.helpers import offline_client
from tests.kmp_story import story

NAMES = TopicNames()
T0 = 1_767_225_600_000


def envelope(payload: dict[str, Any], claw: str = "claw-1", tenant: str = "acme") -> bytes:
    return encode_envelope(offline_client(tenant, claw).build("kmp_ingest", payload))


def verdict(outs: list) -> str:  # type: ignore[type-arg]
    (o,) = outs
    return "INGESTED" if o.topic == NAMES.kmp_events else decode_rejection(o.value).reason_code


def test_the_incident_story_is_ingested_and_graded() -> None:
    d = KmpDriver(NAMES)
    grades = []
    for i, (writer, p) in enumerate(story("inc-1", T0)):
        (out,) = d.pipe(envelope(p, claw=writer), T0 + 100_000 + i)
        ev = decode_kmp(out.value)
        assert (ev.about, ev.at, ev.claw_id, out.key) == ("inc-1", T0 + 100_000 + i, writer, b"acme/about:inc-1")
        grades.append([g.quality for g in ev.grades])
    assert grades == [["STRUCTURAL", "RICH", "STRUCTURAL"], ["RICH", "ANEMIC"], ["RICH", "ANEMIC"],
                      ["RICH", "RICH", "RICH", "RICH", "SUSPECT"]]  # fmt: skip
    ev = decode_kmp(d.pipe(envelope({"ingestId": "x", "about": "inc-1", "contextRefs": ["obj", "nope"],
                                     "entries": [{"id": "n1", "kind": "note", "text": "t", "occurredAt": T0}]}),
                           T0 + 200_000)[0].value)  # fmt: skip
    assert ev.context_seen == 1  # 'nope' was never written


def _one(d: KmpDriver, payload: dict[str, Any]) -> str:
    return verdict(d.pipe(envelope(payload), T0))


def test_malformed_ingests_are_refused_whole_with_a_reason() -> None:
    d = KmpDriver(NAMES)
    base = {"about": "inc-2"}
    e = {"id": "a", "kind": "note", "text": "A", "occurredAt": T0}
    assert _one(d, {**base, "ingestId": "0"}) == "EMPTY_INGEST"
    assert _one(d, {**base, "ingestId": "1", "entries": [e, e]}) == "DUPLICATE_REF"
    assert _one(d, {**base, "ingestId": "2", "entries": [{**e, "coordinates": [{"dimension": "s:9"}]}]}) == (
        "UNKNOWN_DIMENSION")  # fmt: skip
    assert _one(d, {**base, "ingestId": "3", "entries": [{**e, "validFrom": 5, "validUntil": 4}]}) == "INVALID_VALIDITY"
    assert _one(d, {**base, "ingestId": "4", "evidence": [{"id": "v", "text": "x", "supports": ["zz"]}]}) == (
        "UNKNOWN_REF")  # fmt: skip
    rel = {"sourceRef": "a", "targetRef": "ghost", "rel": "depends_on", "semanticClass": "CAUSAL"}
    assert _one(d, {**base, "ingestId": "5", "entries": [e], "relations": [rel]}) == "REJECTED_RELATION"
    assert _one(d, {**base, "ingestId": "6", "entries": [e], "relations": [{**rel, "targetRef": "other#a"}]}) == (
        "REJECTED_RELATION")  # fmt: skip
    assert _one(d, {**base, "ingestId": "7", "entries": [e], "relations": [{**rel, "rel": "vibes"}]}) == (
        "REJECTED_RELATION")  # fmt: skip
    # None of the refused ones left a trace: 'a' is still free, then taken.
    assert _one(d, {**base, "ingestId": "8", "entries": [e]}) == "INGESTED"
    assert _one(d, {**base, "ingestId": "9", "entries": [e]}) == "DUPLICATE_REF"
    assert _one(d, {**base, "ingestId": "8", "entries": [{**e, "id": "b"}]}) == "DUPLICATE_INGEST"


def test_abouts_are_namespaces_and_a_replay_gives_the_same_bytes() -> None:
    e = {"id": "a", "kind": "note", "text": "A", "occurredAt": T0, "coordinates": [{"dimension": "session:1"}]}
    dim = [{"id": "session:1", "kind": "session"}]
    records = [envelope({"ingestId": "i", "about": "x", "dimensions": dim, "entries": [e]}),
               envelope({"ingestId": "i", "about": "y", "dimensions": dim, "entries": [e]}),
               envelope({"ingestId": "j", "about": "y", "entries": [{**e, "id": "b"}]})]  # fmt: skip
    runs = []
    for _ in range(2):
        d = KmpDriver(NAMES)
        runs.append([o.value for i, r in enumerate(records) for o in d.pipe(r, T0 + i)])
    assert runs[0] == runs[1]
    d = KmpDriver(NAMES)
    assert [verdict(d.pipe(r, T0)) for r in records] == ["INGESTED"] * 3  # same ids, same session:1, two abouts
