"""The BEAM loader of ``hivemem bench memory --dataset beam`` (``bench.memory_beam``), on a hand-made conversation in
BEAM's format (written here, not taken from the dataset)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.memory_beam import from_beam, source_ids
from bench.memory_public import DATASETS, load_corpus


def _m(role: str, mid: int, content: str, anchor: str | None = None) -> dict[str, Any]:
    return {"role": role, "id": mid, "content": content, **({"time_anchor": anchor} if anchor else {})}


CHAT = [
    {"batch_number": 1, "time_anchor": None, "turns": [
        [_m("user", 0, "My budget app uses Flask 2.3 and SQLite. ->-> 1,1", "March-15-2024"),
         _m("assistant", 1, "Good choice for a small app.")],
        [_m("user", 2, "The first sprint ends on March 29. ->-> 1,2"), _m("assistant", 3, "Noted.")],
    ]},
    {"batch_number": 2, "time_anchor": None, "turns": [
        [_m("user", 4, "I moved the database to Postgres. ->->2,1", "April-05-2024"),
         _m("assistant", 5, "Then migrate the schema first."), _m("user", 6, "Done."), _m("assistant", 7, "Great.")],
    ]},
]  # fmt: skip
PROBING = {
    "information_extraction": [{"question": "When does my first sprint end?", "answer": "March 29",
                                "source_chat_ids": [2]}],
    "knowledge_update": [{"question": "Which database does my app use?", "answer": "Postgres",
                          "source_chat_ids": {"original_info": [0], "updated_info": [6, 99]}}],
    "abstention": [{"question": "What is my cat called?", "ideal_response": "Not mentioned."}],
    "summarization": [{"question": "Summarise my project.", "ideal_summary": "A Flask budget app.",
                       "source_chat_ids": [0, 4, 0]}],
}  # fmt: skip


@pytest.fixture
def scale(tmp_path: Path) -> Path:
    root = tmp_path / "100K"
    for n in ("2", "10"):
        d = root / n
        (d / "probing_questions").mkdir(parents=True)
        (d / "chat.json").write_text(json.dumps(CHAT), encoding="utf-8")
        (d / "probing_questions" / "probing_questions.json").write_text(json.dumps(PROBING), encoding="utf-8")
    (root / "notes").mkdir()  # no chat.json: not a conversation
    return root


def test_each_conversation_is_a_memory_and_each_exchange_an_episode(scale: Path) -> None:
    c = from_beam(scale)
    assert [u.user_id for u in c.users] == ["beam-100K-2", "beam-100K-10"]  # by number, not by name
    u = c.users[0]
    assert [(s.session_id, s.occurred_at) for s in u.sessions] == [
        ("beam-100K-2-b1e1", "2024-03-15T08:00:00Z"),
        ("beam-100K-2-b1e2", "2024-03-15T08:01:00Z"),
        ("beam-100K-2-b2e1", "2024-04-05T08:00:00Z"),
    ]
    assert [(t.role, t.content) for t in u.sessions[0].turns] == [
        ("user", "My budget app uses Flask 2.3 and SQLite."),  # the generator's "->-> 1,1" left out
        ("assistant", "Good choice for a small app."),
    ]
    assert u.sessions[2].turns[0].content == "I moved the database to Postgres."
    assert len(u.sessions[2].turns) == 4


def test_questions_are_asked_a_day_after_with_the_exchanges_of_their_source_messages(scale: Path) -> None:
    c = from_beam(scale / "2")
    got = [(q.question_id, q.category, q.evidence_session_ids, q.question_date, q.answer) for q in c.questions]
    assert got == [
        ("beam-100K-2-information_extraction-0", "information-extraction", ["beam-100K-2-b1e2"],
         "2024-04-06T08:00:00Z", "March 29"),
        ("beam-100K-2-knowledge_update-0", "knowledge-update", ["beam-100K-2-b1e1", "beam-100K-2-b2e1"],
         "2024-04-06T08:00:00Z", "Postgres"),  # id 99 is no message
        ("beam-100K-2-summarization-0", "summarization", ["beam-100K-2-b1e1", "beam-100K-2-b2e1"],
         "2024-04-06T08:00:00Z", "A Flask budget app."),
    ]  # fmt: skip
    assert c.source == "beam:100K (3 questions kept, 1 without an evidence message)"


def test_a_knowledge_update_told_in_one_later_exchange_names_it_current(scale: Path) -> None:
    ku = next(q for q in from_beam(scale / "2").questions if q.category == "knowledge-update")
    assert ku.current_session_id == "beam-100K-2-b2e1"  # updated_info's message 6, after original_info's 0
    others = [q for q in from_beam(scale / "2").questions if q.category != "knowledge-update"]
    assert [q.current_session_id for q in others] == [None, None]


@pytest.mark.parametrize("ids", [
    {"original_info": [4], "updated_info": [0]},  # the "update" told before the original: not a knowledge update
    {"original_info": [0], "updated_info": [2, 4]},  # told across two exchanges: which one is current is unclear
    {"original_info": [0], "updated_info": []},
    {"original_info": [], "updated_info": [4]},
    {"original_info": [4], "updated_info": [6]},  # both in one exchange
    [0, 4],
])  # fmt: skip
def test_no_current_exchange_when_the_update_is_not_one_later_exchange(tmp_path: Path, ids: Any) -> None:
    d = tmp_path / "1"
    (d / "probing_questions").mkdir(parents=True)
    (d / "chat.json").write_text(json.dumps(CHAT), encoding="utf-8")
    probing = {"knowledge_update": [{"question": "Which database?", "answer": "Postgres", "source_chat_ids": ids}]}
    (d / "probing_questions" / "probing_questions.json").write_text(json.dumps(probing), encoding="utf-8")
    (q,) = from_beam(d).questions
    assert q.current_session_id is None


def test_source_ids_reads_lists_and_dicts_of_lists() -> None:
    assert source_ids([3, 1, 3]) == [3, 1]
    assert source_ids({"first_statement": [5], "second_statement": [2, 5]}) == [5, 2]
    assert source_ids(None) == []
    assert source_ids(["chat_id: 4", True, 7]) == [7]


def test_the_bench_loads_it_by_name_and_refuses_a_directory_without_conversations(scale: Path) -> None:
    assert "beam" in DATASETS
    assert [u.user_id for u in load_corpus("beam", scale, limit=1).users] == ["beam-100K-2"]
    with pytest.raises(ValueError, match="no BEAM conversation"):
        load_corpus("beam", scale / "notes")
