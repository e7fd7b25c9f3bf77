"""The clam processor: accepted ``clam`` operations in; what they did (``hivemem.clam.events``) out.
The rules are ``governance/clam/learn.py``; the perceiver and the critic are the local deterministic
ones (``governance/clam/perceiver.py``, ``critic.py``) unless the LLM back-ends are given
(``inference/clam/llm.py``); the events name the back-end, so a replay of the read model never asks a model.

Every operation gets at least one event (``NOTHING`` when it changed nothing), so each has a verdict.
Its state, per claw: the short-term buffer, the long-term nodes' terms (for Zettelkasten links) and the
knowledge graph (``clamproc.*``), read for the claws of a batch and written in the batch's
transaction. All of a claw's operations share one partition (key ``<tenant>/clam:<clawId>``), so a
claw's mind sees them in log order; the garbage collector's clock is that order's log time.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Protocol

from contracts.clam_records import ClamEvent, encode_clam
from contracts.models import ClamPayload
from contracts.topics import TopicNames, key_partition
from governance.clam.config import ClamConfig
from governance.clam.critic import critique_local
from governance.clam.learn import CriticFn, Happened, Mind, Perceiver, learn, node_wire
from governance.clam.nodes import MemoryNode
from governance.clam.perceiver import perceive_local
from governance.clam.triples import Triple
from processors.accepted import AcceptedStage, decode_accepted
from streams.driver import ProcessorDriver
from streams.offsets import Conn
from streams.records import LogRecord, OutRecord

NAME = "clam-processor"
STAGE = "clam"
_NS = uuid.UUID("3b0e5c8a-6f1d-4a2b-9c7e-21d4f8a0b5e6")
Claw = tuple[str, str]  # tenant, claw id


class MindStore(Protocol):
    def load(self, claws: Sequence[Claw]) -> dict[Claw, Mind]: ...

    def save(self, claw: Claw, before: Mind, after: Mind) -> None: ...


class InMemoryMinds:
    def __init__(self) -> None:
        self.minds: dict[Claw, Mind] = {}

    def load(self, claws: Sequence[Claw]) -> dict[Claw, Mind]:
        out = {}
        for c in claws:
            m = self.minds.get(c, Mind())
            out[c] = Mind(dict(m.stm), dict(m.ltm_terms), dict(m.graph))
        return out

    def save(self, claw: Claw, before: Mind, after: Mind) -> None:
        self.minds[claw] = Mind(dict(after.stm), dict(after.ltm_terms), dict(after.graph))


class PostgresMinds:
    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    def load(self, claws: Sequence[Claw]) -> dict[Claw, Mind]:
        out: dict[Claw, Mind] = {c: Mind() for c in claws}
        args = ([c[0] for c in claws], [c[1] for c in claws])
        join = "JOIN unnest(%s::text[], %s::text[]) AS w(tenant, claw_id) USING (tenant, claw_id)"
        for t, c, node in self.conn.execute(f"SELECT tenant, claw_id, node FROM clamproc.stm {join}", args):
            n = dict(node)  # type: ignore[call-overload]
            out[(str(t), str(c))].stm[n["concept_id"]] = MemoryNode.from_wire(n)
        for t, c, cid, terms in self.conn.execute(f"SELECT tenant, claw_id, concept_id, terms FROM clamproc.ltm {join}",
                                                  args):  # fmt: skip
            out[(str(t), str(c))].ltm_terms[str(cid)] = tuple(terms)  # type: ignore[arg-type]
        for t, c, tid, s, p, o in self.conn.execute(
            f"SELECT tenant, claw_id, triple_id, subject, predicate, object FROM clamproc.triples {join}", args
        ):
            out[(str(t), str(c))].graph[str(tid)] = Triple(str(s), str(p), str(o))
        return out

    def save(self, claw: Claw, before: Mind, after: Mind) -> None:
        t, c = claw
        gone = [cid for cid in before.stm if cid not in after.stm]
        if gone:
            self.conn.execute("DELETE FROM clamproc.stm WHERE tenant = %s AND claw_id = %s AND concept_id = ANY(%s)",
                              (t, c, gone))  # fmt: skip
        changed = [n for cid, n in after.stm.items() if before.stm.get(cid) != n]
        with self.conn.cursor() as cur:
            cur.executemany("INSERT INTO clamproc.stm (tenant, claw_id, concept_id, node) VALUES (%s, %s, %s, %s) "
                            "ON CONFLICT (tenant, claw_id, concept_id) DO UPDATE SET node = excluded.node",
                            [(t, c, n.concept_id, json.dumps(node_wire(n))) for n in changed])  # fmt: skip
            cur.executemany("INSERT INTO clamproc.ltm (tenant, claw_id, concept_id, terms) VALUES (%s, %s, %s, %s) "
                            "ON CONFLICT DO NOTHING",
                            [(t, c, cid, list(terms)) for cid, terms in after.ltm_terms.items()
                             if cid not in before.ltm_terms])  # fmt: skip
            cur.executemany("INSERT INTO clamproc.triples (tenant, claw_id, triple_id, subject, predicate, object) "
                            "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                            [(t, c, tid, x.subject, x.predicate, x.object) for tid, x in after.graph.items()
                             if tid not in before.graph])  # fmt: skip


def clam_event_id(source: str, seq: int) -> str:
    return str(uuid.uuid5(_NS, f"{source}#{seq}"))


class ClamProcessor(AcceptedStage[MindStore]):
    # State per claw (its mind), read and written per batch in Postgres; a claw's records share a partition
    # (their key), so its partitions may be split over instances (streams.group, HIVEMEM_INSTANCE).
    parallel = True
    name = NAME
    accepted = stage = STAGE

    def __init__(self, names: TopicNames, config: ClamConfig | None = None, store: MindStore | None = None,
                 perceive: Perceiver = perceive_local, critic: CriticFn = critique_local) -> None:  # fmt: skip
        self.names = names
        self.config = config or ClamConfig()
        self.store = store or InMemoryMinds()
        self.perceive, self.critic = perceive, critic

    def postgres(self, conn: Conn) -> MindStore:
        return PostgresMinds(conn)

    def process(self, records: Sequence[LogRecord], now_ms: int) -> list[OutRecord]:
        decoded = decode_accepted(records, ClamPayload, self.stage)
        claws = sorted({(env.tenant, env.claw_id) for _, env, _ in decoded})
        minds = self.store.load(claws) if claws else {}
        before = {c: Mind(dict(m.stm), dict(m.ltm_terms), dict(m.graph)) for c, m in minds.items()}
        outs: list[OutRecord] = []
        for rec, env, p in decoded:
            source = str(rec.position)
            happened = learn(p, minds[(env.tenant, env.claw_id)], rec.log_time(), self.config,
                             lambda i, source=source: str(uuid.uuid5(_NS, f"{source}/node/{i}")),  # type: ignore[misc]
                             self.perceive, self.critic)  # fmt: skip
            outs += [self._event(rec, env.tenant, env.claw_id, env.event_id, i, h) for i, h in enumerate(happened)]
        for c in claws:
            self.store.save(c, before[c], minds[c])
        return outs

    def _event(self, rec: LogRecord, tenant: str, claw_id: str, envelope_event_id: str, seq: int,
               h: Happened) -> OutRecord:  # fmt: skip
        source = str(rec.position)
        ev = ClamEvent(event_id=clam_event_id(source, seq), tenant=tenant, claw_id=claw_id, at=rec.log_time(),
                       source=source, envelope_event_id=envelope_event_id, seq=seq, kind=h.kind,  # type: ignore[arg-type]
                       concept_id=h.concept_id,
                       data=json.dumps(h.data, sort_keys=True, ensure_ascii=False))  # fmt: skip
        key = f"{tenant}/clam:{claw_id}".encode()
        return OutRecord(self.names.clam_events, key_partition(key), key, encode_clam(ev))


class ClamDriver(ProcessorDriver):
    """Run the clam processor without a broker or a database; collect its outputs."""

    processor: ClamProcessor

    def __init__(self, names: TopicNames, config: ClamConfig | None = None, perceive: Perceiver = perceive_local,
                 critic: CriticFn = critique_local) -> None:  # fmt: skip
        super().__init__(ClamProcessor(names, config, InMemoryMinds(), perceive, critic))
