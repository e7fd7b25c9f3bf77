"""A KMMS log for ``hivemem bench replay --model kmms``: what the KMMS processors write for a stream of chat
sessions, written straight onto ``hivemem.kmms.events`` and ``hivemem.kmms.embeddings``.

Per session, as the processors would write it: the episode (a four-turn conversation), its enrichment, a
vector per unit and per sentence of the user's rounds; every third session of a memory a summary (L3) and
its vector, and a fact (L2) that is new, reinforced, or superseded with its contradiction; now and then a
verification. Records are built from a seeded generator, so two runs write the same log.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Iterator

import numpy as np
from confluent_kafka import Producer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from bench.pipeline import produce_waiting
from contracts.kmms_records import (
    KmmsEmbedding,
    KmmsEnrichment,
    KmmsEntity,
    KmmsEpisode,
    KmmsEvent,
    KmmsNode,
    KmmsRecord,
    KmmsTurn,
    encode_kmms,
)
from contracts.positions import LogPosition
from contracts.topics import DEFAULT_PARTITIONS, key_partition
from governance.kmms.units import sentences_of, units_of
from hivemem.settings import Settings

MEMORIES = 300
MODEL = "bench-minilm"
_WORDS = (
    "project",
    "migration",
    "garden",
    "flight",
    "kitchen",
    "budget",
    "review",
    "concert",
    "doctor",
    "novel",
    "office",
    "train",
    "dinner",
    "deadline",
    "holiday",
    "bicycle",
    "invoice",
    "meeting",
    "recipe",
    "museum",
)
_NAMES = ("Ana", "John", "Priya", "Lukas", "Mei", "Omar", "Sofia", "Tom", "Berlin", "Lisbon", "DuckDB", "Acme")
_KEYS = ("employer", "city", "favourite_food", "car", "gym", "manager")


def _sentence(rng: random.Random) -> str:
    return (f"{rng.choice(_NAMES)} talked about the {rng.choice(_WORDS)} and the {rng.choice(_WORDS)} "
            f"on day {rng.randint(1, 28)}.")  # fmt: skip


class _Writer:
    """Records of one memory after another, each with its position on its topic (the vectors' cause)."""

    def __init__(self, names_events: str, names_embeddings: str) -> None:
        self.events, self.embeddings = names_events, names_embeddings
        self.next_offset = [0] * DEFAULT_PARTITIONS
        self.rng = random.Random(7)
        self.np = np.random.default_rng(7)
        self.facts: dict[tuple[int, str], str] = {}  # (memory, key) -> current node id
        self.sessions = [0] * MEMORIES

    def _vector(self, unit_id: str, who: tuple[str, str, str], cause: LogPosition, voice: str) -> KmmsEmbedding:
        v = self.np.standard_normal(384).astype(np.float32)
        v /= np.linalg.norm(v)
        return KmmsEmbedding(unit_id=unit_id, tenant=who[0], claw_id=who[1], scope=who[2], model=MODEL,
                             vector=v.tolist(), source=str(cause), voice=voice)  # fmt: skip

    def _event(self, part: int, **kw: object) -> tuple[KmmsEvent, LogPosition]:
        pos = LogPosition(self.events, part, self.next_offset[part])
        self.next_offset[part] += 1
        ev = KmmsEvent.model_validate({"event_id": f"e-{pos}", "source": f"src-{pos}", "trace_id": "bench", **kw})
        return ev, pos

    def session(self, m: int, at: int) -> Iterator[tuple[str, int, bytes, KmmsRecord]]:
        rng, who = self.rng, ("acme", f"claw-{m % 10}", f"user-{m}")
        key = f"{who[0]}/{who[1]}/{who[2]}".encode()
        part = key_partition(key)
        base = {"tenant": who[0], "claw_id": who[1], "scope": who[2], "at": at}
        s = self.sessions[m]
        self.sessions[m] += 1
        turns = []
        for i in range(4):
            role = "user" if i % 2 == 0 else "assistant"
            turns.append(KmmsTurn(role=role, content=" ".join(_sentence(rng) for _ in range(rng.randint(2, 4)))))
        content = "\n".join(f"{t.role}: {t.content}" for t in turns)
        ep = KmmsEpisode(episode_id=f"m{m}-s{s}", session_id=f"m{m}-s{s}", thread_id="", content_type="conversation",
                         occurred_at=at, content=content, content_hash=hashlib.sha256(content.encode()).hexdigest(),
                         turns=turns)  # fmt: skip
        ev, pos = self._event(part, kind="EPISODE_STORED", episode=ep, **base)
        out: list[KmmsRecord] = [ev]
        for u in units_of(ep):
            out.append(self._vector(u.unit_id, who, pos, "told" if u.text.startswith("user") else "reply"))
            if u.text.startswith("user"):
                out += [self._vector(x.unit_id, who, pos, "told") for x in sentences_of(u.unit_id, u.text)]
        names = rng.sample(_NAMES, 3)
        topics = rng.sample(_WORDS, 2)
        en = KmmsEnrichment(episode_id=ep.episode_id, entities=[KmmsEntity(name=n, kind="PERSON", score=0.9)
                                                                  for n in names],
                            topics=topics, primary_entity=names[0], primary_topic=topics[0], model="bench")  # fmt: skip
        out.append(self._event(part, kind="EPISODE_ENRICHED", enrichment=en, **base)[0])
        if s % 3 == 2:
            summary = KmmsNode(node_id=f"m{m}-l3-{s}", layer=3, entity=names[0], topic=topics[0], content=content[:300],
                               version=1, valid_from=at, event_time=at, confidence=0.8,
                               source_ids=[f"m{m}-s{s - i}" for i in range(3)], model="local")  # fmt: skip
            ev, pos = self._event(part, kind="NODE_CREATED", node=summary, **base)
            out += [ev, self._vector(summary.node_id, who, pos, "")]
            fact_key = rng.choice(_KEYS)
            old = self.facts.get((m, fact_key))
            if old is not None and rng.random() < 0.5:
                out.append(self._event(part, kind="NODE_REINFORCED", node_id=old, related_id=ep.episode_id,
                                       value=1.0, **base)[0])  # fmt: skip
            else:
                fact = KmmsNode(node_id=f"m{m}-l2-{s}", layer=2, entity="user", topic=fact_key,
                                content=f"user {fact_key} is {rng.choice(_NAMES)}", version=1, supersedes=old,
                                valid_from=at, event_time=at, fact_key=fact_key, fact_value=rng.choice(_NAMES),
                                fact_type="attribute", confidence=0.7, source_ids=[summary.node_id],
                                model="local")  # fmt: skip
                ev, pos = self._event(part, kind="NODE_CREATED", node=fact, **base)
                out += [ev, self._vector(fact.node_id, who, pos, "")]
                if old is not None:
                    out.append(self._event(part, kind="NODE_SUPERSEDED", node_id=old, related_id=fact.node_id,
                                           value=float(at), **base)[0])  # fmt: skip
                    out.append(self._event(part, kind="CONTRADICTION_LOGGED", node_id=old, related_id=fact.node_id,
                                           detail="temporal:supersede", **base)[0])  # fmt: skip
                self.facts[(m, fact_key)] = fact.node_id
            if s % 9 == 8:
                out.append(self._event(part, kind="NODE_VERIFIED", node_id=summary.node_id, **base)[0])
        for x in out:
            topic = self.events if isinstance(x, KmmsEvent) else self.embeddings
            yield topic, part, key, x


def write_kmms_log(settings: Settings, n: int, console: Console) -> int:
    """At least N KMMS records (whole sessions) on the KMMS topics; returns how many were written."""
    names = settings.topics
    writer = _Writer(names.kmms_events, names.kmms_embeddings)
    producer = Producer({"bootstrap.servers": settings.require_kafka(), "enable.idempotence": True, "acks": "all",
                         "linger.ms": 20, "batch.size": 1_000_000})  # fmt: skip
    at, written, session = int(time.time() * 1000) - 10**9, 0, 0
    with Progress(TextColumn("writing the KMMS log"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=console) as progress:  # fmt: skip
        task = progress.add_task("write", total=n)
        while written < n:
            for topic, part, key, record in writer.session(session % MEMORIES, at + session * 1000):
                produce_waiting(producer, topic, encode_kmms(record), 0.05, key=key, partition=part)
                written += 1
            session += 1
            if session % 100 == 0:
                producer.poll(0)
                progress.update(task, completed=min(written, n))
        producer.flush()
    return written
