"""``ClawClient``: what a claw uses to write to HiveMem.

Envelopes are validated by the Pydantic models, signed with the claw's deployment key
(HMAC-SHA256) or, once registered, its Ed25519 key, and published with an idempotent
producer (``enable.idempotence``, ``acks=all``), keyed by tenant plus aggregate. Every
publish returns a consistency token: the ``LogPosition`` (``topic:partition:offset``) of the record.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, Message, Producer

from contracts.avro import encode_envelope
from contracts.models import Envelope, ObservationPayload, PresencePayload, WireModel
from contracts.positions import LogPosition
from contracts.topics import TopicNames, partition_key
from governance.signing import Ed25519Signer, HmacSigner, Signer
from producers.caml_client import CamlClient, Hit
from producers.envelopes import build_envelope
from producers.memory_client import MemoryClient


class PublishError(RuntimeError):
    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code


# Where a write landed; a read given it (``consistency=``) waits until projections have caught up.
# The name predates the one log-position type and stays as an alias.
ConsistencyToken = LogPosition


def producer_config(bootstrap: str, **extra: Any) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "linger.ms": 2,
        # Broker outages surface through delivery reports; librdkafka's own log would repeat them.
        "log_level": 2,
        **extra,
        # Last, so no caller's extra settings can give them up: no loss, no duplicates on retry.
        "enable.idempotence": True,
        "acks": "all",
    }


class EnvelopePublisher:
    """Sends signed envelopes to their inbound topic, keyed tenant/aggregate, and reports
    where each landed. Shared by claws (``ClawClient``) and the HTTP write gateway."""

    def __init__(self, producer: Producer, topics: TopicNames) -> None:
        self._producer = producer
        self.topics = topics

    def publish_async(self, env: Envelope, on_done: Callable[[LogPosition | None, str | None], None]) -> None:
        def report(err: KafkaError | None, msg: Message) -> None:
            if err is not None:
                on_done(None, str(err))
            else:
                on_done(LogPosition(str(msg.topic()), int(msg.partition() or 0), int(msg.offset() or 0)), None)

        self.produce_raw(self.topics.inbound(env.type), partition_key(env.tenant, env.aggregate),
                         encode_envelope(env), report)  # fmt: skip

    def produce_raw(self, topic: str, key: bytes | None, value: bytes | None,
                    on_delivery: Callable[[KafkaError | None, Message], None] | None = None) -> None:  # fmt: skip
        """Low-level send (tests use it for hand-made records); retries a full local queue."""
        while True:
            try:
                self._producer.produce(topic, value=value, key=key, on_delivery=on_delivery)
                break
            except BufferError:
                self._producer.poll(0.05)
        self._producer.poll(0)

    def publish(self, env: Envelope, timeout: float = 30.0) -> LogPosition:
        result: list[LogPosition | str] = []
        self.publish_async(env, lambda tok, err: result.append(tok if tok else str(err)))
        deadline = time.monotonic() + timeout
        while not result and time.monotonic() < deadline:
            self._producer.poll(0.05)
        if not result:
            raise PublishError("PUBLISH_TIMEOUT", f"no delivery report within {timeout} s")
        if isinstance(result[0], str):
            raise PublishError("PUBLISH_FAILED", result[0])
        return result[0]

    def flush(self, timeout: float = 30.0) -> int:
        return int(self._producer.flush(timeout))


class ClawClient:
    def __init__(
        self,
        bootstrap: str,
        tenant: str,
        claw_id: str,
        deployment_key: bytes,
        key_id: str,
        instance_id: str | None = None,
        topics: TopicNames | None = None,
        producer: Producer | None = None,
        api_url: str | None = None,
        api_token: str | None = None,
    ) -> None:
        self.tenant = tenant
        self.claw_id = claw_id
        self.instance_id = instance_id or f"{claw_id}-{uuid.uuid4().hex[:8]}"
        self.signer: Signer = HmacSigner(key_id, deployment_key)
        self._deployment = self.signer
        self.topics = topics or TopicNames()
        self._publisher = EnvelopePublisher(producer or Producer(producer_config(bootstrap)), self.topics)
        # Reads (CAML recall) go through the API; writes go straight to Kafka.
        self.caml = CamlClient(api_url, api_token) if api_url and api_token else None
        self._api = (api_url, api_token)

    def build(
        self,
        envelope_type: str,
        payload: WireModel | dict[str, Any],
        *,
        idempotency_key: str | None = None,
        trace_id: str | None = None,
        timestamp_ms: int | None = None,
        signer: Signer | None = None,
    ) -> Envelope:
        """A validated envelope signed with ``signer`` (default: the current key); raises
        pydantic.ValidationError on bad input (see ``producers.envelopes.build_envelope``)."""
        return build_envelope(
            envelope_type,
            payload,
            tenant=self.tenant,
            claw_id=self.claw_id,
            instance_id=self.instance_id,
            signer=signer or self.signer,
            idempotency_key=idempotency_key,
            trace_id=trace_id,
            timestamp_ms=timestamp_ms,
        )

    @property
    def key_id(self) -> str:
        return self.signer.key_id

    def register_key(self, new: Ed25519Signer, **kw: Any) -> LogPosition:
        """Register ``new`` for this claw, signed by the current key (a rotation if that is
        an Ed25519 key). Keep signing with the current key until the gate has taken the
        registration (e.g. the key shows in ``GET /api/v1/claws/{id}/keys?consistency=``),
        then ``use_key(new)``."""
        replaces = self.signer.key_id if isinstance(self.signer, Ed25519Signer) else None
        payload = {"action": "REGISTER", "keyId": new.key_id, "publicKey": new.public_key,
                   "proof": new.proof(self.tenant, self.claw_id), "replaces": replaces}  # fmt: skip
        return self.publish("identity", payload, **kw)

    def use_key(self, signer: Signer) -> None:
        self.signer = signer

    def revoke_key(self, key_id: str, **kw: Any) -> LogPosition:
        """Revoke one of this claw's Ed25519 keys, signed with the deployment key (the operator's
        word stands even when the claw's own key is compromised)."""
        if self.signer.key_id == key_id:
            self.signer = self._deployment
        return self.publish("identity", {"action": "REVOKE", "keyId": key_id}, signer=self._deployment, **kw)

    def publish_envelope_async(self, env: Envelope, on_done: Callable[[LogPosition | None, str | None], None]) -> None:
        self._publisher.publish_async(env, on_done)

    def publish_envelope(self, env: Envelope, timeout: float = 30.0) -> LogPosition:
        return self._publisher.publish(env, timeout)

    def produce_raw(self, topic: str, key: bytes | None, value: bytes | None,
                    on_delivery: Callable[[KafkaError | None, Message], None] | None = None) -> None:  # fmt: skip
        self._publisher.produce_raw(topic, key, value, on_delivery)

    def publish(self, envelope_type: str, payload: WireModel | dict[str, Any], **kw: Any) -> LogPosition:
        return self.publish_envelope(self.build(envelope_type, payload, **kw))

    def heartbeat(self, status: str = "ACTIVE", healthy: bool = True, ttl_seconds: int = 30) -> LogPosition:
        payload = PresencePayload(status=status, healthy=healthy, ttl_seconds=ttl_seconds)  # type: ignore[arg-type]
        return self.publish("presence", payload)

    def flush(self, timeout: float = 30.0) -> int:
        return self._publisher.flush(timeout)

    # --- collective memory (CAML) ------------------------------------------------------------
    def observe(self, observation_type: str, domain: str, summary: str, *, pattern: dict[str, Any] | None = None,
                evidence: list[str] | None = None, confidence: float = 0.5,
                observation_id: str | None = None) -> LogPosition:  # fmt: skip
        """Share an observation (fire and forget: the caml processor's verdict lands in the CAML
        audit; ``CamlClient.observe`` waits for it over HTTP instead)."""
        payload = ObservationPayload(observation_id=observation_id or f"obs-{uuid.uuid4()}",
                                     observation_type=observation_type,  # type: ignore[arg-type]
                                     domain=domain,  # type: ignore[arg-type]
                                     summary=summary, pattern=json.dumps(pattern or {}, sort_keys=True),
                                     evidence=list(evidence or []), confidence=confidence)  # fmt: skip
        return self.publish("observation", payload)

    def validate(self, observation_id: str, outcome: str, note: str | None = None) -> LogPosition:
        """Report CONFIRMED, REFUTED or INCONCLUSIVE for a recalled observation (fire and forget)."""
        return self.publish("validation", {"observationId": observation_id, "verdict": outcome, "note": note})

    def memory(self, user_id: str = "", thread_id: str | None = None) -> MemoryClient:
        """This claw's long-term memory (KMMS), or one of its users' (needs ``api_url`` and ``api_token``)."""
        url, token = self._api
        if not url or not token:
            raise RuntimeError("memory reads and writes go through the API: give ClawClient api_url= and api_token=")
        return MemoryClient(url, token, user_id=user_id, thread_id=thread_id)

    def recall(self, query: str, k: int = 5, **kw: Any) -> list[Hit]:
        """Ranked observations of every operator (needs ``api_url`` and ``api_token``)."""
        if self.caml is None:
            raise RuntimeError("recall reads through the API: give ClawClient api_url= and api_token=")
        return self.caml.recall(query, k, **kw)
