"""Long-running services, each its own process:
``python -m hivemem.services gate|governance|projectors|api``.

They read ``HIVEMEM_KAFKA_BOOTSTRAP`` and ``HIVEMEM_DATABASE_URL``; ``hivemem up`` sets both.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading

from confluent_kafka import Producer

from governance.gate import GateConfig
from governance.identity import DeploymentKeys
from hivemem.kafka_topics import kafka_reachable
from hivemem.settings import Settings
from producers.claw_client import EnvelopePublisher, producer_config
from projections.projector import Projector, Watermarks, stored_offsets
from projections.read_models import Projection
from projections.read_models.audit import AuditProjection
from projections.read_models.claws import ClawsProjection
from projections.read_models.governance import GovernanceProjection


def projections(settings: Settings) -> dict[str, Projection]:
    """Every read model; decisions and facts are checked against the processor's key."""
    verifier = settings.load_config().system_verifier()
    return {
        "claws": ClawsProjection(),
        "audit": AuditProjection(output_verifier=verifier),
        "governance": GovernanceProjection(output_verifier=verifier),
    }


def run_gate(settings: Settings) -> None:
    import faust

    from processors.gate_app import create_app

    config = settings.load_config()
    cfg = GateConfig(topics=settings.topics, tenants=config.tenants, keys=DeploymentKeys(config.tenants))
    app = create_app(cfg, settings.require_kafka(), settings.require_database(), str(settings.home / "faust"))
    faust.Worker(app, loglevel="WARNING", quiet=True).execute_from_commandline()


def _stop_on_signals() -> threading.Event:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    return stop


def run_governance(settings: Settings) -> None:
    from processors.governance_app import GovernanceProcessor

    config = settings.load_config()
    proc = GovernanceProcessor(settings.voting(), settings.require_kafka(), settings.require_database(),
                               settings.topics, config.system_signer())  # fmt: skip
    proc.run(_stop_on_signals())


def run_projectors(settings: Settings, only: list[str] | None = None) -> None:
    stop = _stop_on_signals()
    threads = []
    for name, projection in projections(settings).items():
        if only and name not in only:
            continue
        p = Projector(projection, settings.require_kafka(), settings.require_database(), settings.topics)
        t = threading.Thread(target=p.run, args=(stop,), name=f"projector-{name}", daemon=True)
        t.start()
        threads.append(t)
    while not stop.is_set() and all(t.is_alive() for t in threads):
        stop.wait(0.5)
    stop.set()
    for t in threads:
        t.join(10)


def projection_lag(settings: Settings, watermarks: Watermarks) -> dict[str, int]:
    import psycopg

    out: dict[str, int] = {}
    with psycopg.connect(settings.require_database(), autocommit=True) as conn:
        for name, projection in projections(settings).items():
            ends = watermarks(projection.topics(settings.topics))
            have = stored_offsets(conn, name)
            out[name] = sum(max(0, end - have.get(tp, 0)) for tp, end in ends.items())
    return out


def run_api(settings: Settings) -> None:
    import uvicorn

    from projections.api import ApiDeps, create_app

    config = settings.load_config()
    bootstrap = settings.require_kafka()
    watermarks = Watermarks(bootstrap)
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
    )
    uvicorn.run(create_app(deps), host=settings.api_host, port=settings.api_port, log_level="warning")


def main(argv: list[str]) -> None:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    settings = Settings.from_env()
    which = argv[0] if argv else ""
    if which == "gate":
        sys.argv = [sys.argv[0], "worker"]  # faust's Worker reads its own command line
        run_gate(settings)
    elif which == "governance":
        run_governance(settings)
    elif which == "projectors":
        run_projectors(settings, argv[1:] or None)
    elif which == "api":
        run_api(settings)
    else:
        raise SystemExit("usage: python -m hivemem.services gate|governance|projectors [NAME...]|api")


if __name__ == "__main__":
    main(sys.argv[1:])
