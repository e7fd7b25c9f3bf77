"""The LLM tests run only when asked for with ``-m llm`` (``bash deploy/llm_test.sh``): a plain ``pytest`` (as in
``./run.sh test``) deselects them, so CI never starts a model server. Their refusal counts are summed up at
the end of the run."""

from __future__ import annotations

from dataclasses import dataclass

import pytest


@dataclass
class Call:
    method: str  # summarize, extract_facts, classify, abstract
    attempts: int  # answers the server gave (refused + the accepted one, if any)
    refusals: int  # answers LlmConsolidator refused
    outcome: str  # "accepted" or "ConsolidationError"


CALLS: list[Call] = []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "llm" in (config.getoption("markexpr") or ""):
        return  # -m llm (or an expression naming it): pytest's own marker selection applies
    llm = [item for item in items if item.get_closest_marker("llm") is not None]
    if llm:
        items[:] = [item for item in items if item.get_closest_marker("llm") is None]
        config.hook.pytest_deselected(items=llm)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not CALLS:
        return
    terminalreporter.section("LLM answers refused (malformed or invalid)")
    for c in CALLS:
        terminalreporter.write_line(f"{c.method:<14} {c.refusals}/{c.attempts} answers refused -> {c.outcome}")
    refused, attempts = sum(c.refusals for c in CALLS), sum(c.attempts for c in CALLS)
    terminalreporter.write_line(f"{'total':<14} {refused}/{attempts} answers refused")
