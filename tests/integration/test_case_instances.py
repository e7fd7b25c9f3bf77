"""The kmp, kstar and clam processors split over two instances each (Kafka's consumer group), one instance of
each SIGKILLed mid-stream and brought back.

Their state is per aggregate (a case, a KSTAR memory, a claw's mind), read and written per batch in Postgres,
and an aggregate's records share a partition: an instance that takes a partition over reads the state its
previous owner committed. Then: every input has exactly one verdict (an outcome or a refusal), each output is
sent once, both instances of each processor did part of the work, and the kmp, kstar and clam read models equal
a clean replay of the log.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hivemem.services import projections
from hivemem.stack import Stack
from projections.replay import rebuild
from streams.kafka import read_topics
from streams.records import OUT_HEADER
from tests.conftest import wait_until
from tests.integration.split_support import assigned, sender, split_stack, spread_tag, wait_split
from tests.integration.support import client, count

pytestmark = pytest.mark.integration

TENANT = "split-a"
N = 450  # envelopes: a third each to kmp, kstar and clam
T0 = 1_767_225_600_000
PROCESSORS = {"kmp": "kmp-processor", "kstar": "kstar-processor", "clam": "clam-processor"}
SERVICE = {"kmp": "kmp", "kstar": "kstar", "clam": "kstar"}  # the kstar service runs the clam processor too
READ_MODELS = ("audit", "kmp", "kstar", "clam")
WRITERS = 12  # claws: each writes its own KSTAR memory and has its own CLAM mind


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    services: dict[str, tuple[list[str], str | None]] = {
        "gate": (["gate"], None), "kmp-0": (["kmp"], "0"), "kmp-1": (["kmp"], "1"), "kstar-0": (["kstar"], "0"),
        "kstar-1": (["kstar"], "1"), "projectors": (["projectors", *READ_MODELS], None)}  # fmt: skip
    with split_stack(Path(tmp_path_factory.mktemp("hm-case-split")), (TENANT,), services) as st:
        yield st


def _plan(tag: str) -> list[tuple[int, str, dict[str, Any]]]:
    """(writer, type, payload): kmp ingests in 12 cases (each a chain: an entry follows the case's previous
    one, one writer per case), kstar perceptions in the writers' own memories, clam perceptions from them,
    interleaved."""
    plan: list[tuple[int, str, dict[str, Any]]] = []
    for i in range(N // 3):
        about, prev = f"case-{tag}-{i % 12}", f"e{i - 12}" if i >= 12 else None
        plan.append((i % WRITERS, "kmp_ingest", {
            "ingestId": f"in-{i}", "about": about, "contextRefs": [prev] if prev else [],
            "entries": [{"id": f"e{i}", "kind": "action", "text": f"step {i} of {about}", "occurredAt": T0 + i}],
            "relations": [{"sourceRef": f"e{i}", "targetRef": prev, "rel": "follows",
                           "semanticClass": "PROCEDURAL"}] if prev else []}))  # fmt: skip
        plan.append((i % WRITERS, "kstar", {"opId": f"o{i}", "memory": f"split-{tag}-{i % WRITERS}", "op": "STORE",
                                      "kind": "perception", "recordId": f"p{i}",
                                      "document": json.dumps({"id": f"p{i}", "content": f"seen {i}",
                                                              "confidence": 0.8})}))  # fmt: skip
        prompt = f"The server IP is 10.0.0.{i % 7}."
        plan.append((i % WRITERS, "clam", {"opId": f"c{i}", "op": "PERCEIVE", "prompt": prompt, "response": "Noted."}))
    return plan


def _outputs(stack: Stack) -> dict[str, list[Any]]:
    names = stack.settings.topics
    topics = {"kmp": names.kmp_events, "kstar": names.kstar_events, "clam": names.clam_events}
    got = read_topics(stack.settings.require_kafka(), list(topics.values()))
    return {p: [r for r in got if r.topic == t] for p, t in topics.items()}


def _idle(stack: Stack) -> list[str]:
    """Instances that have sent no output yet."""
    out = _outputs(stack)
    return [f"{PROCESSORS[p]}@{i}" for p in PROCESSORS for i in (0, 1)
            if f"{PROCESSORS[p]}@{i}" not in {sender(r) for r in out[p]}]  # fmt: skip


def test_kmp_kstar_and_clam_split_over_instances_and_survive_a_sigkill(split: Stack) -> None:
    s = split.settings
    for p, name in PROCESSORS.items():
        wait_until(lambda p=p, name=name: all(assigned(split, f"{SERVICE[p]}-{i}", f"{name}@{i}") for i in (0, 1)),
                   timeout=120, interval=0.5, what=f"both {p} instances assigned partitions")  # fmt: skip
    # Each processor's keys (a case, a writer's memory, a writer's mind) reach every partition of its input.
    tag = spread_tag(lambda t: [[f"{TENANT}/about:case-{t}-{k}".encode() for k in range(12)],
                                [f"{TENANT}/kstar:split-{t}-{w}".encode() for w in range(WRITERS)],
                                [f"{TENANT}/clam:split-{t}-{w}".encode() for w in range(WRITERS)]])  # fmt: skip
    writers = [client(split, f"split-{tag}-{i}", tenant=TENANT) for i in range(WRITERS)]
    plan = _plan(tag)
    killed = threading.Event()

    def kill_and_restart() -> None:
        for svc in ("kmp-1", "kstar-1"):
            split.services[svc].kill()  # SIGKILL, mid-stream
        killed.set()
        # Instance 0 of each alone, once instance 1's session times out (6 s): every partition.
        wait_until(lambda: all(len(assigned(split, f"{SERVICE[p]}-0", f"{name}@0")) == 3
                               for p, name in PROCESSORS.items()), timeout=60, interval=0.5,
                   what="instance 0 holding every partition")  # fmt: skip
        for svc in ("kmp-1", "kstar-1"):
            split.services[svc].start()

    killer = threading.Thread(target=kill_and_restart, daemon=True)
    for i, (w, kind, payload) in enumerate(plan):
        writers[w].publish_envelope_async(writers[w].build(kind, payload, trace_id=f"split-{tag}"),
                                          lambda tok, err: None)  # fmt: skip
        if i == len(plan) // 3:
            for x in writers:
                assert x.flush(60) == 0
            # Both instances of each at work before one dies: each has sent outputs of some of these inputs.
            wait_split(split, lambda: not _idle(split), "both instances of each processor at work",
                       detail=lambda: f"idle: {_idle(split)}")  # fmt: skip
            killer.start()
            assert killed.wait(10)
        if i % 30 == 0:
            time.sleep(0.05)
    for x in writers:
        assert x.flush(120) == 0
    killer.join(90)
    assert all(split.services[svc].alive() for svc in ("kmp-0", "kmp-1", "kstar-0", "kstar-1"))

    per = N // 3
    refused = "SELECT count(*) FROM audit.events WHERE tenant = %s AND trace_id = %s AND outcome = 'REJECTED'"
    judged = {
        "kmp": ("SELECT count(*) FROM kmp.kmp_ingests WHERE tenant = %s AND about LIKE %s", f"case-{tag}-%"),
        "kstar": ("SELECT count(*) FROM kstar.history WHERE tenant = %s AND memory LIKE %s", f"split-{tag}-%"),
        "clam": ("SELECT count(DISTINCT envelope_event_id) FROM clam.activity WHERE tenant = %s AND claw_id LIKE %s",
                 f"split-{tag}-%"),
    }  # fmt: skip
    for p, (sql, like) in judged.items():
        try:
            wait_until(lambda sql=sql, like=like: count(split, sql, TENANT, like) >= per, timeout=180, interval=1,
                       what=f"every {p} input judged")  # fmt: skip
        except AssertionError as e:
            raise AssertionError(f"{e}: {_report(split, judged, tag)}") from None
    time.sleep(2)
    assert {p: count(split, sql, TENANT, like) for p, (sql, like) in judged.items()} == dict.fromkeys(judged, per)
    assert count(split, refused, TENANT, f"split-{tag}") == 0

    for p, records in _outputs(split).items():
        ids = Counter(r.header(OUT_HEADER) for r in records)
        assert None not in ids and max(ids.values()) == 1, p  # each output sent once
        assert set(Counter(sender(r) for r in records)) == {f"{PROCESSORS[p]}@0", f"{PROCESSORS[p]}@1"}, p

    models = projections(s)
    for name in READ_MODELS:
        result = rebuild(models[name], s.require_kafka(), s.require_database(), s.topics)
        assert result.equal and result.records > 0, result.describe()


def _report(stack: Stack, judged: dict[str, tuple[str, str]], tag: str) -> str:
    """What a stalled split needs to be understood: verdicts so far, refusals by code, failures, progress."""
    from tests.integration.support import owner_db

    with owner_db(stack) as conn:
        lines = [f"{p}: {count(stack, sql, TENANT, like)}" for p, (sql, like) in judged.items()]
        lines += [f"refused {r}" for r in conn.execute(
            "SELECT stage, reason_code, count(*) FROM audit.events WHERE tenant = %s AND trace_id = %s AND outcome = "
            "'REJECTED' GROUP BY 1, 2", (TENANT, f"split-{tag}"))]  # fmt: skip
        lines += [f"failure {r}" for r in conn.execute(
            "SELECT processor, left(error, 200) FROM hivemem.processing_failures LIMIT 5")]  # fmt: skip
        lines += [f"progress {r}" for r in conn.execute("SELECT processor, state, lag FROM hivemem.processor_progress")]
    return "; ".join(lines)
