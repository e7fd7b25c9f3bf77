"""KSTAR bundle format (seed §5.1): the names, versions and reason codes every bundle module shares, and the
small parsers they all need (times, versions, base64).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

FORMAT = "kstar-bundle"
VERSION = "1.0.0"
ENC_FORMAT = "kstar-bundle+enc"
KINDS = ("traces", "perceptions", "facts", "skills", "control_tokens")  # bundle memory sections, seed §5.1
TOKENS = "control_tokens"
ID_FIELD = {"traces": "id", "perceptions": "id", "facts": "id", "skills": "id", "control_tokens": "token_id"}
COUNT_FIELD = {
    "traces": "trace_count",
    "perceptions": "perception_count",
    "facts": "fact_count",
    "skills": "skill_count",
    # Not in the seed's statistics: counted so "statistics match contents" covers every memory section (a token
    # slipped into a bundle shows), and so an importer can warn before taking sensitive grants.
    "control_tokens": "token_count",
}
SIGNATURE_ALGORITHM = "ed25519"
DEFAULT_MAX_BYTES = 1 << 30

_MAJOR = VERSION.split(".", 1)[0]
_VERSION_RE = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)")


class BundleError(Exception):
    """A bundle or envelope that cannot be built, read or trusted; ``code`` is a stable reason code."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail


def parse_time(value: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(value)
    except (TypeError, ValueError, OverflowError):
        raise BundleError("BUNDLE_BAD_FORMAT", "a record time is not an ISO-8601 time") from None
    # Naive times are taken as UTC: the seed writes every time as UTC.
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).astimezone(UTC)


def check_version(document: Mapping[str, Any]) -> None:
    version = document.get("version")
    match = _VERSION_RE.fullmatch(version) if isinstance(version, str) else None
    if match is None:
        raise BundleError("BUNDLE_BAD_FORMAT", "version is not MAJOR.MINOR.PATCH")
    if match.group(1) != _MAJOR:
        raise BundleError("BUNDLE_BAD_FORMAT", f"unsupported bundle major version (this reads {_MAJOR}.x)")


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def unb64(value: Any, what: str, code: str = "BUNDLE_BAD_FORMAT") -> bytes:
    if not isinstance(value, str):
        raise BundleError(code, f"{what} is not a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise BundleError(code, f"{what} is not valid base64") from None
