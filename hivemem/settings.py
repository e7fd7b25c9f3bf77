"""Settings from the environment, and the tenants file under ``HIVEMEM_HOME``.

Environment: ``HIVEMEM_HOME`` (default ``./.hivemem``), ``HIVEMEM_KAFKA_BOOTSTRAP`` (unset: the
local broker), ``HIVEMEM_DATABASE_URL`` (unset: the embedded Postgres), ``HIVEMEM_TOPIC_PREFIX``
(default ``hivemem.``), ``HIVEMEM_API_PORT`` (default 8080), ``HIVEMEM_CONFIG`` (tenants file,
default ``$HIVEMEM_HOME/tenants.toml``, created with fresh random secrets on first use),
``HIVEMEM_PRESENCE_WINDOW_S`` (a claw is in the quorum basis while its last heartbeat is this
recent; default 30), ``HIVEMEM_EXPIRY_GRACE_MS`` (how long past a deadline votes may still be
read before the proposal expires; default 1000), ``HIVEMEM_KAFKA_BROKERS`` (how many local
Kafka nodes ``hivemem up`` starts when no bootstrap is given: 1, or 3 or more for a KRaft
cluster; default 1), ``HIVEMEM_KAFKA_REPLICATION`` (replication factor of the topics HiveMem
creates; unset: the local cluster's size, or the broker count up to 3), ``HIVEMEM_READY_MAX_LAG``
(a processor more records behind than this is flagged ``behind`` in /readyz, which stays 200;
default 10000). The KMMS search's ``HIVEMEM_KMMS_*`` settings (docs/kmms.md, "Settings") are read here too, into
one ``SearchConfig`` (``search_config_from_env``).

Settings are read once, here, into typed values that the composition root (hivemem/) passes down: no module of
the product packages reads the environment (tests/unit/test_settings_once.py).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import secrets
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from psycopg.conninfo import conninfo_to_dict, make_conninfo

from contracts.topics import TopicNames
from governance.identity import HmacVerifier, TenantPolicy
from governance.kmms.search_config import DEFAULT as DEFAULT_SEARCH
from governance.kmms.search_config import SearchConfig
from governance.signing import HmacSigner
from governance.votes.voting import VotingConfig

APP_ROLE = "hivemem_app"


@dataclass(frozen=True)
class HiveConfig:
    tenants: dict[str, TenantPolicy]
    token_secret: bytes
    app_db_password: str

    def system_signer(self) -> HmacSigner:
        """The key HiveMem's processors sign their own envelopes (decisions, facts) with."""
        key = hmac.new(self.token_secret, b"hivemem/system-signing/v1", hashlib.sha256).digest()
        return HmacSigner("hmac:hivemem-system", key)

    def system_verifier(self) -> HmacVerifier:
        return HmacVerifier(self.system_signer().key)


@dataclass(frozen=True)
class Settings:
    home: Path
    kafka_bootstrap: str | None
    database_url: str | None
    topic_prefix: str
    api_host: str
    api_port: int
    config_path: Path
    presence_window_s: float = 30.0
    expiry_grace_ms: int = 1000
    kafka_brokers: int = 1
    kafka_replication: int | None = None
    ready_max_lag: int = 10_000
    search: SearchConfig = DEFAULT_SEARCH  # the KMMS search's settings (search_config_from_env)
    java_home: str | None = None  # JAVA_HOME: the JVM the local Kafka runs on (unset: java on PATH)

    @classmethod
    def from_env(cls) -> Settings:
        home = Path(os.environ.get("HIVEMEM_HOME", ".hivemem")).resolve()
        running = running_endpoints(home)
        return cls(
            home=home,
            kafka_bootstrap=os.environ.get("HIVEMEM_KAFKA_BOOTSTRAP") or running.get("kafka_bootstrap"),
            database_url=os.environ.get("HIVEMEM_DATABASE_URL") or running.get("database_url"),
            topic_prefix=os.environ.get("HIVEMEM_TOPIC_PREFIX", "hivemem."),
            api_host=os.environ.get("HIVEMEM_API_HOST", "127.0.0.1"),
            api_port=int(os.environ.get("HIVEMEM_API_PORT", "8080")),
            config_path=Path(os.environ.get("HIVEMEM_CONFIG", str(home / "tenants.toml"))),
            presence_window_s=float(os.environ.get("HIVEMEM_PRESENCE_WINDOW_S", "30")),
            expiry_grace_ms=int(os.environ.get("HIVEMEM_EXPIRY_GRACE_MS", "1000")),
            kafka_brokers=_kafka_brokers(os.environ.get("HIVEMEM_KAFKA_BROKERS", "1")),
            kafka_replication=int(os.environ.get("HIVEMEM_KAFKA_REPLICATION") or 0) or None,
            ready_max_lag=_at_least_zero("HIVEMEM_READY_MAX_LAG", os.environ.get("HIVEMEM_READY_MAX_LAG") or "10000"),
            search=search_config_from_env(os.environ),
            java_home=os.environ.get("JAVA_HOME"),
        )

    def voting(self) -> VotingConfig:
        return VotingConfig(presence_window_ms=int(self.presence_window_s * 1000), expiry_grace_ms=self.expiry_grace_ms)

    @property
    def topics(self) -> TopicNames:
        return TopicNames(self.topic_prefix)

    def require_kafka(self) -> str:
        if not self.kafka_bootstrap:
            raise RuntimeError("HIVEMEM_KAFKA_BOOTSTRAP is not set (hivemem up sets it for its children)")
        return self.kafka_bootstrap

    def require_database(self) -> str:
        if not self.database_url:
            raise RuntimeError("HIVEMEM_DATABASE_URL is not set (hivemem up sets it for its children)")
        return self.database_url

    def app_database_url(self, config: HiveConfig) -> str:
        """Same server and database, as the RLS-bound application role."""
        params = conninfo_to_dict(self.require_database())
        params.update(user=APP_ROLE, password=config.app_db_password)
        return make_conninfo(**{k: str(v) for k, v in params.items() if v is not None})

    def load_config(self) -> HiveConfig:
        if not self.config_path.exists():
            write_default_config(self.config_path)
        return parse_config(tomllib.loads(self.config_path.read_text()))

    def clam_config(self) -> dict[str, object]:
        """The ``[clam]`` table of the tenants file (CLAM's thresholds, decay time, GC interval, critic on
        or off, renderer language; docs/clam.md), or nothing: the defaults."""
        if not self.config_path.exists():
            return {}
        section = tomllib.loads(self.config_path.read_text()).get("clam", {})
        if not isinstance(section, dict):
            raise ValueError("tenants file: [clam] must be a table")
        return section


