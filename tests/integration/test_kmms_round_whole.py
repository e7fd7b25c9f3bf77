"""``HIVEMEM_KMMS_ROUND_WHOLE`` through the real read model: a user's round with a reply gets a second vector, of its
whole text, and the search ranks the round by the better of its two.

The session stack embeds with the switch off (the default). The test reads the stored episode back from Kafka, runs
the KMMS embedder's step on it with the switch on (the real MiniLM), and sends the second vector to the embeddings
topic as the embedder would; the stack's projector folds it into Postgres, and the search over HTTP then finds the
round by what the assistant said in it."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Producer

from contracts.kmms_records import KmmsEmbedding, KmmsEvent, decode_kmms
from governance.kmms.units import whole_round_id
from hivemem.stack import Stack
from inference.minilm import MiniLmEmbedder
from processors.kmms.embedder import KmmsEmbedderProcessor
from producers.memory_client import MemoryClient
from streams.kafka import producer_config, read_topics
from tests.conftest import wait_until
from tests.integration.kmms_support import memory
from tests.integration.support import owner_db

pytestmark = pytest.mark.integration

CLAW = f"whole-{uuid.uuid4().hex[:6]}"
REPLY = "Try a Thai green curry with chicken, jasmine rice and fresh basil."
ASKED = [{"role": "user", "content": "Any idea what I could cook tonight?"}, {"role": "assistant", "content": REPLY}]
TOLD = [
    {"role": "user", "content": "I had pasta with pesto for dinner yesterday."},
    {"role": "assistant", "content": "Sounds tasty."},
]
QUESTION = "Which curry with jasmine rice did you recommend?"
AS_OF = "2026-06-01T00:00:00Z"


@pytest.fixture(scope="module")
def mem(stack: Stack) -> tuple[MemoryClient, str]:
    m = memory(stack, "mem-a", claw=CLAW, user_id="ana")
    asked = m.add(ASKED, session_id="asked", occurred_at="2026-05-01T10:00:00Z").episode_id
    told = m.add(TOLD, session_id="told", occurred_at="2026-05-02T10:00:00Z").episode_id
    m.wait_indexed([asked, told], timeout_s=120)
    return m, asked


def _similarity(m: MemoryClient, session: str) -> float:
    hits = m.search(QUESTION, k=5, as_of=AS_OF, mode="vector").hits
    return max((h.similarity for h in hits if h.session_id == session), default=-1.0)


def _family(stack: Stack, unit: str) -> list[str]:
    with owner_db(stack) as conn:
        rows = conn.execute("SELECT unit_id FROM kmms.kmms_vectors WHERE tenant = 'mem-a' AND claw_id = %s AND "
                            "unit_id LIKE %s ORDER BY 1", (CLAW, f"{unit}%")).fetchall()  # fmt: skip
    return [str(r[0]) for r in rows]


def test_the_whole_rounds_vector_finds_a_round_by_its_reply(mem: tuple[MemoryClient, str], stack: Stack) -> None:
    m, episode = mem
    unit = f"{episode}#0"
    assert _family(stack, unit) == [unit]  # the default: the user's lines only
    before = _similarity(m, "asked")

    stored = [r for r in read_topics(stack.settings.require_kafka(), [stack.settings.topics.kmms_events])
              if (ev := decode_kmms(r.value or b"", KmmsEvent)).kind == "EPISODE_STORED"
              and ev.episode is not None and ev.episode.episode_id == episode]  # fmt: skip
    assert len(stored) == 1, stored
    step = KmmsEmbedderProcessor(stack.settings.topics, MiniLmEmbedder(), round_whole=True)
    outs = step.process(stored, stored[0].timestamp)
    assert [decode_kmms(o.value, KmmsEmbedding).unit_id for o in outs] == [unit, whole_round_id(unit)]
    producer = Producer(producer_config(stack.settings.require_kafka()))
    for o in outs[1:]:
        producer.produce(o.topic, o.value, o.key, partition=o.partition, headers=list(o.headers))
    assert producer.flush(30) == 0

    wait_until(lambda: _family(stack, unit) == [unit, whole_round_id(unit)], timeout=60, interval=0.5,
               what="the whole round's vector folded")  # fmt: skip
    after = _similarity(m, "asked")
    # The reply names what the question asks for: the round now ranks by its whole text's vector.
    assert after > before + 0.1, (before, after)
    hits = m.search(QUESTION, k=5, as_of=AS_OF, mode="vector").hits
    assert [h.session_id for h in hits][:1] == ["asked"], hits
    assert [h.session_id for h in hits].count("asked") == 1, hits  # one round, one hit: its two vectors are one unit
