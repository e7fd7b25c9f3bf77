"""CAML read model (seed 000 Table 7): the collective pool and what governs it.

Tables (schema ``caml``), and who may read them through the RLS-bound application role:
- ``caml_observations``: the collective pool — every tenant reads it (sharing is the point);
  the API shows another tenant's observation without its author's tenant, claw or evidence.
- ``caml_obs_embeddings``: one vector per (observation, model); one partial HNSW index per
  model (m=16, ef_construction=64), so two models' vectors never share an index. It repeats
  the observation's filters (active, domain, expiry) so the index scan filters in place.
- ``caml_reputation``: current score per deployment — every tenant reads it (recall ranks by
  the author's score); ``caml_rep_events`` (the history with reasons), ``caml_deployments``
  (suspension) and ``caml_validations``: the tenant's own rows only.
- ``caml_audit_log``: append-only — the application role may INSERT and SELECT, never
  UPDATE or DELETE, and a trigger refuses UPDATE and DELETE for every role; each row keeps
  its Merkle leaf hash. ``caml_merkle_roots``: a tenant's own roots and the global ones.

Every fold is order-independent within its keys (counts are absolute and only grow, scores
carry a per-deployment sequence), so a replay rebuilds the same rows.
"""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg

from contracts.caml_records import CamlAuditEntry, CamlEmbedding, CamlEvent, CamlMerkleRoot, decode_caml
from contracts.topics import TopicNames
from governance.caml.merkle import canonical_json, leaf_hash
from governance.caml.taxonomy import max_age_ms
from projections.read_models import APP_ROLE, DigestTable, Table, schema_ddl, tenant_table
from projections.vectors import index_name
from streams.records import LogRecord

Cur = psycopg.Cursor[tuple[object, ...]]
DIM = 384


def audit_day(log_time_ms: int) -> str:
    return datetime.fromtimestamp(log_time_ms / 1000, UTC).strftime("%Y-%m-%d")


def audit_leaf(entry: CamlAuditEntry) -> bytes:
    """The Merkle leaf hash of an entry: SHA-256(0x00 ‖ canonical JSON of its wire form)."""
    return leaf_hash(canonical_json(entry.to_wire()))


# The entry's own columns, in CamlAuditEntry's field order: a row can be turned back into the
# entry, so a verifier recomputes each leaf from what the row says now (an edited column shows).
ENTRY_COLUMNS = ("entry_id, tenant, claw_id, operation, outcome, reason_code, request_sha256, event_id, trace_id, "
                 "source, observation_id, observation_type, domain, result_count, pii_stage, pii_stages_run, "
                 "reputation_at_write, retry_after_ms, latency_ms, at")  # fmt: skip


def entry_from_row(row: tuple[object, ...]) -> CamlAuditEntry:
    names = [c.strip() for c in ENTRY_COLUMNS.split(",")]
    return CamlAuditEntry.model_validate(dict(zip(names, row, strict=True)))


