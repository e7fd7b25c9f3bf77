"""The synthetic long-memory corpus (``bench.memory_corpus``): deterministic, big enough, and consistent."""

from __future__ import annotations

import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from bench.memory_corpus import CATEGORIES, SINGLES, UNKNOWN, Corpus, from_longmemeval, generate, parse_iso
from bench.memory_public import load_corpus
from governance.pii.regex_stage import redact

ASSISTANT = "single-session-assistant"  # shape="long" only


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return generate(seed=7, users=30, sessions_per_user=40)


@pytest.fixture(scope="module")
def long_corpus() -> Corpus:
    return generate(seed=7, users=30, sessions_per_user=40, shape="long")


def _hash(c: Corpus) -> str:
    return hashlib.sha256(c.dumps().encode()).hexdigest()


def test_same_seed_same_json_other_seed_differs(corpus: Corpus) -> None:
    assert _hash(generate(seed=7, users=30, sessions_per_user=40)) == _hash(corpus)
    assert _hash(generate(seed=8, users=30, sessions_per_user=40)) != _hash(corpus)


def test_same_json_in_another_process_with_another_hash_seed(corpus: Corpus) -> None:
    code = ("import hashlib; from bench.memory_corpus import generate; "
            "print(hashlib.sha256(generate().dumps().encode()).hexdigest())")  # fmt: skip
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])  # fmt: skip
    assert out.stdout.strip() == _hash(corpus)


def test_save_load_round_trip(corpus: Corpus, tmp_path: Path) -> None:
    path = tmp_path / "sub" / "memory.json"
    corpus.save(path)
    back = Corpus.load(path)
    assert back == corpus
    assert _hash(back) == _hash(corpus)


def test_counts(corpus: Corpus) -> None:
    assert len(corpus.users) >= 30
    assert all(len(u.sessions) >= 40 for u in corpus.users)
    assert all(4 <= len(s.turns) <= 12 and len(s.turns) % 2 == 0 for u in corpus.users for s in u.sessions)
    assert len(corpus.questions) >= 200
    cats = Counter(q.category for q in corpus.questions)
    assert set(cats) == set(CATEGORIES) - {ASSISTANT}
    assert all(cats[c] >= 25 for c in CATEGORIES if c not in ("abstention", ASSISTANT))
    assert cats["abstention"] >= 20
    assert len({q.question_id for q in corpus.questions}) == len(corpus.questions)
    pit = sum(q.point_in_time for q in corpus.questions)
    assert 0.15 <= pit / len(corpus.questions) <= 0.3


