"""CPU seconds per process (user + system, from /proc), for "CPU time per envelope per process".

A figure of envelopes/s alone does not say which process is the limit, nor why two machines
differ; the CPU each process spent during a measured phase does. Linux only (/proc).
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds) of one process, or None if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    fields = raw[raw.rindex(")") + 2 :].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICKS


def own_cpu(pid: int) -> float:
    got = _stat(pid)
    return got[1] if got is not None else 0.0


def tree_cpu(root: int) -> float:
    """CPU seconds of ``root`` and every live descendant (Postgres forks a backend per connection)."""
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            got = _stat(int(entry.name))
            if got is not None:
                parents[int(entry.name)], cpu[int(entry.name)] = got
    total, todo = 0.0, [root]
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    while todo:
        pid = todo.pop()
        total += cpu.get(pid, 0.0)
        todo += children.get(pid, [])
    return total


@dataclass(frozen=True)
class CpuSample:
    seconds: dict[str, float]

    @classmethod
    def take(cls, pids: dict[str, int]) -> CpuSample:
        """Each process with its descendants, except this one (its children are the stack's own
        processes, each counted under its name): only its own CPU."""
        me = os.getpid()
        return cls({name: own_cpu(pid) if pid == me else tree_cpu(pid) for name, pid in pids.items()})

    def since(self, before: CpuSample) -> dict[str, float]:
        return {n: self.seconds[n] - before.seconds.get(n, 0.0) for n in self.seconds}


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def report(spent: dict[str, float], count: int, wall_s: float) -> list[str]:
    """Lines: each process's CPU seconds, its share of the wall time, and microseconds per item."""
    lines = [f"  {'process':<22}{'CPU s':>8}{'% of one core':>15}{'us/envelope':>13}"]
    for name, s in sorted(spent.items(), key=lambda kv: -kv[1]):
        lines.append(f"  {name:<22}{s:8.2f}{100 * s / wall_s:14.0f}%{1e6 * s / max(count, 1):13.0f}")
    total = sum(spent.values())
    lines.append(f"  {'all':<22}{total:8.2f}{100 * total / wall_s:14.0f}%{1e6 * total / max(count, 1):13.0f}")
    return lines
