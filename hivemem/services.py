"""Long-running services, each its own process:
``python -m hivemem.services gate|governance|caml|kmms|kmp|kstar|projectors [NAME...]|api``.

They read ``HIVEMEM_KAFKA_BOOTSTRAP`` and ``HIVEMEM_DATABASE_URL``; ``hivemem up`` sets both.
Every processor runs on the one stream runtime (``streams.runtime``). A service stops within
a few seconds of SIGTERM or SIGINT, and when its parent (``hivemem up``) dies.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from deploy.process import die_with_parent
from governance.gate.checks import GateConfig
from governance.identity import DeploymentKeys
from hivemem.blas import one_blas_thread
from hivemem.settings import Settings
from projections.caml.read_model import CamlProjection
from projections.clam.read_model import ClamProjection
from projections.gate.audit import AuditProjection
from projections.gate.claws import ClawsProjection
from projections.kmms.read_model import KmmsProjection
from projections.kmp.read_model import KmpProjection
from projections.kstar.read_model import KstarProjection
from projections.read_models import Projection
from projections.votes.read_model import GovernanceProjection
from streams.kafka import TP

if TYPE_CHECKING:
    from inference.clam.llm import ClamLlm
from streams.processor import Processor
from streams.runtime import StreamRuntime

# Every processor /readyz expects to see alive: the gate, the governance processor, the caml
# processor, each read model (and the embedder, whose name carries its model: processors()).
PROCESSORS = [
    "gate",
    "governance-processor",
    "caml-processor",
    "kmms-processor",
    "kmms-enricher",
    "kmms-consolidator",
    "kmp-processor",
    "kstar-processor",
    "clam-processor",
    "claws",
    "audit",
    "governance",
    "caml",
    "kmms",
    "kmp",
    "kstar",
    "clam",
]
log = logging.getLogger("hivemem.services")


def projections(settings: Settings) -> dict[str, Projection]:
    """Every read model; decisions and facts are checked against the processor's key."""
    verifier = settings.load_config().system_verifier()
    return {
        "claws": ClawsProjection(),
        "audit": AuditProjection(output_verifier=verifier),
        "governance": GovernanceProjection(output_verifier=verifier),
        "caml": CamlProjection(),
        "kmms": KmmsProjection(),
        "kmp": KmpProjection(),
        "kstar": KstarProjection(),
        "clam": ClamProjection(),
    }


def _stop_on_signals() -> threading.Event:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    return stop


def run_processors(settings: Settings, processors: list[Processor],
                   jobs: list[Callable[[Settings, threading.Event], None]] | None = None) -> None:  # fmt: skip
    """Run processors on the stream runtime, one thread each (and ``jobs``, e.g. the daily
    Merkle roots, each in a thread), until a signal arrives."""
    stop = _stop_on_signals()
    for job in jobs or []:
        threading.Thread(target=job, args=(settings, stop), name=job.__name__, daemon=True).start()
    kafka, db = settings.require_kafka(), settings.require_database()
    threads = []
    # A processor that can split over instances (the gate) joins its consumer group as this instance.
    instance = os.environ.get("HIVEMEM_INSTANCE", "").strip() or None
    for p in processors:
        runtime = StreamRuntime(p, kafka, db, instance=instance)
        t = threading.Thread(target=runtime.run, args=(stop,), name=f"stream-{p.name}", daemon=True)
        t.start()
        threads.append(t)
    while not stop.is_set() and all(t.is_alive() for t in threads):
        stop.wait(0.5)
    if not stop.is_set():
        log.error("a processor thread ended unexpectedly; exiting to be restarted")
    stop.set()
    for t in threads:
        t.join(10)


def gate_processor(settings: Settings) -> Processor:
    from processors.gate.core import GateProcessor

    config = settings.load_config()
    return GateProcessor(GateConfig(topics=settings.topics, tenants=config.tenants,
                                    keys=DeploymentKeys(config.tenants)))  # fmt: skip


def governance_processor(settings: Settings) -> Processor:
    from processors.votes.core import GovernanceProcessor

    return GovernanceProcessor(settings.voting(), settings.topics, settings.load_config().system_signer())


def kstar_processor(settings: Settings) -> Processor:
    from processors.kstar.core import KstarProcessor

    return KstarProcessor(settings.topics, settings.load_config().token_secret)


