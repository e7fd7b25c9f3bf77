"""CLAM config (G-16, X-29): the defaults, every key settable from a mapping or env, bad keys and types refused."""

from __future__ import annotations

import dataclasses
import tomllib
from typing import Any

import pytest

from governance.clam.config import ClamConfig


def test_x29_defaults() -> None:
    c = ClamConfig()
    assert (c.promotion_threshold, c.min_score, c.decay_time_ms, c.gc_interval_ms) == (3, 2, 3_600_000, 300_000)
    assert (c.link_top_k, c.link_min_similarity, c.critic_enabled, c.language, c.max_deductions) == (
        3, 0.3, True, "en", 16)  # fmt: skip


def test_every_field_from_a_toml_section() -> None:
    doc = tomllib.loads("""
[clam]
promotion_threshold = 5
min_score = 0
decay_time_ms = 1000
gc_interval_ms = 10
link_top_k = 1
link_min_similarity = 1
critic_enabled = false
language = "it"
max_deductions = 4
use_llm = false
""")
    c = ClamConfig.from_mapping(doc["clam"])
    assert c == ClamConfig(5, 0, 1000, 10, 1, 1.0, False, "it", 4, False)
    assert isinstance(c.link_min_similarity, float)  # an int in TOML is taken as the float it means
    assert {f.name for f in dataclasses.fields(ClamConfig)} == set(doc["clam"])  # the test covers every key


def test_absent_keys_keep_defaults() -> None:
    assert ClamConfig.from_mapping({}) == ClamConfig()
    assert ClamConfig.from_mapping({"language": "de"}) == ClamConfig(language="de")


@pytest.mark.parametrize("m,key", [
    ({"promotion_treshold": 3}, "promotion_treshold"),      # a typo is not silently ignored
    ({"decay_time_minutes": 60}, "decay_time_minutes"),     # upstream's name is not ours
    ({"promotion_threshold": "3"}, "promotion_threshold"),  # text where an int is meant
    ({"promotion_threshold": 3.0}, "promotion_threshold"),
    ({"min_score": True}, "min_score"),                     # bool is an int in Python, not here
    ({"critic_enabled": 1}, "critic_enabled"),
    ({"link_min_similarity": "0.3"}, "link_min_similarity"),
    ({"language": 1}, "language"),
])  # fmt: skip
def test_bad_key_or_type_refused_naming_the_key(m: dict[str, Any], key: str) -> None:
    with pytest.raises(ValueError, match=key):
        ClamConfig.from_mapping(m)


@pytest.mark.parametrize("m,key", [
    ({"language": "pt"}, "language"),
    ({"link_min_similarity": 1.5}, "link_min_similarity"),
    ({"link_min_similarity": float("nan")}, "link_min_similarity"),
    ({"gc_interval_ms": 0}, "gc_interval_ms"),
    ({"decay_time_ms": -1}, "decay_time_ms"),
    ({"link_top_k": -1}, "link_top_k"),
    ({"max_deductions": 0}, "max_deductions"),
    ({"min_score": 4}, "min_score"),  # above the promotion threshold: a node could be promoted and decay at once
])  # fmt: skip
def test_out_of_range_refused(m: dict[str, Any], key: str) -> None:
    with pytest.raises(ValueError, match=key):
        ClamConfig.from_mapping(m)


def test_from_env() -> None:
    env = {"HIVEMEM_CLAM_PROMOTION_THRESHOLD": "4", "HIVEMEM_CLAM_CRITIC_ENABLED": "false",
           "HIVEMEM_CLAM_LINK_MIN_SIMILARITY": "0.5", "HIVEMEM_CLAM_LANGUAGE": "fr", "PATH": "/bin"}  # fmt: skip
    assert ClamConfig.from_env(env) == ClamConfig(promotion_threshold=4, critic_enabled=False, link_min_similarity=0.5,
                                                  language="fr")  # fmt: skip
    with pytest.raises(ValueError, match="HIVEMEM_CLAM_PROMOTION"):
        ClamConfig.from_env({"HIVEMEM_CLAM_PROMOTION": "4"})
    with pytest.raises(ValueError, match="HIVEMEM_CLAM_MIN_SCORE"):
        ClamConfig.from_env({"HIVEMEM_CLAM_MIN_SCORE": "two"})
    with pytest.raises(ValueError, match="HIVEMEM_CLAM_CRITIC_ENABLED"):
        ClamConfig.from_env({"HIVEMEM_CLAM_CRITIC_ENABLED": "maybe"})
