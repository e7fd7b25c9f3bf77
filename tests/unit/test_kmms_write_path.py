"""The kmms processor on the in-memory driver: one verdict per episode — stored (redacted under the
tenant's ``redact`` policy), PII_REJECTED under ``reject``, DUPLICATE_CONTENT, DUPLICATE_EPISODE."""

from __future__ import annotations

from contracts.avro import decode_rejection, encode_envelope
from contracts.kmms_records import KmmsEpisode, KmmsEvent, decode_kmms
from contracts.topics import TopicNames
from governance.kmms.units import episode_of, first_of_each_episode, units_of
from processors.kmms.core import InMemorySeen, KmmsDriver, KmmsProcessor
from streams.records import LogRecord
from tests.helpers import offline_client

NAMES = TopicNames()
TOPIC = NAMES.accepted("episode")


def episode(eid: str, text: str, user: str = "u1", turns: bool = True) -> bytes:
    payload: dict[str, object] = {"episodeId": eid, "about": "memory", "content": text, "occurredAt": 1_000,
                                  "sessionId": f"s-{eid}", "userId": user}  # fmt: skip
    if turns:
        payload |= {"contentType": "CONVERSATION", "turns": [{"role": "user", "content": text},
                                                             {"role": "assistant", "content": "Noted."}]}  # fmt: skip
    return encode_envelope(offline_client("acme", "claw-1").build("episode", payload))


def verdicts(outs: list) -> list[str]:  # type: ignore[type-arg]
    return [decode_kmms(o.value, KmmsEvent).kind if o.topic == NAMES.kmms_events
            else decode_rejection(o.value).reason_code for o in outs]  # fmt: skip


def test_stored_redacted_then_duplicates_refused() -> None:
    d = KmmsDriver(NAMES, {"acme": "redact"})
    out = d.pipe(TOPIC, episode("e1", "Mail me at ana@gmail.com about the trip."), 5_000)
    assert verdicts(out) == ["EPISODE_STORED"]
    ev = decode_kmms(out[0].value, KmmsEvent)
    assert ev.episode is not None and ev.episode.redacted == ["email"]
    assert "gmail" not in ev.episode.content and ev.episode.turns[0].content == "Mail me at [EMAIL] about the trip."
    assert (ev.at, ev.scope, ev.episode.session_id, ev.episode.occurred_at) == (5_000, "u1", "s-e1", 1_000)
    assert [u.unit_id for u in units_of(ev.episode)] == ["e1#0"]  # one round: the user turn and its reply
    assert verdicts(d.pipe(TOPIC, episode("e2", "Mail me at ana@gmail.com about the trip."), 5_001)) == [
        "DUPLICATE_CONTENT"]  # fmt: skip
    assert verdicts(d.pipe(TOPIC, episode("e1", "Another text"), 5_002)) == ["DUPLICATE_EPISODE"]
    assert verdicts(d.pipe(TOPIC, episode("e3", "Mail me at ana@gmail.com about the trip.", user="u2"), 5_003)) == [
        "EPISODE_STORED"]  # fmt: skip


def test_reject_policy_refuses_without_keeping_the_bytes() -> None:
    d = KmmsDriver(NAMES, {"acme": "reject"})
    out = d.pipe(TOPIC, episode("e9", "card 4111 1111 1111 1111", turns=False), 7_000)
    rej = decode_rejection(out[0].value)
    assert rej.detail is not None and rej.original_size is not None
    assert (rej.reason_code, rej.processor, rej.original, rej.original_size > 0) == ("PII_REJECTED", "kmms", b"", True)
    assert "4111" not in rej.detail
    # Not stored, so the same content is no duplicate once it is clean.
    assert verdicts(d.pipe(TOPIC, episode("e10", "card on file", turns=False), 7_001)) == ["EPISODE_STORED"]


def test_same_batch_duplicates_and_replay_give_the_same_bytes() -> None:
    records = [episode("a", "same words"), episode("b", "same words"), episode("c", "other words")]
    runs = []
    for _ in range(2):
        d = KmmsDriver(NAMES, {})
        from streams.records import LogRecord

        batch = [LogRecord(TOPIC, 0, i, 9_000 + i, None, v) for i, v in enumerate(records)]
        runs.append(d.processor.process(batch, 9_999))
    assert verdicts(runs[0]) == ["EPISODE_STORED", "DUPLICATE_CONTENT", "EPISODE_STORED"]
    assert [o.value for o in runs[0]] == [o.value for o in runs[1]]  # deterministic ids and bytes


ERASE = NAMES.accepted("erasure")


def erasure(user: str = "u1", reason: str = "user asked") -> bytes:
    payload = {"erasureId": f"er-{user}", "about": "memory", "userId": user, "reason": reason}
    return encode_envelope(offline_client("acme", "claw-1").build("erasure", payload))