def _kafka_brokers(raw: str) -> int:
    n = int(raw)
    if n == 2 or n < 1:
        # Two controllers cannot lose one and keep a quorum: no safer than one, twice the cost.
        raise ValueError(f"HIVEMEM_KAFKA_BROKERS must be 1, or 3 or more, not {n}")
    return n


def _at_least_zero(name: str, raw: str) -> int:
    n = int(raw)
    if n < 0:
        raise ValueError(f"{name} must be 0 or more, not {n}")
    return n


def search_config_from_env(env: Mapping[str, str]) -> SearchConfig:
    """The KMMS search's settings from ``env`` (docs/kmms.md, "Settings"); a variable unset takes
    ``governance.kmms.search_config.DEFAULT``'s value. A value that is not a number is refused, naming its variable."""
    d = DEFAULT_SEARCH

    def num(name: str, default: float) -> float:
        raw = env.get(name)
        if raw is None:
            return default
        try:
            value = float(raw)
        except ValueError:
            raise ValueError(f"{name} must be a number, not {raw!r}") from None
        if math.isnan(value):
            raise ValueError(f"{name} must be a number, not {raw!r}")
        return value

    def whole(name: str, default: int) -> int:
        raw = env.get(name)
        if raw is None:
            return default
        try:
            return int(raw)
        except ValueError:
            raise ValueError(f"{name} must be an integer, not {raw!r}") from None

    def flag(name: str, default: bool) -> bool:
        """Any value but 0, false or no turns it on."""
        raw = env.get(name)
        return default if raw is None else raw.strip() not in ("0", "false", "no")

    removed = sorted(name for name in REMOVED_SEARCH_SETTINGS if name in env)
    if removed:
        raise ValueError(f"{', '.join(removed)}: removed on 2026-12-05 (a rule written from HiveMem's own synthetic "
                         "corpus that public conversations did not support; docs/kmms.md, \"How the ranking was "
                         "chosen\"): unset it")  # fmt: skip
    return SearchConfig(
        text_weight=num("HIVEMEM_KMMS_TEXT_WEIGHT", d.text_weight),
        rrf_k=whole("HIVEMEM_KMMS_RRF_K", d.rrf_k),
        episode_model=flag("HIVEMEM_KMMS_EPISODE_MODEL", d.episode_model),
        late=flag("HIVEMEM_KMMS_LATE", d.late),
        text_neighbours=flag("HIVEMEM_KMMS_TEXT_NEIGHBOURS", d.text_neighbours),
        speaker_names=flag("HIVEMEM_KMMS_SPEAKER_NAMES", d.speaker_names),
        split_window=whole("HIVEMEM_KMMS_SPLIT_WINDOW", d.split_window),
        common_share=num("HIVEMEM_KMMS_COMMON_LEXEME", d.common_share),
        fact_topic=num("HIVEMEM_KMMS_FACT_TOPIC", d.fact_topic),
        window_weight=num("HIVEMEM_KMMS_WINDOW_WEIGHT", d.window_weight),
        point_window=flag("HIVEMEM_KMMS_POINT_WINDOW", d.point_window),
        text_dates=flag("HIVEMEM_KMMS_TEXT_DATES", d.text_dates),
        tau=num("HIVEMEM_KMMS_TAU", d.tau),
        tau_current=num("HIVEMEM_KMMS_TAU_CURRENT", d.tau_current),
        abstain_below=num("HIVEMEM_KMMS_ABSTAIN", d.abstain_below),
    )