def test_sessions_alternate_roles_and_spread_over_six_months(corpus: Corpus) -> None:
    for u in corpus.users:
        now = parse_iso(u.now)
        times = [parse_iso(s.occurred_at) for s in u.sessions]
        assert times == sorted(times) and len(set(times)) == len(times)
        assert all(0 < (now - t).days <= 182 for t in times)
        assert (max(times) - min(times)).days >= 150
        for s in u.sessions:
            assert s.user_id == u.user_id
            assert [t.role for t in s.turns] == ["user", "assistant"] * (len(s.turns) // 2)
        texts = [s.text() for s in u.sessions]
        assert len(set(texts)) == len(texts)  # the memory refuses duplicate content
        evidence = {e for q in corpus.questions if q.user_id == u.user_id for e in q.evidence_session_ids}
        assert len(evidence) < len(u.sessions) / 2  # most sessions are distractors


def test_evidence_exists_belongs_to_the_user_and_precedes_the_question(corpus: Corpus) -> None:
    by_id = corpus.sessions_by_id()
    users = {u.user_id: u for u in corpus.users}
    for q in corpus.questions:
        asked = parse_iso(q.question_date)
        assert asked <= parse_iso(users[q.user_id].now)
        for sid in q.evidence_session_ids:
            assert sid in by_id and by_id[sid].user_id == q.user_id
            assert parse_iso(by_id[sid].occurred_at) < asked
            assert by_id[sid].role == "evidence"
        if q.category == "abstention":
            assert q.answer == UNKNOWN and q.evidence_session_ids == []
        else:
            assert q.evidence_session_ids and q.answer != UNKNOWN


def test_knowledge_update_pairs(corpus: Corpus) -> None:
    by_id = corpus.sessions_by_id()
    ku = [q for q in corpus.questions if q.category == "knowledge-update"]
    assert len(ku) >= 25
    for q in ku:
        assert len(q.evidence_session_ids) == 2 and q.current_session_id in q.evidence_session_ids
        old_id = next(s for s in q.evidence_session_ids if s != q.current_session_id)
        old, new = by_id[old_id], by_id[q.current_session_id or ""]
        assert parse_iso(old.occurred_at) < parse_iso(new.occurred_at)
        assert q.superseded_value and q.superseded_value != q.answer
        assert q.answer in new.text() and q.superseded_value in old.text()
        assert q.answer not in old.text()


def test_point_in_time_questions_have_a_changing_session_after_them(corpus: Corpus) -> None:
    users = {u.user_id: u for u in corpus.users}
    pit = [q for q in corpus.questions if q.point_in_time]
    assert {q.category for q in pit} <= {"temporal-reasoning", "multi-session"}
    for q in pit:
        asked = parse_iso(q.question_date)
        later = [s for s in users[q.user_id].sessions if s.role == "evidence" and parse_iso(s.occurred_at) > asked]
        assert later, q.question_id
    # most questions are asked before some of their user's sessions: a search returning those leaks the future
    before = sum(any(parse_iso(s.occurred_at) > parse_iso(q.question_date) for s in users[q.user_id].sessions)
                 for q in corpus.questions)  # fmt: skip
    assert before >= 0.5 * len(corpus.questions)


def test_answers_are_stated_in_the_evidence(corpus: Corpus) -> None:
    by_id = corpus.sessions_by_id()
    for q in corpus.questions:
        text = " ".join(by_id[s].text() for s in q.evidence_session_ids)
        if q.category in ("single-session", "knowledge-update") or q.fact_kind in ("purchase", "outing", "visitor"):
            assert q.answer in text, q.question_id
        if q.category == "multi-session":
            items = q.answer.split(" (", 1)[1].rstrip(")") if re.match(r"\d+ \(", q.answer) else q.answer
            for item in items.split(", "):
                assert item in text, (q.question_id, item)


def test_evidence_is_not_always_in_the_first_turn(corpus: Corpus) -> None:
    by_id = corpus.sessions_by_id()
    first = total = 0
    for q in corpus.questions:
        if q.category == "single-session":
            s = by_id[q.evidence_session_ids[0]]
            total += 1
            first += q.answer in s.turns[0].content
    assert first < 0.5 * total


def test_questions_do_not_quote_the_answer(corpus: Corpus) -> None:
    for q in corpus.questions:
        if q.category != "abstention":
            assert q.answer.casefold() not in q.question.casefold()


def test_texts_carry_no_regex_pii(corpus: Corpus) -> None:
    """A ``redact`` memory must keep every session verbatim."""
    for u in corpus.users:
        for s in u.sessions:
            for t in s.turns:
                assert redact(t.content).categories == (), (s.session_id, t.content)


def test_too_few_sessions_is_refused() -> None:
    with pytest.raises(ValueError, match="sessions_per_user"):
        generate(seed=1, users=1, sessions_per_user=12)


def test_longmemeval_conversion(tmp_path: Path) -> None:
    turns = [{"role": "user", "content": "I adopted a cat"}, {"role": "assistant", "content": "Nice!"}]
    data = [
        {"question_id": "q1", "question_type": "single-session-user", "question": "What pet did I adopt?",
         "answer": "a cat", "question_date": "2023/05/30 (Tue) 23:40", "haystack_session_ids": ["a", "b"],
         "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/01 (Mon) 10:00"], "haystack_sessions": [turns, turns],
         "answer_session_ids": ["a"]},
        {"question_id": "q2_abs", "question_type": "knowledge-update", "question": "Where do I live?",
         "answer": "x", "question_date": "2023/06/01 (Thu) 08:00", "haystack_session_ids": ["c"],
         "haystack_dates": ["2023/05/02 (Tue) 10:00"], "haystack_sessions": [turns], "answer_session_ids": ["c"]},
    ]  # fmt: skip
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(data))
    c = from_longmemeval(path)
    assert [u.user_id for u in c.users] == ["lme-q1", "lme-q2_abs"]
    assert [s.session_id for s in c.users[0].sessions] == ["lme-q1-b", "lme-q1-a"]  # by time
    q1, q2 = c.questions
    assert (q1.category, q1.question_date, q1.evidence_session_ids) == ("single-session", "2023-05-30T23:59:00Z",
                                                                        ["lme-q1-a"])  # fmt: skip
    assert (q2.category, q2.answer, q2.evidence_session_ids) == ("abstention", UNKNOWN, [])
    # The generator draws each date's time of day at random: a question stamped 08:00 with its evidence told at
    # 16:30 the same day is asked at the end of that day, after it.
    data[1] |= {"question_id": "q2", "haystack_dates": ["2023/06/01 (Thu) 16:30"]}
    path.write_text(json.dumps(data))
    q2 = from_longmemeval(path).questions[1]
    assert (q2.question_date, q2.evidence_session_ids) == ("2023-06-01T23:59:00Z", ["lme-q2-c"])
    assert from_longmemeval(path).users[1].sessions[0].occurred_at < q2.question_date
    data[0]["question_type"] = "single-session-assistant"
    path.write_text(json.dumps(data))
    assert from_longmemeval(path).questions[0].category == ASSISTANT
    # A knowledge update told in two sessions: the later one (by date, not by file order) holds the current value.
    data[0] |= {"question_type": "knowledge-update", "answer_session_ids": ["a", "b"]}
    data[1] |= {"question_type": "knowledge-update"}
    path.write_text(json.dumps(data))
    q1, q2 = from_longmemeval(path).questions
    assert (q1.category, q1.current_session_id, q1.superseded_value) == ("knowledge-update", "lme-q1-a", None)
    assert q2.current_session_id is None  # one evidence session: nothing to order


