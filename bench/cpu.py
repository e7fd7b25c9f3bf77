"""CPU seconds per process (user + system, from /proc), for "CPU time per envelope per process".

A figure of envelopes/s alone does not say which process is the limit, nor why two machines
differ; the CPU each process spent during a measured phase does. Linux only (/proc).
"""

from __future__ import annotations

import os
import platform
import time
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
    """The CPU's name with its family, model and clock, and the hypervisor if any: "AMD EPYC" alone names
    machines years apart (two such VMs of this project differed threefold in CPU per envelope), and a
    pure-Python calibration (``python_speed``) says how fast this one runs HiveMem's kind of code."""
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        return platform.processor() or "unknown CPU"
    name = fields.get("model name") or platform.processor() or "unknown CPU"
    detail = [f"family {fields['cpu family']} model {fields['model']}" if "cpu family" in fields else "",
              f"{float(fields['cpu MHz']):.0f} MHz" if "cpu MHz" in fields else "",
              "virtual" if "hypervisor" in fields.get("flags", "").split() else ""]  # fmt: skip
    extra = ", ".join(d for d in detail if d)
    return f"{name} ({extra})" if extra else name


def python_speed() -> str:
    """Milliseconds for a fixed pure-Python loop (best of five): compare machines by it, lower is faster."""
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        total = 0
        for i in range(300_000):
            total += i * i % 7
        best = min(best, time.perf_counter() - t0)
    return f"pure-Python calibration {1000 * best:.1f} ms (300,000 loop steps, best of 5; lower is faster)"


def per_item(spent: dict[str, float], count: int) -> str:
    """Each process's CPU milliseconds per item, largest first ("api 17.9, postgres 14.2"); under 0.05 ms left out."""
    ms = sorted(((name, 1000 * s / max(count, 1)) for name, s in spent.items()), key=lambda t: -t[1])
    return ", ".join(f"{name} {v:.1f}" for name, v in ms if v >= 0.05) or "none"


def report(spent: dict[str, float], count: int, wall_s: float) -> list[str]:
    """Lines: each process's CPU seconds, its share of the wall time, and microseconds per item."""
    lines = [f"  {'process':<22}{'CPU s':>8}{'% of one core':>15}{'us/envelope':>13}"]
    for name, s in sorted(spent.items(), key=lambda kv: -kv[1]):
        lines.append(f"  {name:<22}{s:8.2f}{100 * s / wall_s:14.0f}%{1e6 * s / max(count, 1):13.0f}")
    total = sum(spent.values())
    lines.append(f"  {'all':<22}{total:8.2f}{100 * total / wall_s:14.0f}%{1e6 * total / max(count, 1):13.0f}")
    return lines
