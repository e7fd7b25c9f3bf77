"""The REALTALK loader of ``hivemem bench memory --dataset realtalk`` (``bench.memory_public``), on hand-made chats in
REALTALK's format (written here, not taken from the dataset)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.memory_public import from_realtalk, load_corpus, realtalk_ids


def _msg(speaker: str, dia: str, text: str, when: str) -> dict[str, Any]:
    return {"clean_text": text, "speaker": speaker, "date_time": when, "img_file": [], "img_url": [], "dia_id": dia}


# Session 2 goes on with day 1's ids ("D1:3"), as REALTALK's sessions do when a day's chat resumes later on.
CHAT_A: dict[str, Any] = {
    "name": {"speaker_1": "Noor", "speaker_2": "Bram"},
    "session_2_date_time": "31.12.2023, 09:15:00",
    "session_2": [
        _msg("Bram", "D1:3", "Morning! The ferry to Texel was cancelled.", "31.12.2023, 09:15:00"),
        _msg("Noor", "D1:4", "  ", "31.12.2023, 09:16:10"),  # nothing said: not a turn
        _msg("Noor", "D1:5", "Oh no, so no island trip?", "31.12.2023, 09:16:30"),
    ],
    "session_1_date_time": "30.12.2023, 21:40:05",
    "session_1": [
        _msg("Noor", "D1:1", "I baked a rye loaf today.", "30.12.2023, 21:40:05"),
        _msg("Bram", "D1:2", "Nice. I'm off to Texel tomorrow.", "30.12.2023, 23:02:44"),
    ],
    "session_3_date_time": "02.01.2024, 18:00:00",
    "session_3": [_msg("Noor", "D2:1", "Happy new year, Bram!", "02.01.2024, 18:00:00")],
    "events_session_1": {"agent_a": [], "agent_b": []},
    "qa": [
        {"question": "What did Noor bake?", "answer": "a rye loaf", "evidence": ["D1:1."], "category": 4},
        {"question": "Why did Bram not go to Texel?", "answer": "the ferry was cancelled",
         "evidence": ["D1:2-D1:3"], "category": 1},  # a range across two sessions
        {"question": "When did Noor wish Bram a happy new year?", "answer": "2 January 2024",
         "evidence": ["D 2:1; D9:9"], "category": 2},  # a stray space; D9:9 is no message
        {"question": "Which photo did Bram send?", "answer": "a ferry", "evidence": ["D7:1"], "category": 3},
        {"question": "What is Noor's cat called?", "answer": "-", "evidence": ["D1:1"], "category": 5},
    ],
}  # fmt: skip
CHAT_B: dict[str, Any] = {
    "name": {"speaker_1": "Ada", "speaker_2": "Kees"},
    "session_1_date_time": "05.02.2024, 08:00:00",
    "session_1": [_msg("Ada", "D1:1", "My new job starts Monday.", "05.02.2024, 08:00:00")],
    "qa": [{"question": "When does Ada start her job?", "answer": "Monday", "evidence": ["1:1"], "category": 2}],
}


@pytest.fixture
def chats(tmp_path: Path) -> Path:
    (tmp_path / "Chat_1_Noor_Bram.json").write_text(json.dumps(CHAT_A), encoding="utf-8")
    (tmp_path / "Chat_2_Ada_Kees.json").write_text(json.dumps(CHAT_B), encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not a chat", encoding="utf-8")
    return tmp_path


def test_each_chat_is_a_memory_and_each_session_an_episode_at_its_time(chats: Path) -> None:
    c = from_realtalk(chats)
    assert [u.user_id for u in c.users] == ["realtalk-Chat_1_Noor_Bram", "realtalk-Chat_2_Ada_Kees"]
    a = c.users[0]
    assert [(s.session_id, s.occurred_at) for s in a.sessions] == [
        ("Chat_1_Noor_Bram-s1", "2023-12-30T21:40:05Z"),
        ("Chat_1_Noor_Bram-s2", "2023-12-31T09:15:00Z"),
        ("Chat_1_Noor_Bram-s3", "2024-01-02T18:00:00Z"),
    ]
    assert [(t.role, t.content) for t in a.sessions[1].turns] == [
        ("user", "Bram: Morning! The ferry to Texel was cancelled."),
        ("user", "Noor: Oh no, so no island trip?"),
    ]
    assert a.now == "2024-01-03T18:00:00Z"


def test_evidence_is_the_session_holding_each_named_message(chats: Path) -> None:
    c = from_realtalk(chats)
    got = [(q.question_id, q.category, q.evidence_session_ids, q.question_date) for q in c.questions]
    assert got == [
        ("Chat_1_Noor_Bram-q0", "single-hop", ["Chat_1_Noor_Bram-s1"], "2024-01-03T18:00:00Z"),
        ("Chat_1_Noor_Bram-q1", "multi-hop", ["Chat_1_Noor_Bram-s1", "Chat_1_Noor_Bram-s2"], "2024-01-03T18:00:00Z"),
        ("Chat_1_Noor_Bram-q2", "temporal", ["Chat_1_Noor_Bram-s3"], "2024-01-03T18:00:00Z"),
        # q3 names no message the file has; q4 is of category 5
        ("Chat_2_Ada_Kees-q0", "temporal", ["Chat_2_Ada_Kees-s1"], "2024-02-06T08:00:00Z"),
    ]
    assert c.source == (
        f"realtalk:{chats.name} (4 questions kept, 2 without a category 1-4 or an evidence message in the files)"
    )
    assert {s.role for s in c.users[0].sessions} == {"evidence"}


def test_hand_typed_evidence_ids() -> None:
    assert realtalk_ids(["D20:17.", "D 2:18", "23:29", "D11:17; D16:1", "D16:82. D19:2"]) == [
        "D20:17", "D2:18", "D23:29", "D11:17", "D16:1", "D16:82", "D19:2",
    ]  # fmt: skip
    assert realtalk_ids(["D18:2-D18:4", "D3:9-D4:2", "D17;39", "D:56", "", "D18:3"]) == [
        "D18:2", "D18:3", "D18:4", "D3:9", "D4:2",
    ]  # fmt: skip


def test_one_file_a_limit_and_the_dataset_choice(chats: Path) -> None:
    one = from_realtalk(chats / "Chat_2_Ada_Kees.json")
    assert [u.user_id for u in one.users] == ["realtalk-Chat_2_Ada_Kees"] and len(one.questions) == 1
    assert [u.user_id for u in from_realtalk(chats, limit=1).users] == ["realtalk-Chat_1_Noor_Bram"]
    assert len(load_corpus("realtalk", chats).questions) == 4
    (chats / "empty").mkdir()
    with pytest.raises(ValueError, match="no REALTALK chat files"):
        from_realtalk(chats / "empty")


def test_roles_pair_makes_speaker_2_the_assistant(chats: Path) -> None:
    a = from_realtalk(chats, roles="pair").users[0]
    assert [(t.role, t.content[:5]) for s in a.sessions for t in s.turns] == [
        ("user", "Noor:"), ("assistant", "Bram:"), ("assistant", "Bram:"), ("user", "Noor:"), ("user", "Noor:"),
    ]  # fmt: skip
