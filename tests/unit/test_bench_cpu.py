"""The machine line every bench prints (bench/cpu.py): enough to tell two machines of the same name apart."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.cpu import cpu_model, per_item, python_speed


@pytest.mark.skipif(not Path("/proc/cpuinfo").exists(), reason="Linux /proc only")
def test_the_cpu_is_named_with_its_family_model_and_clock() -> None:
    text = Path("/proc/cpuinfo").read_text()
    name = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    described = cpu_model()
    assert name is not None and described.startswith(name.group(1).strip())
    if re.search(r"^cpu family", text, re.MULTILINE):
        assert re.search(r"family \d+ model \d+", described)
    if re.search(r"^cpu MHz", text, re.MULTILINE):
        assert re.search(r"\d+ MHz", described)


def test_python_speed_is_a_time_in_milliseconds() -> None:
    m = re.search(r"calibration (\d+\.\d) ms", python_speed())
    assert m is not None and 0 < float(m.group(1)) < 10_000


def test_the_memory_bench_prints_each_processs_cpu_per_search_largest_first() -> None:
    spent = {"api": 1.71, "postgres": 1.27, "kafka": 0.18, "gate": 0.004}  # seconds over 100 searches
    assert per_item(spent, 100) == "api 17.1, postgres 12.7, kafka 1.8"  # gate's 0.04 ms left out
    assert per_item({"api": 0.0}, 100) == "none"
