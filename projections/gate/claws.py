"""Claws read model: registry (first/last seen), presence, announced capabilities, and the
Ed25519 keys each claw registered (with rotation and revocation times, never deleted)."""

from __future__ import annotations

import psycopg

from contracts.avro import decode_envelope
from contracts.models import CapabilitiesPayload, IdentityPayload, PresencePayload
from contracts.topics import TopicNames
from projections.read_models import DigestTable, Table, schema_ddl, tenant_table
from streams.records import LogRecord

_TABLES = (
    Table("claws", (
        ("tenant", "text NOT NULL"), ("claw_id", "text NOT NULL"), ("instance_id", "text NOT NULL"), ("status", "text"),
        ("healthy", "boolean"), ("ttl_seconds", "int"), ("agent_version", "text"),
        ("capabilities", "text[] NOT NULL DEFAULT '{}'"), ("first_seen", "bigint NOT NULL"), ("last_seen", "bigint"),
        ("capabilities_at", "bigint"),
    ), ("tenant", "claw_id")),
    Table("keys", (
        ("tenant", "text NOT NULL"), ("claw_id", "text NOT NULL"), ("key_id", "text NOT NULL"), ("public_key", "bytea"),
        ("replaces", "text"), ("registered_at", "bigint"), ("revoked_at", "bigint"),
    ), ("tenant", "claw_id", "key_id")),
)  # fmt: skip
_BY_NAME = {t.name: t for t in _TABLES}


class ClawsProjection:
    name: str = "claws"
    tables: tuple[DigestTable, ...] = tuple(t.digest() for t in _TABLES)

    def topics(self, names: TopicNames) -> list[str]:
        return [names.accepted("presence"), names.accepted("capabilities"), names.accepted("identity")]

    def ddl(self, schema: str) -> list[str]:
        return [
            *schema_ddl(schema),
            _BY_NAME["claws"].create(schema),
            f"CREATE INDEX claws_capabilities ON {schema}.claws USING gin (capabilities)",
            *tenant_table(schema, "claws"),
            *self.keys_ddl(schema),
        ]

    @staticmethod
    def keys_ddl(schema: str) -> list[str]:
        # Idempotent: migration 5 adds it to databases made before keys existed.
        return [
            _BY_NAME["keys"].create(schema, if_not_exists=True),
            f"DROP POLICY IF EXISTS tenant_isolation ON {schema}.keys",
            *tenant_table(schema, "keys"),
        ]

    def fold(self, cur: psycopg.Cursor[tuple[object, ...]], schema: str, records: list[LogRecord]) -> None:
        presence: list[tuple[object, ...]] = []
        capabilities: list[tuple[object, ...]] = []
        keys: list[tuple[object, ...]] = []
        for rec in records:
            assert rec.value is not None
            env = decode_envelope(rec.value)
            t = rec.log_time()
            if isinstance(env.payload, PresencePayload):
                p = env.payload
                presence.append((env.tenant, env.claw_id, env.instance_id, p.status, p.healthy,
                                 p.ttl_seconds, p.agent_version, t))  # fmt: skip
            elif isinstance(env.payload, CapabilitiesPayload):
                caps = sorted(set(env.payload.capabilities))
                capabilities.append((env.tenant, env.claw_id, env.instance_id, caps, t))
            elif isinstance(env.payload, IdentityPayload):
                k = env.payload
                registered = t if k.action == "REGISTER" else None
                revoked = t if k.action == "REVOKE" else None
                keys.append((env.tenant, env.claw_id, k.key_id, k.public_key or None, k.replaces, registered, revoked))
        if keys:
            # The gate has already refused conflicting registrations; the first time wins.
            cur.executemany(
                f"""INSERT INTO {schema}.keys AS k (tenant, claw_id, key_id, public_key, replaces, registered_at,
                        revoked_at) VALUES (%s, %s, %s, %s, %s, %s, %s)
                    ON CONFLICT (tenant, claw_id, key_id) DO UPDATE SET
                        public_key = coalesce(k.public_key, excluded.public_key),
                        replaces = coalesce(k.replaces, excluded.replaces),
                        registered_at = coalesce(k.registered_at, excluded.registered_at),
                        revoked_at = coalesce(k.revoked_at, excluded.revoked_at)""",
                keys,
            )
        if presence:
            cur.executemany(
                f"""INSERT INTO {schema}.claws AS c (tenant, claw_id, instance_id, status, healthy,
                        ttl_seconds, agent_version, first_seen, last_seen)
                    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)
                    ON CONFLICT (tenant, claw_id) DO UPDATE SET
                        instance_id = excluded.instance_id, status = excluded.status,
                        healthy = excluded.healthy, ttl_seconds = excluded.ttl_seconds,
                        agent_version = excluded.agent_version, last_seen = excluded.last_seen,
                        first_seen = LEAST(c.first_seen, excluded.first_seen)
                    WHERE c.last_seen IS NULL OR c.last_seen <= excluded.last_seen""",
                [(*row, row[-1]) for row in presence],
            )
        if capabilities:
            cur.executemany(
                f"""INSERT INTO {schema}.claws AS c (tenant, claw_id, instance_id, capabilities,
                        capabilities_at, first_seen)
                    VALUES (%s, %s, %s, %s, %s, %s)
                    ON CONFLICT (tenant, claw_id) DO UPDATE SET
                        capabilities = excluded.capabilities, capabilities_at = excluded.capabilities_at,
                        first_seen = LEAST(c.first_seen, excluded.first_seen)
                    WHERE c.capabilities_at IS NULL OR c.capabilities_at <= excluded.capabilities_at""",
                [(*row, row[-1]) for row in capabilities],
            )