# --- shape="long": LongMemEval-sized replies and the single-session-assistant questions ---------------------------


def test_longmemeval_sample_is_a_fixed_hash_draw_and_skip_gives_a_disjoint_one(tmp_path: Path) -> None:
    turns = [{"role": "user", "content": "I adopted a cat"}, {"role": "assistant", "content": "Nice!"}]
    data = [{"question_id": f"q{i}", "question_type": "single-session-user", "question": "What pet did I adopt?",
             "answer": "a cat", "question_date": "2023/05/30 (Tue) 23:40", "haystack_session_ids": ["a"],
             "haystack_dates": ["2023/05/20 (Sat) 02:21"], "haystack_sessions": [turns], "answer_session_ids": ["a"]}
            for i in range(20)]  # fmt: skip
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(data))
    first = [q.question_id for q in from_longmemeval(path, sample=5).questions]
    assert len(first) == 5 and first == [q.question_id for q in from_longmemeval(path, sample=5).questions]
    assert first == sorted(first, key=lambda q: int(q[1:]))  # the file's order, not the hash's
    assert first != [f"q{i}" for i in range(5)]  # a draw, not the file's first five
    path.write_text(json.dumps(data[::-1]))  # the draw is by id: the file's order does not choose it
    assert {q.question_id for q in from_longmemeval(path, sample=5).questions} == set(first)
    second = {q.question_id for q in from_longmemeval(path, sample=5, sample_skip=5).questions}
    assert len(second) == 5 and not second & set(first)
    with pytest.raises(ValueError, match="--sample applies to --dataset longmemeval"):
        load_corpus("locomo", path, sample=5)


def test_long_shape_is_deterministic_and_the_short_default(long_corpus: Corpus, corpus: Corpus) -> None:
    assert _hash(generate(seed=7, users=30, sessions_per_user=40, shape="short")) == _hash(corpus)
    assert _hash(generate(seed=7, users=30, sessions_per_user=40, shape="long")) == _hash(long_corpus)
    assert _hash(generate(seed=8, users=30, sessions_per_user=40, shape="long")) != _hash(long_corpus)
    assert long_corpus.source == "synthetic-long" and corpus.source == "synthetic"
    code = ("import hashlib; from bench.memory_corpus import generate; "
            "print(hashlib.sha256(generate(shape='long').dumps().encode()).hexdigest())")  # fmt: skip
    env = {**os.environ, "PYTHONHASHSEED": "4242"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])  # fmt: skip
    assert out.stdout.strip() == _hash(long_corpus)
    with pytest.raises(ValueError, match="shape"):
        generate(users=1, shape="medium")