_TABLES = (
    Table("caml_observations", (
        ("observation_id", "text"), ("tenant", "text NOT NULL"), ("claw_id", "text NOT NULL"),
        ("observation_type", "text NOT NULL"), ("original_type", "text NOT NULL"), ("domain", "text NOT NULL"),
        ("summary", "text NOT NULL"), ("pattern", "text NOT NULL"), ("evidence", "text[] NOT NULL"),
        ("confidence", "double precision NOT NULL"), ("created_at", "bigint NOT NULL"),
        ("expires_at", "bigint NOT NULL"), ("validations", "int NOT NULL DEFAULT 0"),
        ("refutations", "int NOT NULL DEFAULT 0"), ("active", "boolean NOT NULL DEFAULT true"),
        ("promoted", "boolean NOT NULL DEFAULT false"), ("event_id", "text NOT NULL"), ("source", "text NOT NULL"),
    ), ("observation_id",)),
    Table("caml_obs_embeddings", (
        ("observation_id", "text NOT NULL"), ("model", "text NOT NULL"), ("embedding", f"vector({DIM}) NOT NULL"),
        ("domain", "text"), ("active", "boolean NOT NULL DEFAULT true"), ("expires_at", "bigint"),
    ), ("observation_id", "model"), digest_as=(("embedding", "embedding::text"),)),
    Table("caml_validations", (
        ("tenant", "text NOT NULL"), ("observation_id", "text NOT NULL"), ("claw_id", "text NOT NULL"),
        ("outcome", "text NOT NULL"), ("at", "bigint NOT NULL"), ("event_id", "text NOT NULL"),
    ), ("observation_id", "tenant", "claw_id")),
    Table("caml_rep_events", (
        ("tenant", "text NOT NULL"), ("claw_id", "text NOT NULL"), ("seq", "bigint NOT NULL"),
        ("reason", "text NOT NULL"), ("delta", "double precision NOT NULL"),
        ("nominal_delta", "double precision NOT NULL"), ("score", "double precision NOT NULL"),
        ("observation_id", "text"), ("at", "bigint NOT NULL"), ("event_id", "text NOT NULL"),
    ), ("tenant", "claw_id", "seq")),
    Table("caml_reputation", (
        ("tenant", "text NOT NULL"), ("claw_id", "text NOT NULL"), ("score", "double precision NOT NULL"),
        ("seq", "bigint NOT NULL"), ("at", "bigint NOT NULL"),
    ), ("tenant", "claw_id")),
    Table("caml_deployments", (
        ("tenant", "text NOT NULL"), ("claw_id", "text NOT NULL"), ("suspended", "boolean NOT NULL"),
        ("status_at", "bigint NOT NULL"), ("status_reason", "text"),
    ), ("tenant", "claw_id")),
    Table("caml_audit_log", (
        ("tenant", "text NOT NULL"), ("claw_id", "text NOT NULL"), ("entry_id", "text NOT NULL"),
        ("operation", "text NOT NULL"), ("outcome", "text NOT NULL"), ("reason_code", "text"),
        ("request_sha256", "text NOT NULL"), ("event_id", "text"), ("trace_id", "text"), ("source", "text"),
        ("observation_id", "text"), ("observation_type", "text"), ("domain", "text"), ("result_count", "int"),
        ("pii_stage", "text"), ("pii_stages_run", "text"), ("reputation_at_write", "double precision"),
        ("retry_after_ms", "bigint"), ("latency_ms", "double precision NOT NULL"), ("at", "bigint NOT NULL"),
        ("log_topic", "text NOT NULL"), ("log_partition", "int NOT NULL"), ("log_offset", "bigint NOT NULL"),
        ("log_time", "bigint NOT NULL"), ("day", "date NOT NULL"), ("leaf_hash", "bytea NOT NULL"),
    ), ("log_topic", "log_partition", "log_offset")),
    Table("caml_merkle_roots", (
        ("day", "date NOT NULL"), ("scope", "text NOT NULL"), ("size", "bigint NOT NULL"), ("root", "text NOT NULL"),
        ("computed_at", "bigint NOT NULL"),
    ), ("day", "scope", "size", "computed_at")),
)  # fmt: skip
_BY_NAME = {t.name: t for t in _TABLES}
_OBS, _AUDIT = _BY_NAME["caml_observations"].names, _BY_NAME["caml_audit_log"].names


