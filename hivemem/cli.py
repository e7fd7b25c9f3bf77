"""The ``hivemem`` command."""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import time
from typing import Any

from rich.console import Console
from rich.markup import escape

from hivemem.settings import Settings

console = Console()


class Stopping(Exception):
    """SIGTERM or SIGINT: unwind from wherever ``up`` is and stop every child."""


def cmd_up(args: argparse.Namespace) -> int:
    from hivemem.demo import run_demo
    from hivemem.stack import Stack

    stack = Stack(Settings.from_env())

    def on_signal(*_: object) -> None:
        raise Stopping

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        with console.status("starting Kafka, PostgreSQL, processors, projectors and the API..."):
            stack.start_backends(say=console.print)
            stack.start_services(api_port=args.port)
        console.print(f"HiveMem is up: API {stack.api_url} (docs at {stack.api_url}/docs); "
                      f"logs in {stack.settings.home / 'logs'}")  # fmt: skip
        ok = True
        if args.no_demo:
            console.print(f"Dashboard: {stack.api_url}/dashboard (log in with `hivemem token --tenant acme`)")
        else:  # the demo ends with the dashboard's link
            ok = run_demo(stack.settings, stack.api_url, console)
        if args.exit_after_demo:
            return 0 if ok else 1
        console.print("Serving until Ctrl-C.")
        while True:
            for name in stack.supervise_once():
                console.print(f"[yellow]{name} exited; restarted[/yellow]")
            time.sleep(1)
    except (Stopping, KeyboardInterrupt):
        return 0
    finally:
        # A second signal must not interrupt the shutdown itself.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        with console.status("stopping..."):
            stack.stop()


def cmd_demo(args: argparse.Namespace) -> int:
    from hivemem.demo import run_demo

    settings = Settings.from_env()
    settings.require_kafka()
    return 0 if run_demo(settings, args.api) else 1


def cmd_token(args: argparse.Namespace) -> int:
    from projections.auth import mint_token

    config = Settings.from_env().load_config()
    if args.tenant not in config.tenants:
        console.print(f"[red]UNKNOWN_TENANT[/red]: {args.tenant!r} is not in the tenants file")
        return 2
    print(mint_token(config.token_secret, args.tenant, args.subject, args.claw, args.ttl))
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from hivemem.replay_cli import run_replay

    return run_replay(Settings.from_env(), args.projection, console)


def cmd_audit(args: argparse.Namespace) -> int:
    from hivemem.audit_cli import run_roots, run_verify

    settings = Settings.from_env()
    if args.action == "roots":
        return run_roots(settings, args.day, console)
    return run_verify(settings, args.day, console)


def cmd_mcp(args: argparse.Namespace) -> int:
    """MCP over stdio: an MCP host starts this; stdout carries the protocol, so nothing else prints there."""
    import anyio

    from projections.mcp.stdio import serve_stdio

    anyio.run(serve_stdio, args.api, args.token or os.environ.get("HIVEMEM_TOKEN"), args.server)
    return 0


def cmd_kstar(args: argparse.Namespace) -> int:
    from hivemem import kstar_cli

    run = {"export": kstar_cli.run_export, "import": kstar_cli.run_import, "verify-bundle": kstar_cli.run_verify}
    return run[args.command](Settings.from_env(), args, console)


NO_BENCHES = (
    "the benchmarks (bench/) are a development tool, not part of the product: "
    "run `hivemem bench` from a HiveMem checkout (pip install -e '.[dev]')"
)


def benches() -> dict[str, str] | None:
    """The benches' names and lines (``bench.BENCHES``) when the ``bench`` package is importable, else None.

    Looked up by name, never imported statically: the product does not depend on its benchmarks
    (an import-linter contract in pyproject.toml keeps ``hivemem`` from importing ``bench``)."""
    try:
        found: dict[str, str] = importlib.import_module("bench").BENCHES
    except ModuleNotFoundError as exc:
        if exc.name != "bench":
            raise
        return None
    return found


def cmd_bench(args: argparse.Namespace) -> int:
    if args.bench is None:
        console.print(f"[red]NO_BENCHES[/red]: {escape(NO_BENCHES)}")
        return 2
    bench = importlib.import_module(f"bench.{args.bench}")
    return int(bench.main(list(args.bench_args)))


