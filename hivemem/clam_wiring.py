"""The CLAM garbage collector's clock: every ``gc_interval_ms`` (docs/clam.md), a ``TICK`` for each claw
with nodes in its short-term buffer, published as that claw (its deployment key).

The clam processor judges time by the log, never by the wall clock: a tick is an operation on the
log whose log time is the collector's "now", so a replay reproduces every promotion and decay. This
job only decides when to put one there.
"""

from __future__ import annotations

import logging
import threading
import uuid

import psycopg

from governance.clam.config import ClamConfig
from hivemem.settings import Settings

log = logging.getLogger("hivemem.clam")


def gc_ticks(settings: Settings, stop: threading.Event) -> None:
    from confluent_kafka import Producer

    from contracts.models import ClamPayload
    from producers.claw_client import EnvelopePublisher, producer_config
    from projections.kstar.io import Writer

    interval_s = ClamConfig.from_mapping(settings.clam_config()).gc_interval_ms / 1000
    publisher = EnvelopePublisher(Producer(producer_config(settings.require_kafka())), settings.topics)
    while not stop.wait(interval_s):
        try:
            tenants = settings.load_config().tenants
            with psycopg.connect(settings.require_database(), autocommit=True) as conn:
                claws = conn.execute("SELECT DISTINCT tenant, claw_id FROM clamproc.stm").fetchall()
            for tenant, claw in claws:
                if str(tenant) not in tenants:
                    continue
                writer = Writer(str(tenant), str(claw), tenants[str(tenant)])
                tick = ClamPayload(op_id=f"tick-{uuid.uuid4().hex[:16]}", op="TICK")
                publisher.publish_async(writer.envelope(tick), lambda pos, err: None)
            publisher.flush(30)
        except Exception as exc:  # the next interval tries again; never takes the service down
            log.warning("CLAM ticks not published this round: %s", exc)
