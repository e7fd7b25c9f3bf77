"""Signing envelopes: the signature covers the Avro single-object bytes with an empty signature."""

from __future__ import annotations

from contracts.avro import encode_envelope
from contracts.models import Envelope
from governance.identity import hmac_sign


def hmac_sign_envelope(env: Envelope, key: bytes) -> Envelope:
    unsigned = encode_envelope(env.unsigned())
    return env.model_copy(update={"signature": hmac_sign(key, unsigned)})