# ``hivemem replay --projection``'s names (hivemem.services.projections; a unit test keeps them equal).
READ_MODELS = ("claws", "audit", "governance", "caml", "kmms", "kmp", "kstar", "clam")


def _command(sub: Any, name: str, text: str) -> argparse.ArgumentParser:
    """A subcommand whose --help starts with what it does."""
    parser: argparse.ArgumentParser = sub.add_parser(name, help=text, description=text)
    return parser


def build_parser() -> argparse.ArgumentParser:
    from hivemem.kstar_cli import add_parsers

    parser = argparse.ArgumentParser(prog="hivemem", description="Event-sourced memory for fleets of AI agents.",
                                     epilog="`hivemem <command> --help` describes each command.")  # fmt: skip
    sub = parser.add_subparsers(dest="command", required=True, metavar="<command>")
    up = _command(sub, "up", "start everything on the embedded default, run the demo, serve until Ctrl-C")
    up.add_argument("--exit-after-demo", action="store_true", help="stop after the demo; exit 0 if it succeeded")
    up.add_argument("--no-demo", action="store_true", help="start and serve without running the demo")
    up.add_argument("--port", type=int, default=None, help="API port (default HIVEMEM_API_PORT or 8080)")
    up.set_defaults(func=cmd_up)
    demo = _command(sub, "demo", "run the demo against a running HiveMem")
    demo.add_argument("--api", default="http://127.0.0.1:8080", help="the HiveMem API (default %(default)s)")
    demo.set_defaults(func=cmd_demo)
    token = _command(sub, "token", "mint an API bearer token for a tenant")
    token.add_argument("--tenant", required=True, help="a tenant of the tenants file ($HIVEMEM_HOME/tenants.toml)")
    token.add_argument("--subject", default="cli", help="who the token is for, as the audit shows it (default cli)")
    token.add_argument("--claw", default=None, help="bind the token to one claw")
    token.add_argument("--ttl", type=int, default=3600, help="seconds until it expires (default %(default)s)")
    token.set_defaults(func=cmd_token)
    replay = _command(sub, "replay", "rebuild read models from the start of the log, compare digests")
    replay.add_argument("--projection", default=None, metavar="NAME",
                        help=f"one read model: {', '.join(READ_MODELS)} (default: all)")  # fmt: skip
    replay.set_defaults(func=cmd_replay)
    audit = _command(sub, "audit", "CAML audit: publish daily Merkle roots, or verify entries and roots")
    audit.add_argument("action", choices=["roots", "verify"], help="roots: publish a day's roots; verify: check all")
    audit.add_argument("--day", default=None, help="YYYY-MM-DD (UTC); roots: default yesterday; verify: default all")
    audit.set_defaults(func=cmd_audit)
    mcp = _command(sub, "mcp", "serve MCP over stdio (tools for every HiveMem API operation; docs/mcp.md)")
    mcp.add_argument(
        "--api",
        default=os.environ.get("HIVEMEM_API_URL", "http://127.0.0.1:8080"),
        help="the HiveMem API to call (default HIVEMEM_API_URL or http://127.0.0.1:8080)",
    )
    mcp.add_argument("--token", default=None, help="bearer token (default HIVEMEM_TOKEN)")
    mcp.add_argument("--server", choices=["hivemem", "kstar"], default="hivemem",
                     help="hivemem: the HiveMem tools (default); kstar: KSTAR memory, seed 003's tools")  # fmt: skip
    mcp.set_defaults(func=cmd_mcp)
    add_parsers(sub)
    for name in ("export", "import", "verify-bundle"):
        sub.choices[name].set_defaults(func=cmd_kstar)
    bench = _command(sub, "bench", "benchmarks, each on a stack of its own: hivemem bench <name> [options]")
    found = benches()
    if found is None:  # an install without the dev tools: `hivemem bench` says so (cmd_bench)
        bench.set_defaults(func=cmd_bench, bench=None)
        return parser
    names = bench.add_subparsers(dest="bench", required=True, metavar="<name>", title="benches",
                                 description="`hivemem bench <name> --help` lists the bench's options.")  # fmt: skip
    for name, text in found.items():
        # Its options are the bench's own (bench/<name>.py parses them, --help included).
        names.add_parser(name, help=text, add_help=False)
    bench.set_defaults(func=cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if args.command == "bench":
        args.bench_args = rest
    elif rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
