"""The claw-side SDK: build, sign and publish envelopes; presence heartbeats."""

from contracts.positions import LogPosition
from producers.claw_client import ClawClient, ConsistencyToken
from producers.envelopes import build_envelope

__all__ = ["ClawClient", "ConsistencyToken", "LogPosition", "build_envelope"]
