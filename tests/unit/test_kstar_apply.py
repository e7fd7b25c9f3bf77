"""Judging KSTAR operations (governance/kstar/apply.py) and sync conflict policy, without a broker:
conflicts by on_conflict, immutability, sticky revocation, skills by name, ownership; and the kstar
processor run by its driver (one verdict per record, state carried between records)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from contracts.avro import encode_envelope
from contracts.kstar_records import decode_kstar
from contracts.models import KstarPayload
from contracts.topics import TopicNames
from governance.kstar.apply import Held, MemoryView, OpContext, content_hash, decide, iso
from governance.kstar.records import KstarRefusal
from governance.kstar.sync_policy import Change, resolve
from processors.kstar.core import KstarDriver
from tests.helpers import offline_client

AT = 1_795_000_000_000
TRACE = {"id": "t1", "timestamp": "2026-11-20T10:00:00.000Z", "situation": {"domain": "education.evaluation"},
         "task": {"goal": "grade"}, "action": {"type": "evaluate"}}  # fmt: skip


def ctx(claw: str = "c1") -> OpContext:
    return OpContext("t", claw, AT, lambda *_: True)


def op(kind: str, rid: str, doc: dict[str, Any], verb: str = "STORE", conflict: str = "DEFAULT",
       origin: str = "LOCAL") -> KstarPayload:  # fmt: skip
    return KstarPayload.model_validate(
        {
            "op_id": "o",
            "memory": "c1",
            "op": verb,
            "kind": kind,
            "record_id": rid,
            "document": json.dumps(doc),
            "on_conflict": conflict,
            "origin": origin,
        }
    )


def held(view: MemoryView, kind: str, doc: dict[str, Any], name: str = "") -> None:
    rid = str(doc.get("token_id") or doc["id"])
    view.hold(kind, rid, Held(doc, content_hash(doc), name))


def test_store_then_same_then_other_content() -> None:
    view = MemoryView()
    first = decide(op("trace", "t1", TRACE), view, ctx())
    assert first.change == "STORED" and first.doc is not None and first.record_time == TRACE["timestamp"]
    held(view, "trace", first.doc)
    assert decide(op("trace", "t1", TRACE), view, ctx()).change == "UNCHANGED"
    other = {**TRACE, "task": {"goal": "grade again"}}
    with pytest.raises(KstarRefusal) as exc:
        decide(op("trace", "t1", other), view, ctx())
    assert exc.value.code == "KSTAR_TRACE_IMMUTABLE"
    kept = decide(op("trace", "t1", other, conflict="KEEP"), view, ctx())
    assert kept.change == "CONFLICT" and kept.existing_hash == content_hash(first.doc)
    assert decide(op("trace", "t1", other, conflict="OVERWRITE"), view, ctx()).change == "STORED"


def test_missing_timestamps_are_the_log_time() -> None:
    out = decide(op("perception", "p1", {"id": "p1", "content": "likes maps"}), MemoryView(), ctx())
    assert out.doc is not None and out.doc["created_at"] == iso(AT) == out.doc["updated_at"]


def test_a_claw_writes_only_its_own_memories() -> None:
    with pytest.raises(KstarRefusal) as exc:
        decide(op("trace", "t1", TRACE), MemoryView(), ctx("someone-else"))
    assert exc.value.code == "KSTAR_NOT_YOUR_MEMORY"
    mine = KstarPayload(op_id="o", memory="c1/work", op="STORE", kind="trace", record_id="t1",
                        document=json.dumps(TRACE))  # fmt: skip
    assert decide(mine, MemoryView(), ctx()).change == "STORED"


def test_skill_outcomes_find_the_skill_by_name() -> None:
    view = MemoryView()
    s = decide(op("skill", "s1", {"id": "s1", "name": "grading", "definition": {"procedure": "x"}}), view, ctx())
    assert s.doc is not None
    held(view, "skill", s.doc, "grading")
    out = decide(op("skill", "grading", {"outcome": True}, verb="SKILL_OUTCOME"), view, ctx())
    assert out.record_id == "s1" and out.doc is not None and out.doc["maturity"]["usage_count"] == 1
    with pytest.raises(KstarRefusal) as exc:
        decide(op("skill", "nope", {"outcome": True}, verb="SKILL_OUTCOME"), view, ctx())
    assert exc.value.code == "SKILL_NOT_FOUND"
    with pytest.raises(KstarRefusal) as taken:
        decide(op("skill", "s2", {"id": "s2", "name": "grading", "definition": {}}), view, ctx())
    assert taken.value.code == "KSTAR_SKILL_NAME_TAKEN"


def test_a_revocation_sticks_through_an_overwrite() -> None:
    view = MemoryView()
    token = {"token_id": "k1", "type": "capability_grant", "scope": "course:A", "permissions": [], "granted_by": "u",
             "granted_at": iso(AT), "delegation_chain": [], "revoked": True, "revoked_at": iso(AT),
             "revocation_reason": "left", "signature": "", "signer_key": "", "lineage_hash": ""}  # fmt: skip
    held(view, "control_token", token)
    from governance.kstar.apply import _merge

    merged = _merge(op("control_token", "k1", {}, conflict="OVERWRITE"), {**token, "revoked": False,
                                                                           "revoked_at": None}, view.records[
        ("control_token", "k1")])  # fmt: skip
    assert merged["revoked"] is True and merged["revocation_reason"] == "left"


def test_forget_names_every_kind() -> None:
    out = decide(op("memory", "", {}, verb="FORGET"), MemoryView(), ctx())
    assert out.change == "FORGOTTEN" and {"trace", "control_token", "schema"} <= set(out.forget_kinds)


def test_sync_policy_per_kind() -> None:
    local = [Change("trace", "a", "h1"), Change("fact", "b", "h1"), Change("perception", "c", "h1"),
             Change("control_token", "d", "h1"), Change("skill", "e", "h1"), Change("trace", "same", "h")]  # fmt: skip
    remote = [Change("trace", "a", "h2"), Change("fact", "b", "h2"), Change("perception", "c", "h2"),
              Change("control_token", "d", "h2"), Change("trace", "new", "h3"),
              Change("trace", "same", "h")]  # fmt: skip
    plan = resolve(local, remote)
    assert {(c.kind, c.record_id, c.content_hash) for c in plan.pull} == {
        ("fact", "b", "h2"), ("control_token", "d", "h2"), ("trace", "new", "h3")}  # fmt: skip
    assert {(c.kind, c.record_id, c.content_hash) for c in plan.push} == {
        ("trace", "a", "h1"), ("perception", "c", "h1"), ("skill", "e", "h1")}  # fmt: skip
    assert len(plan.conflicts) == 4  # identical content on both sides is no conflict


def test_processor_driver_one_verdict_each_and_state_between_records() -> None:
    names = TopicNames()
    driver = KstarDriver(names, b"secret")
    client = offline_client("acme", "c1")

    def pipe(payload: KstarPayload, at: int) -> Any:
        outs = driver.pipe(encode_envelope(client.build("kstar", payload)), at)
        assert len(outs) == 1
        return outs[0]

    first = pipe(op("skill", "s1", {"id": "s1", "name": "g", "definition": {}}), AT)
    assert first.topic == names.kstar_events and decode_kstar(first.value).change == "STORED"
    for i in range(3):
        out = decode_kstar(pipe(op("skill", "g", {"outcome": True}, verb="SKILL_OUTCOME"), AT + i).value)
    assert json.loads(out.document)["maturity"]["usage_count"] == 3
    refused = pipe(op("perception", "p", {"id": "p", "content": "x", "confidence": 3}), AT)
    assert refused.topic == names.rejected
