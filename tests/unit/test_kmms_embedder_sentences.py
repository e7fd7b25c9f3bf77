"""What the KMMS embedder embeds of an episode: a user's round as one vector of its user's lines (its replies too with
``round_replies``, HIVEMEM_KMMS_ROUND_REPLIES), never its sentences; a document's sentences always (docs/kmms.md)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from contracts.avro import encode_envelope
from contracts.kmms_records import KmmsEmbedding, decode_kmms
from contracts.topics import TopicNames
from inference.embedding_base import EmbedderHealth
from processors.kmms.core import KmmsDriver
from processors.kmms.embedder import KmmsEmbedderProcessor
from streams.records import LogRecord
from tests.helpers import offline_client

NAMES = TopicNames()
SAID = "I moved to Porto last week. Anyway, my go-to café is The Daily Grind. It opens at seven."


class CountingEmbedder:
    """A pure double: one fixed vector per text, and the texts it was asked for."""

    model_id, dim = "test-model", 3

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts += texts
        return [[1.0, 0.0, 0.0] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0, 0.0, 0.0]

    def health(self) -> EmbedderHealth:
        return EmbedderHealth(ok=True, model_id=self.model_id, dim=self.dim, detail="")


def _stored(conversation: bool, reply: bool = True) -> LogRecord:
    payload: dict[str, object] = {"episodeId": "e1", "about": "memory", "content": SAID, "occurredAt": 1_000,
                                  "sessionId": "s1", "userId": "u1"}  # fmt: skip
    if conversation:
        replies = [{"role": "assistant", "content": "Noted."}] if reply else []
        payload |= {"contentType": "CONVERSATION", "turns": [{"role": "user", "content": SAID}, *replies]}
    env = encode_envelope(offline_client("acme", "claw-1").build("episode", payload))
    out = KmmsDriver(NAMES, {"acme": "redact"}).pipe(NAMES.accepted("episode"), env, 5_000)
    return LogRecord(out[0].topic, 0, 0, 5_000, out[0].key, out[0].value)


def _embedded(conversation: bool) -> list[str]:
    p = KmmsEmbedderProcessor(NAMES, CountingEmbedder())
    outs = [decode_kmms(o.value, KmmsEmbedding) for o in p.process([_stored(conversation)], 6_000)]
    assert all(o.voice == "" for o in outs)  # no longer set since 2026-12-05 (the record keeps the field)
    return [o.unit_id for o in outs]


def test_a_users_round_is_one_vector() -> None:
    assert _embedded(conversation=True) == ["e1#0"]


def test_a_documents_sentences_are_embedded() -> None:
    assert _embedded(conversation=False) == ["e1#0", "e1#0~s0", "e1#0~s1", "e1#0~s2"]


def test_the_removed_switch_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    from hivemem.kmms_wiring import no_removed_switches

    monkeypatch.delenv("HIVEMEM_KMMS_ROUND_SENTENCES", raising=False)
    no_removed_switches()
    monkeypatch.setenv("HIVEMEM_KMMS_ROUND_SENTENCES", "1")
    with pytest.raises(ValueError, match="HIVEMEM_KMMS_ROUND_SENTENCES: removed"):
        no_removed_switches()


class TokenEmbedder(CountingEmbedder):
    """A double that gives token states too (as the bundled MiniLM does): 128 bytes a word."""

    def embed_with_tokens(self, texts: Sequence[str]) -> list[tuple[list[float], bytes]]:
        return [(v, b"\x01" * 128 * len(t.split())) for v, t in zip(self.embed(texts), texts, strict=True)]

    def query_with_tokens(self, text: str) -> tuple[list[float], object]:
        return self.embed_query(text), None


def test_a_units_own_vector_carries_its_token_states_when_it_reads_the_whole_unit() -> None:
    p = KmmsEmbedderProcessor(NAMES, TokenEmbedder())
    doc = [decode_kmms(o.value, KmmsEmbedding) for o in p.process([_stored(False)], 6_000)]
    assert [(o.unit_id, len(o.tokens) // 128) for o in doc] == [("e1#0", len(SAID.split())), ("e1#0~s0", 0),
                                                                ("e1#0~s1", 0), ("e1#0~s2", 0)]  # fmt: skip
    alone = [decode_kmms(o.value, KmmsEmbedding) for o in p.process([_stored(True, reply=False)], 6_000)]
    assert [(o.unit_id, len(o.tokens) > 0) for o in alone] == [("e1#0", True)]  # a round of the user's lines only
    # A round with a reply is embedded from its user's lines: a reading of those would miss the reply. None kept,
    # unless its vector reads the replies too.
    chat = [decode_kmms(o.value, KmmsEmbedding) for o in p.process([_stored(True)], 6_000)]
    assert [(o.unit_id, len(o.tokens) > 0) for o in chat] == [("e1#0", False)]
    whole = KmmsEmbedderProcessor(NAMES, TokenEmbedder(), round_replies=True).process([_stored(True)], 6_000)
    assert [len(decode_kmms(o.value, KmmsEmbedding).tokens) > 0 for o in whole] == [True]
