"""CLAM settings (G-16, X-29): every threshold lives in the deployment's config, none in the code.

Defaults are X-29's: promote at score >= 3, decay below 2 (so an unconfirmed node, score 1, is forgotten
once idle for longer than 60 minutes), GC every 5 minutes. ``from_mapping`` reads the ``[clam]`` section
of the config file; ``from_env`` reads ``HIVEMEM_CLAM_<KEY>`` variables from a mapping the caller passes
(this package does no I/O). Both refuse unknown keys and wrong types with ValueError naming the key.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from governance.clam.renderer import LANGUAGES

ENV_PREFIX = "HIVEMEM_CLAM_"


@dataclass(frozen=True)
class ClamConfig:
    promotion_threshold: int = 3
    min_score: int = 2
    decay_time_ms: int = 60 * 60_000
    gc_interval_ms: int = 5 * 60_000
    link_top_k: int = 3
    link_min_similarity: float = 0.3
    critic_enabled: bool = True
    language: str = "en"
    max_deductions: int = 16  # bound on the perceiver's output per exchange
    use_llm: bool = True  # the LLM perceiver, critic and renderer when HIVEMEM_LLM_URL is set; false: local only

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            _check_type(f.name, getattr(self, f.name), _TYPES[f.name])
        if self.min_score > self.promotion_threshold:
            # a score in [threshold, min_score) would qualify for promotion and decay at once
            raise ValueError(
                f"min_score ({self.min_score}) must be <= promotion_threshold ({self.promotion_threshold})"
            )
        for name in ("decay_time_ms", "link_top_k"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        for name in ("gc_interval_ms", "max_deductions"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        if not 0.0 <= self.link_min_similarity <= 1.0:
            raise ValueError(f"link_min_similarity must be in [0, 1], got {self.link_min_similarity}")
        if self.language not in LANGUAGES:
            raise ValueError(f"language must be one of {LANGUAGES}, got {self.language!r}")

    @classmethod
    def from_mapping(cls, m: Mapping[str, Any]) -> ClamConfig:
        """From a parsed ``[clam]`` section; absent keys keep their defaults."""
        unknown = sorted(str(k) for k in m if k not in _TYPES)
        if unknown:
            raise ValueError(f"unknown clam config key {unknown[0]!r} (known: {sorted(_TYPES)})")
        for key, value in m.items():
            _check_type(key, value, _TYPES[key])
        values: dict[str, Any] = {k: float(v) if _TYPES[k] is float else v for k, v in m.items()}
        return cls(**values)

    @classmethod
    def from_env(cls, env: Mapping[str, str], prefix: str = ENV_PREFIX) -> ClamConfig:
        """From ``<prefix><KEY>`` variables (text); other variables are ignored, unknown ``<prefix>*`` refused."""
        parsed: dict[str, Any] = {}
        for name, text in env.items():
            if not name.startswith(prefix):
                continue
            key = name[len(prefix) :].lower()
            if key not in _TYPES:
                raise ValueError(f"unknown clam config key {name!r}")
            parsed[key] = _parse_text(name, text, _TYPES[key])
        return cls.from_mapping(parsed)


_TYPES: Mapping[str, type] = {f.name: {"int": int, "float": float, "bool": bool, "str": str}[str(f.type)]
                              for f in dataclasses.fields(ClamConfig)}  # fmt: skip


def _check_type(key: str, value: Any, want: type) -> None:
    # bool is an int in Python: refuse it where a number is meant, and numbers where a flag is meant
    ok = (
        isinstance(value, bool)
        if want is bool
        else (not isinstance(value, bool) and isinstance(value, int | float if want is float else want))
    )
    if not ok:
        raise ValueError(f"clam config key {key!r} must be {want.__name__}, got {type(value).__name__} {value!r}")


def _parse_text(name: str, text: str, want: type) -> Any:
    s = text.strip()
    try:
        if want is bool:
            flags = {"true": True, "1": True, "yes": True, "on": True, "false": False, "0": False, "no": False,
                     "off": False}  # fmt: skip
            return flags[s.lower()]
        if want is int:
            return int(s)
        if want is float:
            return float(s)
    except (KeyError, ValueError):
        raise ValueError(f"clam config key {name!r} must be {want.__name__}, got {text!r}") from None
    return s