def test_long_replies_are_longmemeval_sized(long_corpus: Corpus, corpus: Corpus) -> None:
    replies = [t.content for u in long_corpus.users for s in u.sessions for t in s.turns if t.role == "assistant"]
    lengths = [len(r) for r in replies]
    assert 800 <= statistics.fmean(lengths) <= 2000
    assert statistics.pstdev(lengths) >= 150 and max(lengths) >= 1800  # varied
    assert sum("\n1. " in r or "\n- " in r or "\n* " in r for r in replies) >= 0.3 * len(replies)  # lists
    assert statistics.fmean(len(s.text()) for u in long_corpus.users for s in u.sessions) >= 3000
    # the short corpus' evidence sessions are there, same time and user turns, each short reply (with the fact's
    # acknowledgement, if any) starting its long one
    long = {(s.user_id, s.occurred_at): s for u in long_corpus.users for s in u.sessions}
    evidence = [s for u in corpus.users for s in u.sessions if s.role == "evidence"]
    for old in evidence:
        new = long[(old.user_id, old.occurred_at)]
        assert [t.role for t in old.turns] == [t.role for t in new.turns], old.session_id
        for a, b in zip(old.turns, new.turns, strict=True):
            assert b.content == a.content if a.role == "user" else b.content.startswith(a.content + " ")
    by_id = long_corpus.sessions_by_id()
    acks = 0
    for q in long_corpus.questions:
        if q.category == "single-session":
            said = {a.format(v=q.answer) for a in SINGLES[q.fact_kind].ack if a}
            replies = [t.content for t in by_id[q.evidence_session_ids[0]].turns if t.role == "assistant"]
            acks += any(r.startswith(tuple(said)) for r in replies)
    assert acks >= 15


def test_long_texts_carry_no_regex_pii(long_corpus: Corpus) -> None:
    for u in long_corpus.users:
        for s in u.sessions:
            for t in s.turns:
                assert redact(t.content).categories == (), (s.session_id, t.content)
                assert not re.search(r"\d{5,}|@", t.content), (s.session_id, t.content)


def test_long_corpus_keeps_the_other_invariants(long_corpus: Corpus) -> None:
    by_id = long_corpus.sessions_by_id()
    users = {u.user_id: u for u in long_corpus.users}
    for u in long_corpus.users:
        assert len(u.sessions) == 40
        texts = [s.text() for s in u.sessions]
        assert len(set(texts)) == len(texts)
        times = [parse_iso(s.occurred_at) for s in u.sessions]
        assert times == sorted(times) and len(set(times)) == len(times)
        assert all(4 <= len(s.turns) <= 12 and [t.role for t in s.turns] == ["user", "assistant"] * (len(s.turns) // 2)
                   for s in u.sessions)  # fmt: skip
    assert set(Counter(q.category for q in long_corpus.questions)) == set(CATEGORIES)
    for q in long_corpus.questions:
        assert parse_iso(q.question_date) <= parse_iso(users[q.user_id].now)
        for sid in q.evidence_session_ids:
            assert by_id[sid].role == "evidence" and parse_iso(by_id[sid].occurred_at) < parse_iso(q.question_date)
        if q.category != "abstention":
            assert q.answer.casefold() not in q.question.casefold(), q.question_id


def test_assistant_questions(long_corpus: Corpus) -> None:
    by_id = long_corpus.sessions_by_id()
    qs = [q for q in long_corpus.questions if q.category == ASSISTANT]
    assert len(qs) >= len(long_corpus.users)  # 1+ per user on average
    assert len({q.user_id for q in qs}) == len(long_corpus.users)
    assert len({q.fact_kind for q in qs}) >= 8
    for q in qs:
        assert len(q.evidence_session_ids) == 1
        s = by_id[q.evidence_session_ids[0]]
        assert q.answer in "\n".join(t.content for t in s.turns if t.role == "assistant"), q.question_id
        assert all(q.answer.casefold() not in t.content.casefold() for t in s.turns if t.role == "user")
        named = [t for t in s.turns if q.answer.casefold() in t.content.casefold()]
        assert len(named) == 1 and len(named[0].content) >= 600  # one long reply names it
        assert (parse_iso(q.question_date) - parse_iso(s.occurred_at)).days >= 14  # weeks later
        # a decoy session of the same user, on the same topic, does not name it
        same_topic = [x for x in next(u for u in long_corpus.users if u.user_id == q.user_id).sessions
                      if x.topic == s.topic and x.session_id != s.session_id]  # fmt: skip
        assert any(x.role == "decoy" and q.answer.casefold() not in x.text().casefold() for x in same_topic)
        # the question is not the reply's wording: no run of 5 words in common
        reply = named[0].content.casefold().split()
        runs = {" ".join(reply[i : i + 5]) for i in range(len(reply) - 4)}
        words = q.question.casefold().split()
        assert not any(" ".join(words[i : i + 5]) in runs for i in range(len(words) - 4)), q.question