def test_erasure_forgets_the_memory_and_refuses_what_was_sent_before_it() -> None:
    d = KmmsDriver(NAMES, {})
    assert verdicts(d.pipe(TOPIC, episode("e1", "I live in Lisbon."), 1_000)) == ["EPISODE_STORED"]
    assert verdicts(d.pipe(TOPIC, episode("o1", "I live in Lisbon.", user="u2"), 1_001)) == ["EPISODE_STORED"]
    out = d.pipe(ERASE, erasure("u1"), 2_000)
    ev = decode_kmms(out[0].value, KmmsEvent)
    assert (ev.kind, ev.scope, ev.at, ev.node_id, ev.detail) == ("MEMORY_ERASED", "u1", 2_000, "er-u1", "user asked")
    assert out[0].key == b"acme/claw-1/u1"  # the memory's own key: one partition orders it with its episodes
    # Sent before the erasure, read after it (another topic): refused, never stored into the new memory.
    assert verdicts(d.pipe(TOPIC, episode("e2", "I work at Acme."), 1_500)) == ["MEMORY_ERASED"]
    # Told again after it: a fresh memory, the same content is welcome under a new id. The erased episode's id
    # stays taken: an id names one episode for good, so no erased row or vector can meet a later one of its id.
    assert verdicts(d.pipe(TOPIC, episode("e1", "I live in Lisbon."), 2_001)) == ["DUPLICATE_EPISODE"]
    assert verdicts(d.pipe(TOPIC, episode("e3", "I live in Lisbon."), 2_001)) == ["EPISODE_STORED"]
    # The other user's memory is untouched: its content is still a duplicate there.
    assert verdicts(d.pipe(TOPIC, episode("o2", "I live in Lisbon.", user="u2"), 2_002)) == ["DUPLICATE_CONTENT"]


def test_erasure_in_a_batch_takes_only_what_was_logged_before_it() -> None:
    from streams.records import LogRecord

    d = KmmsDriver(NAMES, {})
    batch = [LogRecord(TOPIC, 0, 0, 1_000, None, episode("a", "first words")),
             LogRecord(ERASE, 0, 0, 1_500, None, erasure("u1")),
             LogRecord(TOPIC, 0, 1, 2_000, None, episode("b", "first words"))]  # fmt: skip
    assert verdicts(d.processor.process(list(reversed(batch)), 9_999)) == [
        "EPISODE_STORED", "MEMORY_ERASED", "EPISODE_STORED"]  # fmt: skip


class _ReadBeforeTheOtherCommitted(InMemorySeen):
    """The view of an instance whose batch read the keys before another instance's batch committed them."""

    def __init__(self, shared: InMemorySeen) -> None:
        super().__init__()
        self.rows, self.watermarks = shared.rows, shared.watermarks

    def get(self, keys: list[str]) -> dict[str, tuple[str, str]]:
        return {}


def test_an_episode_id_claimed_by_another_instance_first_is_a_duplicate() -> None:
    """Split by memory, two instances may judge one tenant's episode id at once (two memories): the one whose claim
    comes second refuses its episode DUPLICATE_EPISODE and stores nothing of it, not even its content hash."""
    shared = InMemorySeen()
    first = KmmsProcessor(NAMES, {}, shared)
    second = KmmsProcessor(NAMES, {}, _ReadBeforeTheOtherCommitted(shared))
    rec = lambda value, off: LogRecord(TOPIC, 0, off, 5_000 + off, None, value)  # noqa: E731
    assert verdicts(first.process([rec(episode("e1", "I moved to Porto.", user="u1"), 0)], 0)) == ["EPISODE_STORED"]
    lost = second.process([rec(episode("e1", "I adopted a cat.", user="u2"), 1)], 0)
    assert verdicts(lost) == ["DUPLICATE_EPISODE"]
    hashes = [v[1] for k, v in shared.rows.items() if k.startswith("hash:")]
    assert hashes == ["acme/claw-1/u1"]  # the winner's content hash only
    # The same content told again in u2's memory under a new id is stored: its hash was never taken.
    assert verdicts(first.process([rec(episode("e2", "I adopted a cat.", user="u2"), 2)], 0)) == ["EPISODE_STORED"]


def test_each_episode_ranks_by_its_first_unit() -> None:
    """The search reads only each episode's first unit of its fused ranking (``first_of_each_episode``), knowing a
    unit's episode from its id, as ``units_of`` makes it: an episode id may hold a '#' itself."""
    unit = units_of(KmmsEpisode(episode_id="ep#7", session_id="s", thread_id="", content_type="NOTE", occurred_at=0,
                                content="Hello.", content_hash="h"))[0]  # fmt: skip
    assert episode_of(unit.unit_id) == "ep#7"
    ranked = [("ep#7#2", 0.9), ("b#0", 0.8), ("ep#7#0", 0.7), ("c#1", 0.6), ("b#3", 0.5)]
    assert first_of_each_episode(ranked) == [("ep#7#2", 0.9), ("b#0", 0.8), ("c#1", 0.6)]
    assert first_of_each_episode([]) == []
