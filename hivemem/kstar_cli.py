"""``hivemem export`` / ``hivemem import`` / ``hivemem verify-bundle``: a claw's KSTAR memory to a
``kstar-bundle`` file and back (docs/kstar.md), with progress bars. What they run is
``projections.kstar.io``'s, the same code the HTTP routes ``/kstar/v1/export`` and ``/kstar/v1/import`` run."""

from __future__ import annotations

import argparse
import getpass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from governance.kstar import bundle as b
from governance.kstar.tokens import issuer_key
from hivemem.settings import Settings
from projections.kstar.io import Writer, connect, export_document, import_document, write_document


def _bar(console: Console, what: str) -> Progress:
    return Progress(TextColumn(what), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), console=console)


def _passphrase(path: str | None, console: Console) -> bytes | None:
    if path is None:
        return None
    if path == "-":
        return getpass.getpass("passphrase: ").encode()
    return Path(path).read_text().strip().encode()


def _bad_types(types: str | None) -> list[str]:
    return [t for t in (types or "").split(",") if t and t not in (*b.KINDS, "episodes")]


def run_export(settings: Settings, args: argparse.Namespace, console: Console) -> int:
    config = settings.load_config()
    if args.include_tokens and not args.yes:
        console.print("[red]CONFIRMATION_REQUIRED[/red]: control tokens are credentials; add --yes to include them")
        return 2
    bad = _bad_types(args.types)
    if bad:
        console.print(f"[red]INVALID_TYPES[/red]: {bad}; choose from {', '.join(b.KINDS)}")
        return 2
    kinds = set(args.types.split(",")) if args.types else None
    episodes = not args.no_episodes and (kinds is None or "episodes" in kinds)
    types = frozenset(kinds - {"episodes"}) if kinds else frozenset(k for k in b.KINDS if k != "control_tokens")
    if args.include_tokens:
        types |= {"control_tokens"}
    try:
        flt = b.ExportFilter(types=types, include_tokens=args.include_tokens, date_from=args.date_from,
                             date_to=args.date_to)  # fmt: skip
        flt.admits("traces", {"timestamp": "2000-01-01T00:00:00.000Z"})  # a bad --from/--to fails here
    except (b.BundleError, ValueError) as exc:
        console.print(f"[red]INVALID_DATE[/red]: {exc}")
        return 2
    signer = issuer_key(config.token_secret, args.tenant, args.claw)
    passphrase = _passphrase(args.passphrase_file, console)
    with _bar(console, "exporting") as bar:
        task = bar.add_task("export", total=None)
        with connect(settings.require_database(), args.tenant) as conn:
            enc = export_document(conn, args.tenant, args.memory or args.claw, flt, signer,
                                  passphrase.decode() if passphrase else None,
                                  lambda n: bar.advance(task, n), episodes)  # fmt: skip
    out = Path(args.output)
    write_document(out, enc.data)  # atomic, mode 600: a memory is personal data
    stats = enc.bundle["statistics"]
    console.print(f"wrote {out} ({out.stat().st_size} bytes){' encrypted' if passphrase else ''}; {stats}")
    return 0


def run_verify(settings: Settings, args: argparse.Namespace, console: Console) -> int:
    try:
        check = b.decode_bundle(Path(args.bundle).read_bytes(), _passphrase(args.passphrase_file, console)).check
    except b.BundleError as exc:
        console.print(f"[red]{exc.code}[/red]: {exc.detail}")
        return 1
    console.print(f"valid: checksum {check.checksum}; signed {check.signed} (key {check.signer_key}); "
                  f"{check.counts}")  # fmt: skip
    return 0


def run_import(settings: Settings, args: argparse.Namespace, console: Console) -> int:
    from confluent_kafka import Producer

    from producers.claw_client import EnvelopePublisher, producer_config

    if args.replace and not args.yes:
        console.print("[red]CONFIRMATION_REQUIRED[/red]: --replace removes the memory's records first; add --yes")
        return 2
    bad = _bad_types(args.types)
    if bad:
        console.print(f"[red]INVALID_TYPES[/red]: {bad}; choose from {', '.join(b.KINDS)}")
        return 2
    config = settings.load_config()
    if args.tenant not in config.tenants:
        console.print(f"[red]UNKNOWN_TENANT[/red]: {args.tenant!r}")
        return 2
    try:
        decoded = b.decode_bundle(Path(args.bundle).read_bytes(), _passphrase(args.passphrase_file, console))
        plain = decoded.bundle
    except b.BundleError as exc:
        console.print(f"[red]{exc.code}[/red]: {exc.detail}")
        return 1
    publisher = EnvelopePublisher(Producer(producer_config(settings.require_kafka())), settings.topics)
    writer = Writer(args.tenant, args.claw, config.tenants[args.tenant])
    types = args.types.split(",") if args.types else None
    with _bar(console, "importing") as bar:
        # Counted to once planned: records already held are not sent; registrations and episodes are.
        sent = bar.add_task("sent", total=None)
        judged = bar.add_task("judged", total=None)

        def totals(to_send: int, to_judge: int) -> None:
            bar.update(sent, total=to_send)
            bar.update(judged, total=to_judge)

        with connect(settings.require_database(), args.tenant) as conn:
            result = import_document(conn, writer, args.memory or args.claw, plain,
                                     "replace" if args.replace else "merge", types, publisher, args.wait,
                                     lambda n: bar.advance(sent, n), lambda n: bar.advance(judged, n),
                                     decoded.check.checksum, totals)  # fmt: skip
    console.print_json(data=result.to_wire())
    return 0 if not result.refused and not result.pending else 1


def add_parsers(sub: Any) -> None:
    def command(name: str, text: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = sub.add_parser(name, help=text, description=text)
        return parser

    ex = command("export", "write a claw's KSTAR memory to a kstar-bundle file (docs/kstar.md)")
    im = command("import", "merge (or --replace) a kstar-bundle into a claw's KSTAR memory")
    for p in (ex, im):
        p.add_argument("--tenant", required=True, help="the tenant the claw belongs to")
        p.add_argument("--claw", required=True, help="the claw whose memory it is (its key signs the writes)")
        p.add_argument("--memory", help="default: the claw's own memory (its id)")
        p.add_argument(
            "--types", help="comma-separated, of: traces, perceptions, facts, skills, control_tokens, episodes"
        )
        p.add_argument("--passphrase-file", help="encrypt / decrypt with the passphrase in this file ('-': ask)")
        p.add_argument("--yes", action="store_true", help="confirm --include-tokens / --replace")
    ex.add_argument("output", help="the bundle file to write (mode 600)")
    ex.add_argument("--include-tokens", action="store_true", help="control tokens too (needs --yes)")
    ex.add_argument("--no-episodes", action="store_true", help="leave the claw's KMMS episodes out")
    ex.add_argument("--from", dest="date_from", help="ISO-8601 UTC, inclusive")
    ex.add_argument("--to", dest="date_to", help="ISO-8601 UTC, inclusive")
    im.add_argument("bundle", help="the kstar-bundle file to import")
    im.add_argument("--replace", action="store_true", help="remove the memory's records of the imported types first")
    im.add_argument("--wait", type=float, default=300.0, help="seconds to wait for the verdicts")
    vb = command("verify-bundle", "check a kstar-bundle's checksum, signature and statistics")
    vb.add_argument("bundle", help="the kstar-bundle file to check")
    vb.add_argument("--passphrase-file", help="decrypt with the passphrase in this file ('-': ask)")
