"""The RealMem loader of ``hivemem bench memory --dataset realmem`` (``bench.memory_realmem``), on hand-made
dialogues in RealMem's format (written here, not taken from the dataset)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.memory_public import DATASETS, load_corpus
from bench.memory_realmem import category_of, from_realmem


def _turn(speaker: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"speaker": speaker, "is_query": False, "content": content, "query_id": None, **extra}


def _query(qid: str, content: str, category: str) -> dict[str, Any]:
    return _turn("User", content, is_query=True, query_id=qid, topic="Travel", category_name=category)


def _reply(content: str, *uuids: str) -> dict[str, Any]:
    return _turn("Assistant", content, memory_used=[{"session_uuid": u, "content": "..."} for u in uuids],
                 memory_session_uuids=list(uuids))  # fmt: skip


# The file's order is not time order (the second session is the earliest); two sessions share a day.
PERSON: dict[str, Any] = {
    "_metadata": {"person_name": "Ines_Duarte", "total_sessions": 4, "total_tokens": 120},
    "dialogues": [
        {"session_identifier": "Travel_1:S1_01", "session_uuid": "aa01", "current_time": "2025-03-02 (Sunday)",
         "dialogue_turns": [_turn("User", "I want a train route from Porto to Vigo, no flights."),
                            _turn("Assistant", "Noted: train only, Porto to Vigo."),
                            _turn("User", "   ")],  # nothing said: not a turn
         "extracted_memory": []},
        {"session_identifier": "Enhanced:S10001", "session_uuid": "bb02", "current_time": "2025-03-01 (Saturday)",
         "dialogue_turns": [_turn("User", "What is a good sourdough hydration?"), _turn("Assistant", "About 75%.")],
         "extracted_memory": []},
        {"session_identifier": "Travel_1:S1_02", "session_uuid": "cc03", "current_time": "2025-03-02 (Sunday)",
         "dialogue_turns": [_turn("User", "Morning!"),
                            _query("Q-0001", "About the trip we planned, which train do I take first?",
                                   "Dynamic Incremental"),
                            _reply("The Celta from Campanha, as you wanted no flights.", "aa01", "cc03")],
         "extracted_memory": []},
        {"session_identifier": "Travel_1:S1_03", "session_uuid": "dd04", "current_time": "2025-03-05 (Wednesday)",
         "dialogue_turns": [_query("Q-0002", "Book what we said later this month.", "Temporal-reasoning"),
                            _reply("Which booking?", "ee05"),  # a session of a later day: no search can see it
                            _query("Q-0003", "And the bread, how wet was it?", "Implicit_Preference"),
                            _reply("75% hydration.", "bb02")],
         "extracted_memory": []},
        {"session_identifier": "Travel_1:S1_04", "session_uuid": "ee05", "current_time": "2025-03-20 (Thursday)",
         "dialogue_turns": [_turn("User", "Booked the Celta for the 28th.")], "extracted_memory": []},
    ],
}  # fmt: skip


@pytest.fixture
def dialogues(tmp_path: Path) -> Path:
    (tmp_path / "Ines_Duarte_dialogues_256k.json").write_text(json.dumps(PERSON), encoding="utf-8")
    other = {"_metadata": {"person_name": "Bo_Lund"}, "dialogues": [
        {"session_uuid": "ff06", "current_time": "2025-01-01 (Wednesday)",
         "dialogue_turns": [_turn("User", "Hello"), _turn("Assistant", "Hi")]}]}  # fmt: skip
    (tmp_path / "Bo_Lund_dialogues_256k.json").write_text(json.dumps(other), encoding="utf-8")
    (tmp_path / "all_persona_topic").mkdir()
    (tmp_path / "README.md").write_text("not dialogues", encoding="utf-8")
    return tmp_path


def test_each_file_is_a_memory_and_its_sessions_episodes_in_time_order(dialogues: Path) -> None:
    c = from_realmem(dialogues)
    assert [u.user_id for u in c.users] == ["realmem-Bo_Lund", "realmem-Ines_Duarte"]
    ines = c.users[1]
    assert [(s.session_id, s.occurred_at) for s in ines.sessions] == [
        ("realmem-Ines_Duarte-bb02", "2025-03-01T08:00:00Z"),
        ("realmem-Ines_Duarte-aa01", "2025-03-02T08:00:00Z"),
        ("realmem-Ines_Duarte-cc03", "2025-03-02T08:10:00Z"),  # the day's second session, ten minutes on
        ("realmem-Ines_Duarte-dd04", "2025-03-05T08:00:00Z"),
        ("realmem-Ines_Duarte-ee05", "2025-03-20T08:00:00Z"),
    ]
    assert [(t.role, t.content) for t in ines.sessions[1].turns] == [
        ("user", "I want a train route from Porto to Vigo, no flights."),
        ("assistant", "Noted: train only, Porto to Vigo."),
    ]
    assert ines.now == "2025-03-20T08:00:00Z"


def test_a_query_is_asked_just_before_its_session_with_the_earlier_sessions_as_evidence(dialogues: Path) -> None:
    c = from_realmem(dialogues)
    got = [(q.question_id, q.category, q.evidence_session_ids, q.question_date) for q in c.questions]
    assert got == [
        # its own session (cc03) is not evidence: the search at its time cannot see it
        ("realmem-Ines_Duarte-Q-0001", "dynamic-incremental", ["realmem-Ines_Duarte-aa01"], "2025-03-02T08:09:59Z"),
        ("realmem-Ines_Duarte-Q-0003", "implicit-preference", ["realmem-Ines_Duarte-bb02"], "2025-03-05T07:59:59Z"),
    ]  # fmt: skip
    assert c.questions[0].question == "About the trip we planned, which train do I take first?"
    assert c.questions[0].answer.startswith("The Celta")
    assert "2 queries kept, 1 without an evidence session before them" in c.source
    roles = {s.session_id: s.role for u in c.users for s in u.sessions}
    assert roles["realmem-Ines_Duarte-aa01"] == "evidence"
    assert roles["realmem-Ines_Duarte-ee05"] == "distractor"


def test_the_bench_loads_it_by_name_and_refuses_an_empty_directory(dialogues: Path, tmp_path: Path) -> None:
    assert "realmem" in DATASETS
    c = load_corpus("realmem", dialogues, limit=1)
    assert [u.user_id for u in c.users] == ["realmem-Bo_Lund"]
    assert c.questions == []
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="no RealMem dialogue files"):
        load_corpus("realmem", empty)


def test_categories_are_written_lower_case_with_hyphens() -> None:
    assert category_of("Dynamic Incremental") == "dynamic-incremental"
    assert category_of("Temporal-reasoning") == "temporal-reasoning"
    assert category_of("Implicit_Preference") == "implicit-preference"
    assert category_of(None) == "uncategorised"
