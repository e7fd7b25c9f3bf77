"""Wiring CAML's back-ends from the environment: the embedder, the PII cascade's model stages,
and the API's publisher of recall audit entries and operator status events."""

from __future__ import annotations

import logging
import os
import zlib
from functools import cache

from confluent_kafka import Producer

from contracts.caml_records import CamlAuditEntry, CamlEvent, encode_caml
from contracts.topics import DEFAULT_PARTITIONS, TopicNames
from governance.caml.engine import Scanner
from governance.pii import PiiPolicy, PiiVerdict, scan
from inference.embedding_base import UPSTREAM_TIMEOUT, UPSTREAM_UNAVAILABLE
from inference.embeddings import Embedder, EmbeddingError, embedder_from_env
from streams.kafka import producer_config

log = logging.getLogger("hivemem.caml")
# A server's outage (refused, timeout, 5xx, 408, 429): waited out, at start-up as later.
WAITED_OUT = frozenset({UPSTREAM_UNAVAILABLE, UPSTREAM_TIMEOUT})


@cache
def embedder() -> Embedder:
    return embedder_from_env(os.environ)


def warm(e: Embedder) -> Embedder:
    """``e`` with its model loaded (the first call loads it: seconds, not milliseconds). An embeddings
    server that is down or busy is an outage, not a reason not to start: the warning is logged and
    the first use asks again (an embedder processor waits at its stored offset, a search answers 503
    ``EMBEDDINGS_UNAVAILABLE``, during a switch the old model serves). Anything else (a missing local
    model, a 4xx, a wrong dimension) is a configuration to fix, and stops the service."""
    try:
        e.embed(["warm up"])
    except EmbeddingError as exc:
        if exc.code not in WAITED_OUT:
            raise
        log.warning("%s did not answer the warm-up (%s); starting without it, the first use asks again",
                    e.model_id, exc)  # fmt: skip
    return e


def warm_embedder() -> Embedder:
    """The embedder, warmed (``warm``)."""
    return warm(embedder())


@cache
def previous_embedder() -> Embedder | None:
    """During a KMMS model switch, the model switched away from (not loaded yet); None when none is
    configured, or when it is the configured model itself."""
    from inference.embeddings import previous_embedder_from_env

    e = previous_embedder_from_env(os.environ)
    return None if e is None or e.model_id == embedder().model_id else e


def warm_previous_embedder() -> Embedder | None:
    """``previous_embedder``, warmed (``warm``)."""
    e = previous_embedder()
    return None if e is None else warm(e)


def pii_policy() -> PiiPolicy:
    """``HIVEMEM_PII_ESCALATION=always`` runs every stage on every text (strict tenants)."""
    escalation = os.environ.get("HIVEMEM_PII_ESCALATION", "cascade")
    if escalation not in ("cascade", "always"):
        raise ValueError(f"HIVEMEM_PII_ESCALATION must be cascade or always, not {escalation!r}")
    return PiiPolicy(escalation="always" if escalation == "always" else "cascade")


def pii_scanner() -> Scanner:
    """Stage 1 regex, stage 2 local NER, stage 3 the LLM at ``HIVEMEM_LLM_URL`` if set, else the
    local quasi-identifier rule."""
    from inference.ner import SpacyNer
    from inference.pii_llm import classifier_from_env

    policy, ner, classifier = pii_policy(), SpacyNer(), classifier_from_env(os.environ)
    ner.warm_up()  # load the model now, not inside the first batch

    def run(text: str) -> PiiVerdict:
        return scan(text, policy, ner, classifier)

    return run


class CamlPublisher:
    """The API's writes to CAML's internal topics: recall audit entries (fire and forget, as
    the seed's recall must not wait on its audit) and operator status events (acknowledged)."""

    def __init__(self, bootstrap: str, names: TopicNames) -> None:
        self.names = names
        self.producer = Producer(producer_config(bootstrap))

    def _send(self, topic: str, key: bytes, value: bytes) -> None:
        self.producer.produce(topic, value, key, partition=zlib.crc32(key) % DEFAULT_PARTITIONS,
                              on_delivery=_log_failure)  # fmt: skip
        self.producer.poll(0)

    def audit(self, entry: CamlAuditEntry) -> None:
        self._send(self.names.caml_audit, f"{entry.tenant}/claw:{entry.claw_id}".encode(), encode_caml(entry))

    def status(self, event: CamlEvent) -> None:
        self._send(self.names.caml_status, f"{event.tenant}/claw:{event.claw_id}".encode(), encode_caml(event))
        if self.producer.flush(10) > 0:
            raise RuntimeError("Kafka did not acknowledge the status event")


def _log_failure(err: object, _msg: object) -> None:
    if err is not None:
        log.warning("a CAML record was not delivered: %s", err)