def clam_llm(settings: Settings) -> ClamLlm | None:
    """The CLAM LLM back-end (inference.clam.llm.ClamLlm) when HIVEMEM_LLM_URL is set and ``[clam] use_llm``
    is not false; else None (the local deterministic back-ends)."""
    from governance.clam.config import ClamConfig
    from inference.clam.llm import clam_llm_from_env

    return clam_llm_from_env(os.environ) if ClamConfig.from_mapping(settings.clam_config()).use_llm else None


def clam_processor(settings: Settings) -> Processor:
    from governance.clam.config import ClamConfig
    from inference.clam.llm import FallbackCritic, FallbackPerceiver
    from processors.clam.core import ClamProcessor

    cfg, llm = ClamConfig.from_mapping(settings.clam_config()), clam_llm(settings)
    if llm is None:
        return ClamProcessor(settings.topics, cfg)
    return ClamProcessor(settings.topics, cfg, perceive=FallbackPerceiver(llm), critic=FallbackCritic(llm))


def caml_processors(settings: Settings) -> list[Processor]:
    """The caml processor (PII cascade, reputation, rate limits) and the embedder."""
    from governance.caml.rate_limit import tier_limit
    from hivemem.caml_wiring import pii_scanner, warm_embedder
    from processors.caml.core import CamlProcessor
    from processors.caml.embedder import EmbedderProcessor

    config = settings.load_config()
    limits = {name: tier_limit(policy.caml_tier) for name, policy in config.tenants.items()}
    return [CamlProcessor(settings.topics, pii_scanner(), limits, tier_limit("free")),
            EmbedderProcessor(settings.topics, warm_embedder())]  # fmt: skip


def kmms_processors(settings: Settings, part: str = "all") -> list[Processor]:
    """KMMS: the write path (PII policy, dedup), enrichment and consolidation (``core``), and the embedder(s)
    (``embedders``); ``all``: both."""
    if part == "embedders":
        return kmms_embedders(settings)
    from hivemem.kmms_wiring import consolidation_batch, consolidator, enricher
    from processors.kmms.consolidator import KmmsConsolidatorProcessor
    from processors.kmms.core import KmmsProcessor
    from processors.kmms.enricher import KmmsEnricherProcessor

    policies = {name: p.memory_pii for name, p in settings.load_config().tenants.items()}
    names = settings.topics
    return [KmmsProcessor(names, policies),  # type: ignore[arg-type]
            KmmsEnricherProcessor(names, enricher()),
            KmmsConsolidatorProcessor(names, consolidator(), consolidation_batch()),
            *(kmms_embedders(settings) if part == "all" else [])]  # fmt: skip


def kmms_embedders(settings: Settings) -> list[Processor]:
    """The KMMS embedder of the configured model and, during a model switch, of the previous one (it keeps
    embedding what arrives, so the old vectors can serve until the new model has re-embedded everything)."""
    from hivemem.caml_wiring import warm_embedder, warm_previous_embedder
    from hivemem.kmms_wiring import no_removed_switches, round_replies, round_whole
    from processors.kmms.embedder import KmmsEmbedderProcessor

    previous = warm_previous_embedder()
    models = [warm_embedder(), *([previous] if previous is not None else [])]
    no_removed_switches()
    replies, whole = round_replies(), round_whole()
    return [KmmsEmbedderProcessor(settings.topics, m, replies, whole) for m in models]


def expected_processors() -> list[str]:
    """What /readyz waits for: the fixed processors and the embedders of the configured model (and, during
    a KMMS model switch, of the previous one)."""
    from contracts.consumers import embedder_name, kmms_embedder_name
    from hivemem.caml_wiring import embedder, previous_embedder

    model, previous = embedder().model_id, previous_embedder()
    switching = [kmms_embedder_name(previous.model_id)] if previous is not None else []
    return [*PROCESSORS, embedder_name(model), kmms_embedder_name(model), *switching]


def projection_processors(settings: Settings, only: list[str] | None = None) -> list[Processor]:
    from projections.projector import ProjectionProcessor

    return [ProjectionProcessor(p, settings.topics) for name, p in projections(settings).items()
            if not only or name in only]  # fmt: skip


