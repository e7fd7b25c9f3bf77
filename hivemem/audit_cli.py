"""``hivemem audit roots`` and ``hivemem audit verify``, and the daily 03:00 UTC root job.

Roots are computed from the read model once the caml projector has folded the audit topic up
to its end, and appended to ``hivemem.caml.roots``; ``verify`` recomputes every leaf and root
from the log and compares them with the read model and the published roots.
"""

from __future__ import annotations

import threading
import time
import zlib
from datetime import UTC, datetime, timedelta

import psycopg
from confluent_kafka import Producer
from rich.console import Console

from contracts.caml_records import CamlMerkleRoot, decode_caml, encode_caml
from contracts.topics import DEFAULT_PARTITIONS
from hivemem.settings import Settings
from projections.caml.audit_roots import compute_roots, log_leaves, read_model_leaves, verify
from streams.kafka import high_watermarks, producer_config, read_topics
from streams.offsets import stored_offsets

ROOT_HOUR_UTC = 3  # seed 000 §10.2: daily at 03:00 UTC, over the previous day


def yesterday(now: datetime | None = None) -> str:
    return ((now or datetime.now(UTC)) - timedelta(days=1)).strftime("%Y-%m-%d")


def wait_audit_folded(settings: Settings, timeout_s: float = 60.0) -> None:
    """Until the caml read model has folded the audit topic up to its end as of now."""
    topic = settings.topics.caml_audit
    ends = high_watermarks(settings.require_kafka(), [topic])
    deadline = time.monotonic() + timeout_s
    with psycopg.connect(settings.require_database(), autocommit=True) as conn:
        while True:
            have = stored_offsets(conn, "caml")
            if all(have.get(tp, 0) >= end for tp, end in ends.items()):
                return
            if time.monotonic() > deadline:
                raise TimeoutError("the caml projector did not fold the audit topic in time; is it running?")
            time.sleep(0.1)


def publish_roots(settings: Settings, day: str) -> list[CamlMerkleRoot]:
    wait_audit_folded(settings)
    with psycopg.connect(settings.require_database(), autocommit=True) as conn:
        roots = compute_roots(conn, day)
    producer = Producer(producer_config(settings.require_kafka()))
    for r in roots:
        key = f"{r.scope}/{r.day}".encode()
        producer.produce(
            settings.topics.caml_roots, encode_caml(r), key, partition=zlib.crc32(key) % DEFAULT_PARTITIONS
        )
    if producer.flush(15) > 0:
        raise RuntimeError("Kafka did not acknowledge the roots")
    return roots


def run_roots(settings: Settings, day: str | None, console: Console) -> int:
    day = day or yesterday()
    roots = publish_roots(settings, day)
    if not roots:
        console.print(f"{day}: no audit entries, no roots")
    for r in roots:
        print(f"{r.day} {r.scope}: {r.size} leaves, root {r.root}")
    return 0


def run_verify(settings: Settings, day: str | None, console: Console) -> int:
    kafka = settings.require_kafka()
    with console.status("reading the audit and roots topics from the log..."):
        log = log_leaves(read_topics(kafka, [settings.topics.caml_audit]))
        published = [
            decode_caml(r.value or b"", CamlMerkleRoot) for r in read_topics(kafka, [settings.topics.caml_roots])
        ]
    days = sorted({d for _, d in log} | {r.day for r in published})
    stored: dict[tuple[str, str], list[tuple[str, bytes]]] = {}
    with psycopg.connect(settings.require_database(), autocommit=True) as conn:
        for d in days if day is None else [day]:
            stored.update(read_model_leaves(conn, d))
    report = verify(log, stored, published, [day] if day else None)
    for problem in report.problems:
        console.print(f"[red]{problem}[/red]")
    verdict = "OK" if report.ok else f"{len(report.problems)} PROBLEMS"
    print(f"audit verify: {len(report.days)} days, {report.entries} entries, {report.roots_checked} roots: {verdict}")
    return 0 if report.ok else 1


def final_root_exists(settings: Settings, day: str) -> bool:
    """A root computed after the day ended (so over all of it) is already published."""
    day_end = int(datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC).timestamp() * 1000) + 86_400_000
    with psycopg.connect(settings.require_database(), autocommit=True) as conn:
        row = conn.execute("SELECT 1 FROM caml.caml_merkle_roots WHERE day = %s::date AND computed_at >= %s LIMIT 1",
                           (day, day_end)).fetchone()  # fmt: skip
    return row is not None


def daily_roots(settings: Settings, stop: threading.Event) -> None:
    """At 03:00 UTC, publish the final roots of the previous day, unless already published."""
    done: set[str] = set()
    while not stop.wait(30):
        now = datetime.now(UTC)
        day = yesterday(now)
        if now.hour >= ROOT_HOUR_UTC and day not in done:
            try:
                if not final_root_exists(settings, day):
                    publish_roots(settings, day)
                done.add(day)
            except Exception as exc:  # retried on the next round; never takes the service down
                print(f"daily Merkle roots for {day} not published yet: {exc}")