# The search's settings of the rules removed on 2026-12-05 (off by default since 2026-11-27/28: written from our own
# synthetic corpus, they did not gain on public conversations). Set, they are refused by name rather than ignored.
REMOVED_SEARCH_SETTINGS = frozenset({
    "HIVEMEM_KMMS_VOICE_ASKED", "HIVEMEM_KMMS_VOICE_TOLD", "HIVEMEM_KMMS_VOICE_REPLY", "HIVEMEM_KMMS_SAID_TEXT",
    "HIVEMEM_KMMS_FEEDBACK", "HIVEMEM_KMMS_RECENCY", "HIVEMEM_KMMS_SAME_TOPIC", "HIVEMEM_KMMS_NAMED_CHANGE",
    "HIVEMEM_KMMS_WINDOW_MARGIN", "HIVEMEM_KMMS_DRILL", "HIVEMEM_KMMS_DRILL_WEIGHT", "HIVEMEM_KMMS_STATEMENT",
})  # fmt: skip


def running_endpoints(home: Path) -> dict[str, str]:
    """Endpoints of a ``hivemem up`` still running on this home, so other commands attach to it."""
    path = home / "endpoints.json"
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    try:
        os.kill(int(data.get("pid", 0)), 0)
    except (OSError, ValueError):
        return {}
    return {k: str(v) for k, v in data.items() if k != "pid"}


def tier_limit(tier: str) -> int:
    from governance.caml.rate_limit import tier_limit as limit

    try:
        return limit(tier)
    except ValueError as exc:
        raise ValueError(f"tenants file: {exc}") from exc


def parse_config(doc: dict[str, object]) -> HiveConfig:
    tenants: dict[str, TenantPolicy] = {}
    raw_tenants = doc.get("tenants", {})
    assert isinstance(raw_tenants, dict)
    for name, t in raw_tenants.items():
        tenants[name] = TenantPolicy(
            name=name,
            operator_secrets={k: bytes.fromhex(v) for k, v in t.get("operator_secrets", {}).items()},
            governance_enabled=bool(t.get("governance", True)),
            suspended_claws=frozenset(t.get("suspended_claws", [])),
            caml_tier=str(t.get("tier", "pro")),
            memory_pii=str(t.get("memory_pii", "redact")),
        )
        tier_limit(tenants[name].caml_tier)  # an unknown tier is a configuration error, said at start
        if tenants[name].memory_pii not in ("redact", "reject"):
            raise ValueError(f'tenants file: tenants.{name}.memory_pii must be "redact" or "reject"')
    api = doc.get("api", {})
    assert isinstance(api, dict)
    return HiveConfig(
        tenants=tenants,
        token_secret=bytes.fromhex(api["token_secret"]),
        app_db_password=str(api["app_db_password"]),
    )


DEFAULT_TENANTS = {"acme": True, "globex": True}  # tenant -> governance enabled


def write_default_config(path: Path, tenants: dict[str, bool] | None = None, tiers: dict[str, str] | None = None,
                         memory_pii: dict[str, str] | None = None) -> None:  # fmt: skip
    """Demo tenants (acme, globex) with random secrets; edit the file to add your own."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        "# HiveMem tenants and API secrets (generated on first start; keep it private).",
        "[api]",
        f'token_secret = "{secrets.token_hex(32)}"',
        f'app_db_password = "{secrets.token_hex(16)}"',
        "",
    ]
    for tenant, governance in (tenants or DEFAULT_TENANTS).items():
        lines += [
            f"[tenants.{tenant}]",
            f"governance = {'true' if governance else 'false'}",
            "suspended_claws = []",
            f'tier = "{(tiers or {}).get(tenant, "pro")}"  # CAML writes: free 20/h, pro 1,000/h, enterprise 100,000/h',
            f'memory_pii = "{(memory_pii or {}).get(tenant, "redact")}"  # personal data in memory episodes: '
            '"redact" or "reject"',
            f"[tenants.{tenant}.operator_secrets]",
            f'op1 = "{secrets.token_hex(32)}"',
            "",
        ]
    path.write_text("\n".join(lines))
    path.chmod(0o600)
