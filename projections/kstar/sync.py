"""Sync of one KSTAR memory between this deployment (local, primary) and another HiveMem
(remote, secondary), seed 003 §6.4's seven steps:

1. read the local sync state (``kstarsync.state``: per memory and remote, the remote log time
   pulled up to and the local log time pushed up to);
2. the remote's changes since then (``GET /kstar/v1/changes?since=``);
3. the local changes since then (the read model's ``known_at``);
4. resolve conflicts per kind (``governance/kstar/sync_policy.py``);
5. apply the remote's winning changes here (``kstar`` operations, origin SYNC, through the gate
   and the processor like any write);
6. push the local winning changes there (``POST /kstar/v1/apply``); what fails waits in the
   retry queue (``kstarsync.pending``) and is sent again by the next sync;
7. write the new sync state.
Records whose content both sides already hold are no change, so a record pushed and then
pulled back costs one comparison, never a loop.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import psycopg

from contracts.models import Envelope, KstarPayload
from governance.kstar.apply import content_hash
from governance.kstar.sync_policy import DEFAULT_POLICY, Change, Policy, resolve
from projections.kstar.io import Writer, collect_verdicts, document, publish_all

Conn = psycopg.Connection[tuple[Any, ...]]
KINDS = ("trace", "perception", "fact", "skill", "control_token")
PAGE = 1000


@dataclass
class SyncResult:
    pulled: int = 0
    pushed: int = 0
    conflicts: list[dict[str, str]] = field(default_factory=list)
    retried: int = 0
    failed: list[dict[str, str]] = field(default_factory=list)

    def to_wire(self) -> dict[str, Any]:
        return {"pulled": self.pulled, "pushed": self.pushed, "conflicts": self.conflicts, "retried": self.retried,
                "failed": self.failed}  # fmt: skip


class Remote:
    """The other deployment's KSTAR API, over HTTP(S) with a bearer token."""

    def __init__(self, base_url: str, token: str, client: httpx.Client | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.http = client or httpx.Client(base_url=self.base_url, timeout=60,
                                           headers={"Authorization": f"Bearer {token}"})  # fmt: skip

    def changes(self, memory: str, since: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while True:
            r = self.http.get("/kstar/v1/changes", params={"memory": memory, "since": since, "limit": PAGE})
            r.raise_for_status()
            page: list[dict[str, Any]] = r.json()
            out += page
            if len(page) < PAGE:
                return out
            since = max(int(x["knownAt"]) for x in page) - 1  # records of one instant may straddle pages
            out = list({(x["kind"], x["recordId"]): x for x in out}.values())

    def apply(self, memory: str, records: list[dict[str, Any]], origin_ref: str) -> dict[str, Any]:
        r = self.http.post("/kstar/v1/apply", params={"memory": memory},
                           json={"records": records, "originRef": origin_ref})  # fmt: skip
        r.raise_for_status()
        result: dict[str, Any] = r.json()
        return result


Local = dict[tuple[str, str], tuple[dict[str, Any], str, int]]  # (kind, id) -> (doc, hash, known_at)


def _local_changes(conn: Conn, tenant: str, memory: str, since: int) -> Local:
    rows = conn.execute("SELECT kind, record_id, doc, content_hash, known_at FROM kstar.records WHERE tenant = %s "
                        "AND memory = %s AND known_at > %s AND kind = ANY(%s)",
                        (tenant, memory, since, list(KINDS))).fetchall()  # fmt: skip
    return {(str(k), str(r)): (dict(d), str(h), int(t)) for k, r, d, h, t in rows}


def sync(conn: Conn, writer: Writer, memory: str, remote: Remote, publisher: Any, local_name: str,
         policy: Mapping[str, Policy] = DEFAULT_POLICY, wait_s: float = 60.0,
         progress: Callable[[str], None] | None = None) -> SyncResult:  # fmt: skip
    say = progress or (lambda _: None)
    t, key = writer.tenant, remote.base_url
    conn.execute("SELECT set_config('hivemem.tenant', %s, false)", (t,))
    row = conn.execute("SELECT last_pulled, last_pushed FROM kstarsync.state WHERE tenant = %s AND memory = %s "
                       "AND remote = %s", (t, memory, key)).fetchone()  # fmt: skip
    last_pulled, last_pushed = (int(row[0]), int(row[1])) if row else (0, 0)  # 1
    say("reading the remote's changes")
    theirs = {(x["kind"], x["recordId"]): x for x in remote.changes(memory, last_pulled)}  # 2
    mine = _local_changes(conn, t, memory, last_pushed)  # 3
    pending = conn.execute("SELECT kind, record_id FROM kstarsync.pending WHERE tenant = %s AND memory = %s AND "
                           "remote = %s", (t, memory, key)).fetchall()  # fmt: skip
    for k, r in pending:  # the retry queue: sent again whatever their known_at
        got = conn.execute("SELECT doc, content_hash, known_at FROM kstar.records WHERE tenant = %s AND memory = %s "
                           "AND kind = %s AND record_id = %s", (t, memory, k, r)).fetchone()  # fmt: skip
        if got is not None:
            mine[(str(k), str(r))] = (dict(got[0]), str(got[1]), int(got[2]))
    plan = resolve(
        [Change(k, r, v[1]) for (k, r), v in mine.items()],
        [Change(k, r, content_hash(v["record"])) for (k, r), v in theirs.items()],
        policy,
    )  # 4
    result = SyncResult(retried=len(pending))
    result.conflicts = [{"kind": lo.kind, "recordId": lo.record_id, "winner": wins} for lo, _, wins in plan.conflicts]
    conn.commit()
    say(f"applying {len(plan.pull)} remote changes")
    envs: list[Envelope] = []
    for c in plan.pull:  # 5
        rec = theirs[(c.kind, c.record_id)]["record"]
        payload = KstarPayload(op_id=f"sync-{int(time.time() * 1000)}-{len(envs)}", memory=memory, op="STORE",
                               kind=c.kind, record_id=c.record_id, document=document(rec), on_conflict="OVERWRITE",  # type: ignore[arg-type]
                               origin="SYNC", origin_ref=key[:1024])  # fmt: skip
        envs.append(writer.envelope(payload))
    if envs:
        publish_all(publisher.publish_async, publisher.flush, envs)
        applied = collect_verdicts(conn, t, [e.event_id for e in envs], wait_s)
        result.pulled = applied.imported_count
        result.failed += [{"side": "local", **x} for x in applied.refused]
    say(f"pushing {len(plan.push)} local changes")
    records = [{"kind": c.kind, "record": mine[(c.kind, c.record_id)][0]} for c in plan.push]
    failed_keys: set[tuple[str, str]] = set()
    for i in range(0, len(records), PAGE):  # 6
        chunk = records[i : i + PAGE]
        try:
            answer = remote.apply(memory, chunk, local_name)
            result.pushed += int(answer.get("importedCount", 0))
            for x in answer.get("refused", []):
                result.failed.append({"side": "remote", **{k: str(v) for k, v in x.items()}})
        except httpx.HTTPError as exc:
            failed_keys |= {(str(x["kind"]), _rid(x)) for x in chunk}
            result.failed.append({"side": "remote", "reasonCode": "SYNC_PUSH_FAILED", "detail": str(exc)[:300]})
    with conn.transaction():  # 7
        sent = [c for c in plan.push if (c.kind, c.record_id) not in failed_keys]
        conn.execute("DELETE FROM kstarsync.pending p USING unnest(%s::text[], %s::text[]) AS s(kind, record_id) "
                     "WHERE p.tenant = %s AND p.memory = %s AND p.remote = %s AND p.kind = s.kind "
                     "AND p.record_id = s.record_id", ([c.kind for c in sent], [c.record_id for c in sent],
                                                       t, memory, key))  # fmt: skip
        for k, r in failed_keys:
            conn.execute("INSERT INTO kstarsync.pending (tenant, memory, remote, kind, record_id, attempts, "
                         "last_error) VALUES (%s, %s, %s, %s, %s, 1, %s) "
                         "ON CONFLICT (tenant, memory, remote, kind, record_id) DO UPDATE SET "
                         "attempts = kstarsync.pending.attempts + 1, last_error = excluded.last_error",
                         (t, memory, key, k, r, result.failed[-1]["detail"] if result.failed else ""))  # fmt: skip
        pulled_to = max([last_pulled, *(int(x["knownAt"]) for x in theirs.values())])
        pushed_to = max([last_pushed, *(v[2] for v in mine.values())])
        conn.execute(
            "INSERT INTO kstarsync.state (tenant, memory, remote, last_pulled, last_pushed, last_sync_at, last_result) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s::jsonb) ON CONFLICT (tenant, memory, remote) DO UPDATE SET "
            "last_pulled = excluded.last_pulled, last_pushed = excluded.last_pushed, "
            "last_sync_at = excluded.last_sync_at, last_result = excluded.last_result",
            (t, memory, key, pulled_to, pushed_to, int(time.time() * 1000), json.dumps(result.to_wire())),
        )  # fmt: skip
    return result


def _rid(x: Mapping[str, Any]) -> str:
    rec = x["record"]
    return str(rec["token_id"] if x["kind"] == "control_token" else rec["id"])
