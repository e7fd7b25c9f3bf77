"""``hivemem replay``: rebuild read models from the log with a progress bar, print digests."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from hivemem.services import projections
from hivemem.settings import Settings
from hivemem.stack import Stack
from projections.replay import rebuild


def run_replay(settings: Settings, only: str | None, console: Console) -> int:
    models = projections(settings)
    if only is not None and only not in models:
        console.print(f"[red]UNKNOWN_PROJECTION[/red]: {only!r}; known: {', '.join(models)}")
        return 2
    stack = Stack(settings)
    try:
        settings = stack.start_backends(say=console.print)  # attaches to running ones when configured
        ok = True
        for name, projection in models.items():
            if only and name != only:
                continue
            with Progress(TextColumn(f"replaying {name}"), BarColumn(), MofNCompleteColumn(),
                          TimeRemainingColumn(), console=console) as progress:  # fmt: skip
                task = progress.add_task(name, total=None)
                result = rebuild(
                    projection,
                    settings.require_kafka(),
                    settings.require_database(),
                    settings.topics,
                    on_total=lambda n, task=task: progress.update(task, total=n),  # type: ignore[misc]
                    on_batch=lambda n, task=task: progress.advance(task, n),  # type: ignore[misc]
                )
            # Plain prints: one digest a line, never wrapped, easy to compare or grep.
            print(f"{name}: {result.records} records replayed; live digest {result.live_digest}")
            print(f"{name}: rebuilt digest {result.rebuilt_digest} ({'equal' if result.equal else 'DIFFERENT'})")
            moved = ", ".join(result.moved) or "none (every table already held the rebuilt rows)"
            print(f"{name}: tables replaced: {moved}; {result.timings()}")
            if not result.equal:
                print(result.describe())
            ok = ok and result.equal
        return 0 if ok else 1
    finally:
        stack.stop()
