"""The claw-side SDK: build, sign and publish envelopes; presence heartbeats."""

from producers.claw_client import ClawClient, ConsistencyToken

__all__ = ["ClawClient", "ConsistencyToken"]
