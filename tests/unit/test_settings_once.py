"""Settings are read once, in hivemem/settings.py (and the composition root, hivemem/), into typed values passed
down: no module of the product packages reads the environment (docs/architecture.md, "Settings")."""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

import pytest

from governance.kmms.search_config import DEFAULT, SearchConfig
from governance.kmms.voice import VoiceWeights
from hivemem.settings import search_config_from_env
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
    assert (DEFAULT.text_weight, DEFAULT.rrf_k, DEFAULT.voice) == (1.0, 10, VoiceWeights(0.0, 0.0, 0.0))
    assert (DEFAULT.said_text, DEFAULT.split_window, DEFAULT.feedback_beta, DEFAULT.common_share) == (
        False, 4000, 0.0, 0.01)  # fmt: skip
    assert (DEFAULT.recency, DEFAULT.same_topic, DEFAULT.fact_topic, DEFAULT.change_similarity) == (0.0, 2.0, 0.3, 0.3)
    assert (DEFAULT.window_margin, DEFAULT.drill_similarity, DEFAULT.drill_weight) == (2.0, 2.0, 1.0)
    assert DEFAULT.window_weight == 2.0 and DEFAULT.point_window is True and DEFAULT.text_dates is True
    assert (DEFAULT.tau, DEFAULT.abstain_below) == (queries.TAU, queries.ABSTAIN_BELOW)
    assert DEFAULT.statement_weight == 0.0 and DEFAULT.text_neighbours is True and DEFAULT.speaker_names is False
    assert DEFAULT.episode_model is True


def test_each_variable_sets_its_knob() -> None:
    env = {"HIVEMEM_KMMS_TEXT_WEIGHT": "0.25", "HIVEMEM_KMMS_RRF_K": "60", "HIVEMEM_KMMS_VOICE_ASKED": "0.1",
           "HIVEMEM_KMMS_VOICE_TOLD": "0.1", "HIVEMEM_KMMS_VOICE_REPLY": "0.2", "HIVEMEM_KMMS_SAID_TEXT": "1",
           "HIVEMEM_KMMS_SPLIT_WINDOW": "1000000000", "HIVEMEM_KMMS_FEEDBACK": "0.5",
           "HIVEMEM_KMMS_COMMON_LEXEME": "1", "HIVEMEM_KMMS_RECENCY": "0.05", "HIVEMEM_KMMS_SAME_TOPIC": "0.45",
           "HIVEMEM_KMMS_FACT_TOPIC": "0.4", "HIVEMEM_KMMS_NAMED_CHANGE": "2", "HIVEMEM_KMMS_WINDOW_MARGIN": "0.2",
           "HIVEMEM_KMMS_WINDOW_WEIGHT": "0", "HIVEMEM_KMMS_POINT_WINDOW": "0", "HIVEMEM_KMMS_TEXT_DATES": "0",
           "HIVEMEM_KMMS_DRILL": "0.35", "HIVEMEM_KMMS_DRILL_WEIGHT": "0.5", "HIVEMEM_KMMS_TAU": "0.5",
           "HIVEMEM_KMMS_ABSTAIN": "0.25", "HIVEMEM_KMMS_STATEMENT": "0.5",
           "HIVEMEM_KMMS_TEXT_NEIGHBOURS": "0", "HIVEMEM_KMMS_SPEAKER_NAMES": "1",
           "HIVEMEM_KMMS_EPISODE_MODEL": "0"}  # fmt: skip
    cfg = search_config_from_env(env)
    changed = {f.name for f in fields(SearchConfig) if getattr(cfg, f.name) != getattr(DEFAULT, f.name)}
    assert changed == {f.name for f in fields(SearchConfig)}
    assert cfg.voice == VoiceWeights(0.1, 0.1, 0.2) and cfg.rrf_k == 60 and cfg.said_text is True


@pytest.mark.parametrize("off", ["0", "false", "no", " 0 "])
def test_said_text_is_on_for_any_other_value(off: str) -> None:
    assert search_config_from_env({"HIVEMEM_KMMS_SAID_TEXT": off}).said_text is False
    assert search_config_from_env({"HIVEMEM_KMMS_SAID_TEXT": "yes"}).said_text is True
    assert search_config_from_env({"HIVEMEM_KMMS_TEXT_NEIGHBOURS": off}).text_neighbours is False
    assert search_config_from_env({"HIVEMEM_KMMS_TEXT_NEIGHBOURS": "1"}).text_neighbours is True
    assert search_config_from_env({"HIVEMEM_KMMS_SPEAKER_NAMES": off}).speaker_names is False
    assert search_config_from_env({"HIVEMEM_KMMS_SPEAKER_NAMES": "1"}).speaker_names is True
    assert search_config_from_env({"HIVEMEM_KMMS_EPISODE_MODEL": off}).episode_model is False
    assert search_config_from_env({"HIVEMEM_KMMS_EPISODE_MODEL": "1"}).episode_model is True


BAD = [
    ("HIVEMEM_KMMS_TEXT_WEIGHT", "two"),
    ("HIVEMEM_KMMS_RRF_K", "10.5"),
    ("HIVEMEM_KMMS_FEEDBACK", ""),
    ("HIVEMEM_KMMS_TAU", "nan"),
    ("HIVEMEM_KMMS_VOICE_TOLD", "x"),
    ("HIVEMEM_KMMS_SPLIT_WINDOW", "4k"),
]


@pytest.mark.parametrize(("name", "raw"), BAD)
def test_a_bad_value_is_refused_naming_its_variable(name: str, raw: str) -> None:
    with pytest.raises(ValueError, match=name):
        search_config_from_env({name: raw})
