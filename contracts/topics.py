"""The topic registry: which envelope types exist, who publishes them, how they are keyed."""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Literal, get_args

EnvelopeType = Literal[
    "proposal",
    "vote",
    "decision",
    "fact",
    "presence",
    "capabilities",
    "observation",
    "validation",
    "episode",
    "trace",
    "identity",
    "erasure",
    "kmp_ingest",
    "kstar",
    "clam",
]
ENVELOPE_TYPES: tuple[str, ...] = get_args(EnvelopeType)

# Claws publish these; processors publish decision and fact (and rejected).
CLAW_PUBLISHED: frozenset[str] = frozenset(
    {"proposal", "vote", "presence", "capabilities", "observation", "validation", "episode", "trace", "identity"}
    | {"erasure", "kmp_ingest", "kstar", "clam"}
)
# Seed 004, control 5: blocked when governance is disabled for the tenant.
GOVERNED_TYPES: frozenset[str] = frozenset({"proposal", "vote", "decision", "fact"})

REJECTED = "rejected"
DEFAULT_PREFIX = "hivemem."
# Every inbound, accepted and rejected topic has this many partitions, so the gate can
# write a record's verdict to the same partition number it read it from (per-key order).
DEFAULT_PARTITIONS = 3
# Accepted envelopes of these types go to their tenant's partition (``tenant_partition``), not to the partition
# they were read from: the governance processor's state (proposals, presence for the quorum, fact versions) is
# per tenant, so each instance of a split governance processor owns whole tenants (docs/deploy-kubernetes.md).
BY_TENANT: frozenset[str] = frozenset({"presence", "proposal", "vote"})
# Accepted episodes and erasures go to their memory's partition (``memory_partition``: tenant, claw and user):
# the kmms processor's state (content seen, erasure watermarks) is per memory, so each instance of a split kmms
# processor owns whole memories, and an erasure is judged after the episodes logged before it.
BY_MEMORY: frozenset[str] = frozenset({"episode", "erasure"})


@dataclass(frozen=True)
class TopicNames:
    """Topic names under a prefix (``HIVEMEM_TOPIC_PREFIX``, default ``hivemem.``)."""

    prefix: str = DEFAULT_PREFIX

    def inbound(self, envelope_type: str) -> str:
        """Where claws (and processors, for decision/fact) publish envelopes of a type."""
        return f"{self.prefix}{envelope_type}"

    def accepted(self, envelope_type: str) -> str:
        """Internal topic: envelopes of a type that passed the gate, bytes unchanged."""
        return f"{self.prefix}accepted.{envelope_type}"

    @property
    def rejected(self) -> str:
        return f"{self.prefix}{REJECTED}"

    # CAML's internal topics (contracts/caml_records.py), written by HiveMem's processors only.
    @property
    def caml_events(self) -> str:
        return f"{self.prefix}caml.events"

    @property
    def caml_status(self) -> str:
        """Deployment suspensions and reinstatements; the gate enforces them."""
        return f"{self.prefix}caml.status"

    @property
    def caml_audit(self) -> str:
        return f"{self.prefix}caml.audit"

    @property
    def caml_embeddings(self) -> str:
        return f"{self.prefix}caml.embeddings"

    @property
    def caml_roots(self) -> str:
        return f"{self.prefix}caml.roots"

    def caml_topics(self) -> list[str]:
        return [self.caml_events, self.caml_status, self.caml_audit, self.caml_embeddings, self.caml_roots]

    # KMMS's internal topics (contracts/kmms_records.py), written by HiveMem's processors only.
    @property
    def kmms_events(self) -> str:
        return f"{self.prefix}kmms.events"

    @property
    def kmms_embeddings(self) -> str:
        return f"{self.prefix}kmms.embeddings"

    def kmms_topics(self) -> list[str]:
        return [self.kmms_events, self.kmms_embeddings]

    # KMP's internal topic (contracts/kmp_records.py): graded ingests, written by the kmp processor.
    @property
    def kmp_events(self) -> str:
        return f"{self.prefix}kmp.events"

    # KSTAR's internal topic (contracts/kstar_records.py): judged operations, written by the kstar processor.
    @property
    def kstar_events(self) -> str:
        return f"{self.prefix}kstar.events"

    # CLAM's internal topic (contracts/clam_records.py): the clam processor's decisions.
    @property
    def clam_events(self) -> str:
        return f"{self.prefix}clam.events"

    def gate_inputs(self) -> list[str]:
        return [self.inbound(t) for t in ENVELOPE_TYPES if t in CLAW_PUBLISHED]

    def all_topics(self) -> list[str]:
        names = [self.inbound(t) for t in ENVELOPE_TYPES]
        names += [self.accepted(t) for t in ENVELOPE_TYPES if t in CLAW_PUBLISHED]
        names.append(self.rejected)
        return names + self.caml_topics() + self.kmms_topics() + [self.kmp_events, self.kstar_events, self.clam_events]

    def type_of(self, topic: str) -> str | None:
        """The envelope type a topic carries (inbound or accepted), or None."""
        if not topic.startswith(self.prefix):
            return None
        rest = topic[len(self.prefix) :]
        if rest.startswith("accepted."):
            rest = rest[len("accepted.") :]
        return rest if rest in ENVELOPE_TYPES else None


def tenant_partition(tenant: str, partitions: int = DEFAULT_PARTITIONS) -> int:
    """The partition of a tenant's records on a topic partitioned by tenant (``BY_TENANT``)."""
    return zlib.crc32(tenant.encode()) % partitions


def memory_partition(tenant: str, claw_id: str, user_id: str, partitions: int = DEFAULT_PARTITIONS) -> int:
    """The partition of a memory's episodes and erasures on the accepted topics (``BY_MEMORY``)."""
    return zlib.crc32(f"{tenant}/{claw_id}/{user_id}".encode()) % partitions


def key_partition(key: bytes, partitions: int = DEFAULT_PARTITIONS) -> int:
    """The partition of a record a processor writes under ``key`` (its events, audit rows and embeddings)."""
    return zlib.crc32(key) % partitions


def partition_key(tenant: str, aggregate_id: str) -> bytes:
    """Message key: tenant plus aggregate id, UTF-8 (DESIGN: external contract)."""
    return f"{tenant}/{aggregate_id}".encode()
