"""The gate as a faust-streaming agent (started by ``python -m hivemem.services gate``).

Commit protocol (the one place it is written down):
1. The agent takes up to ``BATCH`` events (or what arrived within ``WITHIN`` seconds).
2. ``GateCore.process`` decides them; its claim store (Postgres) records new claims in a
   transaction before any output exists. Claims are owned by source positions.
3. Every output is sent and awaited (acks=all) before the agent moves on.
4. Only then may Faust acknowledge and, later, commit the events' offsets.
A crash anywhere before 4 re-delivers the batch: the claims already belong to the same
positions, so the same verdicts and the same outputs come out again, and projections skip
what they already folded (they key on the source position and keep their own offsets).
So correctness never rests on Faust's commit; ``concurrency=1`` keeps one batch in flight.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

import faust

from governance.gate import GateConfig, InboundRecord, Position
from processors.claim_store import PostgresClaimStore
from processors.gate_core import GateCore
from processors.key_store import PostgresKeyStore

WATCHDOG_INTERVAL = 5.0
WATCHDOG_LIMIT = 3
BATCH = 1000
WITHIN = 0.005
log = logging.getLogger("hivemem.gate")


def create_app(cfg: GateConfig, bootstrap: str, database_url: str, datadir: str) -> faust.App:
    topics = cfg.topics
    app = faust.App(
        "hivemem-gate",
        broker=f"kafka://{bootstrap}",
        web_enabled=False,
        datadir=datadir,
        producer_acks=-1,
        producer_linger_ms=1,
        consumer_auto_offset_reset="earliest",
        topic_allow_declare=False,
        topic_replication_factor=1,
        broker_commit_interval=0.5,
        stream_wait_empty=False,
    )
    inbound = app.topic(*topics.gate_inputs(), key_type=bytes, value_type=bytes,
                        key_serializer="raw", value_serializer="raw")  # fmt: skip
    core_holder: dict[str, GateCore] = {}

    def core() -> GateCore:
        if "core" not in core_holder:
            core_holder["core"] = GateCore(cfg, PostgresClaimStore(database_url), PostgresKeyStore(database_url))
        return core_holder["core"]

    @app.agent(inbound, concurrency=1)
    async def gate(stream: Any) -> None:
        async for events in stream.take_events(BATCH, within=WITHIN):
            batch = [
                InboundRecord(
                    Position(e.message.topic, e.message.partition, e.message.offset),
                    round(e.message.timestamp * 1000),
                    e.message.key,
                    e.message.value,
                )
                for e in events
            ]
            outputs = core().process(batch)
            futures = [
                await app.producer.send(o.topic, o.key, o.value, o.partition, None, list(o.headers)) for o in outputs
            ]
            await asyncio.gather(*futures)

    idle_checks = {"n": 0}

    @app.timer(interval=WATCHDOG_INTERVAL)
    async def watchdog() -> None:
        # After a broker outage aiokafka can come back with an empty subscription
        # ("Ignoring missing topic") and never recover. Exit instead; the supervisor
        # restarts the gate, which resumes from committed offsets and, by the protocol
        # above, re-emits the same outputs for anything it redoes.
        if app.consumer.assignment():
            idle_checks["n"] = 0
            return
        idle_checks["n"] += 1
        if idle_checks["n"] >= WATCHDOG_LIMIT:
            log.error("gate has had no partitions for %d checks; exiting to be restarted", idle_checks["n"])
            os._exit(75)

    return app