def projection_lag(settings: Settings, watermarks: Callable[[list[str]], dict[TP, int]]) -> dict[str, int]:
    """Records each read model has not folded yet (end offsets minus stored offsets)."""
    import psycopg

    from streams.offsets import stored_offsets

    out: dict[str, int] = {}
    with psycopg.connect(settings.require_database(), autocommit=True, connect_timeout=5) as conn:
        for name, projection in projections(settings).items():
            ends = watermarks(projection.topics(settings.topics))
            have = stored_offsets(conn, name)
            out[name] = sum(max(0, end - have.get(tp, 0)) for tp, end in ends.items())
    return out


def sync_operators(settings: Settings) -> None:
    """caml_operators mirrors the tenants file (operator = tenant, with its tier)."""
    import psycopg

    from governance.caml.rate_limit import tier_limit

    tenants = settings.load_config().tenants
    with psycopg.connect(settings.require_database(), autocommit=True) as conn, conn.transaction():
        for name, policy in tenants.items():
            conn.execute(
                "INSERT INTO caml.caml_operators (tenant, tier, writes_per_hour) VALUES (%s, %s, %s) "
                "ON CONFLICT (tenant) DO UPDATE SET tier = excluded.tier, writes_per_hour = excluded.writes_per_hour",
                (name, policy.caml_tier, tier_limit(policy.caml_tier)),
            )


def run_api(settings: Settings) -> None:
    from confluent_kafka import Producer

    from hivemem.caml_wiring import CamlPublisher, warm_embedder, warm_previous_embedder
    from hivemem.kafka_topics import kafka_reachable
    from producers.claw_client import EnvelopePublisher, producer_config
    from projections.api import ApiDeps, create_app, serve
    from streams.kafka import Watermarks

    config = settings.load_config()
    bootstrap = settings.require_kafka()
    watermarks = Watermarks(bootstrap)
    caml_out = CamlPublisher(bootstrap, settings.topics)
    sync_operators(settings)
    deps = ApiDeps(
        app_db_url=settings.app_database_url(config),
        token_secret=config.token_secret,
        tenants=config.tenants,
        names=settings.topics,
        publisher=EnvelopePublisher(Producer(producer_config(bootstrap)), settings.topics),
        kafka_ok=lambda: kafka_reachable(bootstrap),
        projection_lag=lambda: projection_lag(settings, watermarks),
        watermarks=watermarks,
        projection_topics={n: p.topics(settings.topics) for n, p in projections(settings).items()},
        presence_window_ms=int(settings.presence_window_s * 1000),
        processors=expected_processors(),
        ready_max_lag=settings.ready_max_lag,
        embedder=warm_embedder(),
        previous_embedder=warm_previous_embedder(),
        caml_audit=caml_out.audit,
        caml_status=caml_out.status,
        clam_llm=clam_llm(settings),
        search=settings.search,
    )
    serve(create_app(deps), settings.api_host, settings.api_port)


def main(argv: list[str]) -> None:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    die_with_parent()
    one_blas_thread()
    settings = Settings.from_env()
    which = argv[0] if argv else ""
    if which == "gate":
        run_processors(settings, [gate_processor(settings)])
    elif which == "governance":
        run_processors(settings, [governance_processor(settings)])
    elif which == "caml":
        from hivemem.audit_cli import daily_roots

        run_processors(settings, caml_processors(settings), [daily_roots])
    elif which == "kmms":
        part = argv[1] if len(argv) > 1 else "all"
        if part not in ("all", "core", "embedders"):
            raise SystemExit("usage: python -m hivemem.services kmms [all|core|embedders]")
        run_processors(settings, kmms_processors(settings, part))
    elif which == "kmp":
        from processors.kmp.core import KmpProcessor

        run_processors(settings, [KmpProcessor(settings.topics)])
    elif which == "kstar":
        # KSTAR and CLAM share a process: both are light, and each service costs a Python interpreter.
        from hivemem.clam_wiring import gc_ticks

        run_processors(settings, [kstar_processor(settings), clam_processor(settings)], [gc_ticks])
    elif which == "projectors":
        run_processors(settings, projection_processors(settings, argv[1:] or None))
    elif which == "api":
        run_api(settings)
    else:
        raise SystemExit(
            "usage: python -m hivemem.services gate|governance|caml|kmms [all|core|embedders]|kmp|kstar|"
            "projectors [NAME...]|api"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