class CamlProjection:
    name: str = "caml"
    _indexed: set[tuple[str, str]]
    tables: tuple[DigestTable, ...] = tuple(t.digest() for t in _TABLES)

    def __init__(self) -> None:
        self._indexed = set()  # (schema, model) whose HNSW index exists

    def topics(self, names: TopicNames) -> list[str]:
        return names.caml_topics()

    def ddl(self, schema: str) -> list[str]:
        s = schema
        return [
            *schema_ddl(s),
            _BY_NAME["caml_observations"].create(s),
            f"CREATE INDEX obs_recent ON {s}.caml_observations (created_at)",
            _BY_NAME["caml_obs_embeddings"].create(s),
            _BY_NAME["caml_validations"].create(s),
            _BY_NAME["caml_rep_events"].create(s),
            _BY_NAME["caml_reputation"].create(s),
            _BY_NAME["caml_deployments"].create(s),
            _BY_NAME["caml_audit_log"].create(s),
            f"CREATE INDEX audit_day ON {s}.caml_audit_log (tenant, day, log_time, log_partition, log_offset)",
            f"CREATE INDEX audit_event ON {s}.caml_audit_log (tenant, event_id)",
            _BY_NAME["caml_merkle_roots"].create(s),
            # Append-only for everyone: a trigger (the owner could otherwise still edit rows).
            f"""CREATE FUNCTION {s}.audit_append_only() RETURNS trigger LANGUAGE plpgsql AS
                $$ BEGIN RAISE EXCEPTION 'caml_audit_log is append-only'; END $$""",
            f"""CREATE TRIGGER audit_append_only BEFORE UPDATE OR DELETE ON {s}.caml_audit_log
                FOR EACH ROW EXECUTE FUNCTION {s}.audit_append_only()""",
            # The collective pool and current scores: readable by every tenant, by design.
            f"GRANT SELECT ON {s}.caml_observations, {s}.caml_obs_embeddings, {s}.caml_reputation TO {APP_ROLE}",
            *[x for t in ("caml_validations", "caml_rep_events", "caml_deployments") for x in tenant_table(s, t)],
            *tenant_table(s, "caml_audit_log"),
            f"GRANT INSERT ON {s}.caml_audit_log TO {APP_ROLE}",
            f"""CREATE POLICY tenant_insert ON {s}.caml_audit_log FOR INSERT TO {APP_ROLE}
                WITH CHECK (tenant = current_setting('hivemem.tenant', true))""",
            f"ALTER TABLE {s}.caml_merkle_roots ENABLE ROW LEVEL SECURITY",
            f"""CREATE POLICY tenant_or_global ON {s}.caml_merkle_roots FOR SELECT TO {APP_ROLE}
                USING (scope = current_setting('hivemem.tenant', true) OR scope = '_global')""",
            f"GRANT SELECT ON {s}.caml_merkle_roots TO {APP_ROLE}",
        ]

    def fold(self, cur: Cur, schema: str, records: list[LogRecord]) -> None:
        names_audit = [r for r in records if r.topic.endswith("caml.audit")]
        if names_audit:
            self._audit(cur, schema, names_audit)
        for rec in records:
            topic = rec.topic
            if topic.endswith("caml.events") or topic.endswith("caml.status"):
                self._event(cur, schema, decode_caml(rec.value or b"", CamlEvent))
            elif topic.endswith("caml.embeddings"):
                self._embedding(cur, schema, decode_caml(rec.value or b"", CamlEmbedding))
            elif topic.endswith("caml.roots"):
                r = decode_caml(rec.value or b"", CamlMerkleRoot)
                cur.execute(f"INSERT INTO {schema}.caml_merkle_roots VALUES (%s, %s, %s, %s, %s) "
                            "ON CONFLICT DO NOTHING", (r.day, r.scope, r.size, r.root, r.computed_at))  # fmt: skip

    def _audit(self, cur: Cur, schema: str, records: list[LogRecord]) -> None:
        rows = []
        for rec in records:
            e = decode_caml(rec.value or b"", CamlAuditEntry)
            rows.append((e.tenant, e.claw_id, e.entry_id, e.operation, e.outcome, e.reason_code, e.request_sha256,
                         e.event_id, e.trace_id, e.source, e.observation_id, e.observation_type, e.domain,
                         e.result_count, e.pii_stage, e.pii_stages_run, e.reputation_at_write, e.retry_after_ms,
                         e.latency_ms, e.at, rec.topic, rec.partition, rec.offset, rec.timestamp,
                         audit_day(rec.timestamp), audit_leaf(e)))  # fmt: skip
        cur.executemany(
            f"INSERT INTO {schema}.caml_audit_log ({_AUDIT}) VALUES ({', '.join(['%s'] * 26)}) ON CONFLICT DO NOTHING",
            rows,
        )

    def _event(self, cur: Cur, s: str, ev: CamlEvent) -> None:
        if ev.kind == "OBSERVATION_ACCEPTED" and ev.observation is not None:
            o = ev.observation
            cur.execute(
                f"INSERT INTO {s}.caml_observations ({_OBS}) VALUES ({', '.join(['%s'] * 18)}) "
                "ON CONFLICT DO NOTHING",
                (o.observation_id, ev.tenant, ev.claw_id, o.observation_type, o.observation_type, o.domain, o.summary,
                 o.pattern, o.evidence, o.confidence, o.created_at,
                 o.created_at + max_age_ms(o.observation_type),  # type: ignore[arg-type]
                 0, 0, True, False, ev.event_id, ev.source),
            )  # fmt: skip
            self._sync_embeddings(cur, s, o.observation_id)
        elif ev.kind == "VALIDATION_RECORDED" and ev.validation is not None:
            v = ev.validation
            cur.execute(
                f"INSERT INTO {s}.caml_validations VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (v.validator_tenant, v.observation_id, v.validator_claw, v.outcome, ev.at, ev.event_id),
            )
            cur.execute(
                f"UPDATE {s}.caml_observations SET validations = GREATEST(validations, %s), "
                "refutations = GREATEST(refutations, %s) WHERE observation_id = %s",
                (v.validations, v.refutations, v.observation_id),
            )
        elif ev.kind == "OBSERVATION_PROMOTED" and ev.observation_id:
            cur.execute(
                f"UPDATE {s}.caml_observations SET promoted = true, observation_type = 'CONSENSUS_SIGNAL', "
                "expires_at = GREATEST(expires_at, created_at + %s) WHERE observation_id = %s",  # never sooner
                (max_age_ms("CONSENSUS_SIGNAL"), ev.observation_id),
            )
            self._sync_embeddings(cur, s, ev.observation_id)
        elif ev.kind == "OBSERVATION_DEACTIVATED" and ev.observation_id:
            cur.execute(f"UPDATE {s}.caml_observations SET active = false WHERE observation_id = %s",
                        (ev.observation_id,))  # fmt: skip
            self._sync_embeddings(cur, s, ev.observation_id)
        elif ev.kind == "REPUTATION_CHANGED" and ev.reputation is not None:
            r = ev.reputation
            cur.execute(
                f"INSERT INTO {s}.caml_rep_events VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT DO NOTHING",
                (ev.tenant, ev.claw_id, r.seq, r.reason, r.delta, r.nominal_delta, r.score, r.observation_id, ev.at,
                 ev.event_id),
            )  # fmt: skip
            cur.execute(
                f"INSERT INTO {s}.caml_reputation AS c VALUES (%s, %s, %s, %s, %s) ON CONFLICT (tenant, claw_id) "
                "DO UPDATE SET score = excluded.score, seq = excluded.seq, at = excluded.at WHERE c.seq < excluded.seq",
                (ev.tenant, ev.claw_id, r.score, r.seq, ev.at),
            )
        elif ev.kind in ("DEPLOYMENT_SUSPENDED", "DEPLOYMENT_REINSTATED"):
            cur.execute(
                f"INSERT INTO {s}.caml_deployments AS d VALUES (%s, %s, %s, %s, %s) ON CONFLICT (tenant, claw_id) "
                "DO UPDATE SET suspended = excluded.suspended, status_at = excluded.status_at, "
                "status_reason = excluded.status_reason WHERE d.status_at <= excluded.status_at",
                (ev.tenant, ev.claw_id, ev.kind == "DEPLOYMENT_SUSPENDED", ev.at, ev.reason),
            )

    def _embedding(self, cur: Cur, s: str, e: CamlEmbedding) -> None:
        if len(e.vector) != DIM:
            raise ValueError(f"embedding of {e.observation_id} has {len(e.vector)} dimensions, not {DIM}")
        if (s, e.model) not in self._indexed:
            cur.execute(f"CREATE INDEX IF NOT EXISTS {index_name(e.model)} ON {s}.caml_obs_embeddings "
                        f"USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64) "
                        f"WHERE model = {_literal(e.model)}")  # fmt: skip
            self._indexed.add((s, e.model))
        cur.execute(
            f"INSERT INTO {s}.caml_obs_embeddings (observation_id, model, embedding) VALUES (%s, %s, %s::vector) "
            "ON CONFLICT DO NOTHING",
            (e.observation_id, e.model, "[" + ",".join(repr(float(x)) for x in e.vector) + "]"),
        )
        self._sync_embeddings(cur, s, e.observation_id)

    @staticmethod
    def _sync_embeddings(cur: Cur, s: str, observation_id: str) -> None:
        """Copy the observation's filters onto its vectors (whichever arrived first)."""
        cur.execute(
            f"UPDATE {s}.caml_obs_embeddings e SET domain = o.domain, active = o.active, expires_at = o.expires_at "
            f"FROM {s}.caml_observations o WHERE o.observation_id = e.observation_id AND e.observation_id = %s",
            (observation_id,),
        )


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
