"""What the KMMS embedder embeds of an episode: a user's round as one vector of its user's lines by default (its replies
too with ``round_replies``, HIVEMEM_KMMS_ROUND_REPLIES), its sentences too only
with ``round_sentences`` (HIVEMEM_KMMS_ROUND_SENTENCES); a document's sentences always (docs/kmms.md)."""

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


def _stored(conversation: bool) -> LogRecord:
    payload: dict[str, object] = {"episodeId": "e1", "about": "memory", "content": SAID, "occurredAt": 1_000,
                                  "sessionId": "s1", "userId": "u1"}  # fmt: skip
    if conversation:
        payload |= {"contentType": "CONVERSATION", "turns": [{"role": "user", "content": SAID},
                                                             {"role": "assistant", "content": "Noted."}]}  # fmt: skip
    env = encode_envelope(offline_client("acme", "claw-1").build("episode", payload))
    out = KmmsDriver(NAMES, {"acme": "redact"}).pipe(NAMES.accepted("episode"), env, 5_000)
    return LogRecord(out[0].topic, 0, 0, 5_000, out[0].key, out[0].value)


def _embedded(conversation: bool, round_sentences: bool) -> list[str]:
    p = KmmsEmbedderProcessor(NAMES, CountingEmbedder(), round_sentences)
    return [decode_kmms(o.value, KmmsEmbedding).unit_id for o in p.process([_stored(conversation)], 6_000)]


def test_a_users_round_is_one_vector_unless_round_sentences() -> None:
    assert _embedded(conversation=True, round_sentences=False) == ["e1#0"]
    assert _embedded(conversation=True, round_sentences=True) == ["e1#0", "e1#0~s0", "e1#0~s1", "e1#0~s2"]


def test_a_documents_sentences_are_always_embedded() -> None:
    for on in (False, True):
        assert _embedded(conversation=False, round_sentences=on) == ["e1#0", "e1#0~s0", "e1#0~s1", "e1#0~s2"]


def test_the_setting_reads_0_or_1_and_refuses_anything_else(monkeypatch: pytest.MonkeyPatch) -> None:
    from hivemem.kmms_wiring import round_sentences

    monkeypatch.delenv("HIVEMEM_KMMS_ROUND_SENTENCES", raising=False)
    assert round_sentences() is False
    for raw, want in (("1", True), ("true", True), ("0", False), ("no", False)):
        monkeypatch.setenv("HIVEMEM_KMMS_ROUND_SENTENCES", raw)
        assert round_sentences() is want
    monkeypatch.setenv("HIVEMEM_KMMS_ROUND_SENTENCES", "sometimes")
    with pytest.raises(ValueError, match="HIVEMEM_KMMS_ROUND_SENTENCES"):
        round_sentences()


def _texts(round_replies: bool) -> list[str]:
    embedder = CountingEmbedder()
    KmmsEmbedderProcessor(NAMES, embedder, round_replies=round_replies).process([_stored(True)], 6_000)
    return embedder.texts


def test_a_rounds_vector_reads_its_replies_only_with_round_replies() -> None:
    assert _texts(round_replies=False) == [SAID]
    assert _texts(round_replies=True) == [f"{SAID}\nNoted."]


@pytest.mark.parametrize("name", ["HIVEMEM_KMMS_ROUND_REPLIES", "HIVEMEM_KMMS_ROUND_WHOLE"])
def test_a_round_switch_reads_0_or_1_and_refuses_anything_else(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    from hivemem import kmms_wiring

    switch = {"HIVEMEM_KMMS_ROUND_REPLIES": kmms_wiring.round_replies,
              "HIVEMEM_KMMS_ROUND_WHOLE": kmms_wiring.round_whole}[name]  # fmt: skip
    monkeypatch.delenv(name, raising=False)
    assert switch() is False
    monkeypatch.setenv(name, "1")
    assert switch() is True
    monkeypatch.setenv(name, "maybe")
    with pytest.raises(ValueError, match=name):
        switch()


def _whole(round_whole: bool, conversation: bool = True) -> list[tuple[str, str]]:
    embedder = CountingEmbedder()
    outs = KmmsEmbedderProcessor(NAMES, embedder, round_whole=round_whole).process([_stored(conversation)], 6_000)
    return list(zip((decode_kmms(o.value, KmmsEmbedding).unit_id for o in outs), embedder.texts, strict=True))


def test_round_whole_gives_a_round_with_replies_a_second_vector_of_its_whole_text() -> None:
    assert _whole(round_whole=False) == [("e1#0", SAID)]
    assert _whole(round_whole=True) == [("e1#0", SAID), ("e1#0~s8", f"{SAID}\nNoted.")]
    # a document has no replies: its sentences, no whole-round vector
    assert [u for u, _ in _whole(round_whole=True, conversation=False)] == ["e1#0", "e1#0~s0", "e1#0~s1", "e1#0~s2"]


def test_the_whole_rounds_vector_belongs_to_its_unit() -> None:
    from governance.kmms.units import is_sentence, unit_of, whole_round_id
    from projections.kmms.sql import FAMILY

    assert is_sentence(whole_round_id("e1#0")) and unit_of(whole_round_id("e1#0")) == "e1#0"
    assert f"'{whole_round_id('')}'" in FAMILY  # the search reads it with the unit's own vectors
