"""Settings are read once, in hivemem/settings.py (and the composition root, hivemem/), into typed values passed
down: no module of the product packages reads the environment (docs/architecture.md, "Settings")."""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

import pytest

from governance.kmms.search_config import DEFAULT, SearchConfig
from hivemem.settings import REMOVED_SEARCH_SETTINGS, search_config_from_env
from projections.kmms import queries

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("contracts", "governance", "inference", "producers", "streams", "processors", "projections", "deploy")


def _reads_environment(tree: ast.AST) -> list[int]:
    """Lines of ``os.environ``, ``os.getenv``, ``os.putenv`` or ``from os import environ/getenv``."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "environb", "getenvb"):
            if isinstance(node.value, ast.Name) and node.value.id == "os":
                lines.append(node.lineno)
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module == "os"
            and any(a.name in ("environ", "getenv", "environb", "getenvb") for a in node.names)
        ):
            lines.append(node.lineno)
    return sorted(lines)


def test_no_product_module_reads_the_environment() -> None:
    found = [f"{path.relative_to(ROOT)}:{line}" for package in PRODUCT
             for path in sorted((ROOT / package).rglob("*.py"))
             for line in _reads_environment(ast.parse(path.read_text(), str(path)))]  # fmt: skip
    assert found == [], "read the setting in hivemem/settings.py and pass it down: " + ", ".join(found)


def test_the_scan_finds_a_read() -> None:
    assert _reads_environment(ast.parse("import os\nX = os.environ.get('A')\nY = os.getenv('B')")) == [2, 3]
    assert _reads_environment(ast.parse("from os import environ")) == [1]
    assert _reads_environment(ast.parse("import os\nP = os.pathsep")) == []


def test_the_search_settings_default_to_todays_values() -> None:
    assert search_config_from_env({}) == DEFAULT == SearchConfig()
    assert (DEFAULT.text_weight, DEFAULT.rrf_k, DEFAULT.split_window, DEFAULT.common_share) == (1.0, 10, 4000, 0.01)
    assert DEFAULT.fact_topic == 0.3 and DEFAULT.window_weight == 2.0
    assert DEFAULT.point_window is True and DEFAULT.text_dates is True
    assert (DEFAULT.tau, DEFAULT.abstain_below) == (queries.TAU, queries.ABSTAIN_BELOW) == (0.75, 0.30)
    assert DEFAULT.tau_current == 0.40
    assert DEFAULT.text_neighbours is True and DEFAULT.speaker_names is False and DEFAULT.episode_model is True
    assert DEFAULT.late is True


def test_each_variable_sets_its_knob() -> None:
    env = {"HIVEMEM_KMMS_TEXT_WEIGHT": "0.25", "HIVEMEM_KMMS_RRF_K": "60", "HIVEMEM_KMMS_SPLIT_WINDOW": "1000000000",
           "HIVEMEM_KMMS_COMMON_LEXEME": "1", "HIVEMEM_KMMS_FACT_TOPIC": "0.4", "HIVEMEM_KMMS_WINDOW_WEIGHT": "0",
           "HIVEMEM_KMMS_POINT_WINDOW": "0", "HIVEMEM_KMMS_TEXT_DATES": "0", "HIVEMEM_KMMS_TAU": "0.5",
           "HIVEMEM_KMMS_TAU_CURRENT": "0.3", "HIVEMEM_KMMS_ABSTAIN": "0.25", "HIVEMEM_KMMS_TEXT_NEIGHBOURS": "0",
           "HIVEMEM_KMMS_SPEAKER_NAMES": "1", "HIVEMEM_KMMS_EPISODE_MODEL": "0", "HIVEMEM_KMMS_LATE": "0"}  # fmt: skip
    cfg = search_config_from_env(env)
    changed = {f.name for f in fields(SearchConfig) if getattr(cfg, f.name) != getattr(DEFAULT, f.name)}
    assert changed == {f.name for f in fields(SearchConfig)}
    assert cfg.rrf_k == 60 and cfg.text_weight == 0.25


@pytest.mark.parametrize("off", ["0", "false", "no", " 0 "])
def test_a_switch_is_on_for_any_other_value(off: str) -> None:
    assert search_config_from_env({"HIVEMEM_KMMS_TEXT_NEIGHBOURS": off}).text_neighbours is False
    assert search_config_from_env({"HIVEMEM_KMMS_TEXT_NEIGHBOURS": "1"}).text_neighbours is True
    assert search_config_from_env({"HIVEMEM_KMMS_SPEAKER_NAMES": off}).speaker_names is False
    assert search_config_from_env({"HIVEMEM_KMMS_SPEAKER_NAMES": "1"}).speaker_names is True
    assert search_config_from_env({"HIVEMEM_KMMS_EPISODE_MODEL": off}).episode_model is False
    assert search_config_from_env({"HIVEMEM_KMMS_EPISODE_MODEL": "1"}).episode_model is True
    assert search_config_from_env({"HIVEMEM_KMMS_LATE": off}).late is False


@pytest.mark.parametrize("name", sorted(REMOVED_SEARCH_SETTINGS))
def test_a_removed_setting_is_refused_by_name_not_ignored(name: str) -> None:
    with pytest.raises(ValueError, match=f"{name}: removed on 2026-12-05"):
        search_config_from_env({name: "0.5"})


BAD = [
    ("HIVEMEM_KMMS_TEXT_WEIGHT", "two"),
    ("HIVEMEM_KMMS_RRF_K", "10.5"),
    ("HIVEMEM_KMMS_FACT_TOPIC", ""),
    ("HIVEMEM_KMMS_TAU", "nan"),
    ("HIVEMEM_KMMS_ABSTAIN", "x"),
    ("HIVEMEM_KMMS_SPLIT_WINDOW", "4k"),
]


@pytest.mark.parametrize(("name", "raw"), BAD)
def test_a_bad_value_is_refused_naming_its_variable(name: str, raw: str) -> None:
    with pytest.raises(ValueError, match=name):
        search_config_from_env({name: raw})
