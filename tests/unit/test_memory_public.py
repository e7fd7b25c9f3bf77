"""The LoCoMo loader of ``hivemem bench memory --dataset locomo`` (``bench.memory_public``), on a hand-made sample in
LoCoMo's format (two conversations written here, not taken from the dataset)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.memory import main as bench_main
from bench.memory_public import (
    categories,
    evidence_sessions,
    from_locomo,
    load_corpus,
    locomo_counts,
    locomo_date,
    locomo_note,
)


def _turn(speaker: str, dia: str, text: str, caption: str | None = None) -> dict[str, Any]:
    t: dict[str, Any] = {"speaker": speaker, "dia_id": dia, "text": text}
    if caption:
        t |= {"img_url": ["https://example.invalid/x.jpg"], "blip_caption": caption}
    return t


SAMPLE: list[dict[str, Any]] = [
    {
        "sample_id": "conv-a",
        "conversation": {
            "speaker_a": "Rosa",
            "speaker_b": "Ivo",
            # written out of order on purpose: session 2 is read after session 1 all the same
            "session_2_date_time": "9:05 am on 3 March, 2024",
            "session_2": [
                _turn("Ivo", "D2:1", "We adopted a greyhound called Pip.", caption="a dog lying on a sofa"),
                _turn("Rosa", "D2:2", "Lovely! How old is Pip?"),
            ],
            "session_1_date_time": "7:30 pm on 28 February, 2024",
            "session_1": [
                _turn("Rosa", "D1:1", "I started pottery classes on Tuesday."),
                _turn("Ivo", "D1:2", "Nice, where are they?"),
                _turn("Rosa", "D1:3", "At the studio near the river."),
            ],
        },
        "qa": [
            {"question": "When did Rosa start pottery?", "answer": "the Tuesday before 28 February 2024",
             "evidence": ["D1:1"], "category": 2},
            {"question": "What pet does Ivo have and where does Rosa do pottery?", "answer": "a greyhound; a studio",
             "evidence": ["D2:1", "D1:3", "D2:1"], "category": 1},
            {"question": "Would Ivo like dogs?", "answer": "yes", "evidence": ["D2:1; D1:1"], "category": 3},
            {"question": "What is Pip?", "answer": "a greyhound", "evidence": ["D", "D2:1", "D9:1"], "category": 4},
            {"question": "What is Rosa's cat called?", "adversarial_answer": "Pip", "evidence": ["D2:1"],
             "category": 5},
            {"question": "Where is the studio?", "answer": "by the river", "evidence": ["D7:2"], "category": 4},
        ],
    },
    {
        "sample_id": "conv-b",
        "conversation": {
            "speaker_a": "Lea",
            "speaker_b": "Tom",
            "session_1_date_time": "12:00 pm on 1 January, 2023",
            "session_1": [_turn("Lea", "D1:1", "Happy new year!"), _turn("Tom", "D1:2", "Same to you, Lea.")],
        },
        "qa": [{"question": "What did Lea wish Tom?", "answer": "a happy new year", "evidence": ["D1:1"],
                "category": 4}],
    },
]  # fmt: skip


@pytest.fixture
def path(tmp_path: Path) -> Path:
    p = tmp_path / "locomo.json"
    p.write_text(json.dumps(SAMPLE), encoding="utf-8")
    return p


def test_each_conversation_is_a_memory_and_each_session_an_episode_at_its_time(path: Path) -> None:
    c = from_locomo(path)
    assert [u.user_id for u in c.users] == ["locomo-conv-a", "locomo-conv-b"]
    a = c.users[0]
    assert [(s.session_id, s.occurred_at) for s in a.sessions] == [
        ("conv-a-s1", "2024-02-28T19:30:00Z"),
        ("conv-a-s2", "2024-03-03T09:05:00Z"),
    ]
    s1 = a.sessions[0]
    assert [(t.role, t.content) for t in s1.turns] == [
        ("user", "Rosa: I started pottery classes on Tuesday."),
        ("user", "Ivo: Nice, where are they?"),
        ("user", "Rosa: At the studio near the river."),
    ]
    assert a.sessions[1].turns[0].content == "Ivo: We adopted a greyhound called Pip."  # photos off by default
    assert all(s.user_id == a.user_id for s in a.sessions)


def test_photos_flag_appends_the_caption(path: Path) -> None:
    turns = from_locomo(path, photos=True).users[0].sessions[1].turns
    assert turns[0].content == "Ivo: We adopted a greyhound called Pip. [shares a photo of a dog lying on a sofa]"
    assert turns[1].content == "Rosa: Lovely! How old is Pip?"


def test_questions_asked_a_day_after_the_last_session_with_their_evidence_sessions(path: Path) -> None:
    c = from_locomo(path)
    got = [(q.question_id, q.category, q.evidence_session_ids, q.question_date) for q in c.questions]
    assert got == [
        ("conv-a-q0", "temporal", ["conv-a-s1"], "2024-03-04T09:05:00Z"),
        ("conv-a-q1", "multi-hop", ["conv-a-s2", "conv-a-s1"], "2024-03-04T09:05:00Z"),  # distinct, first-seen order
        # q2: "D2:1; D1:1" is not one turn id; q4 is adversarial; q5's session 7 does not exist
        ("conv-a-q3", "single-hop", ["conv-a-s2"], "2024-03-04T09:05:00Z"),  # "D" and "D9:1" dropped
        ("conv-b-q0", "single-hop", ["conv-b-s1"], "2023-01-02T12:00:00Z"),
    ]
    assert c.questions[0].answer == "the Tuesday before 28 February 2024"
    assert {s.role for u in c.users for s in u.sessions} == {"evidence"}
    assert categories(c) == ("multi-hop", "temporal", "single-hop")  # LoCoMo's order, present ones only
    assert c.stats()["by_category"]["single-hop"] == 2
    assert locomo_counts(SAMPLE) == {"kept": 4, "adversarial": 1, "no evidence": 2}
    assert locomo_note(path).startswith(
        "LoCoMo protocol: 2 conversations, 4 questions of categories 1-4 with evidence "
        "kept; left out: 1 adversarial (category 5), 2 of categories 1-4 without"
    )


def test_limit_takes_the_first_conversations(path: Path) -> None:
    c = from_locomo(path, limit=1)
    assert [u.user_id for u in c.users] == ["locomo-conv-a"] and len(c.questions) == 3


def test_dates_and_evidence_ids() -> None:
    assert locomo_date("1:56 pm on 8 May, 2023").isoformat() == "2023-05-08T13:56:00+00:00"
    assert locomo_date("12:09 am on 13 September, 2023").isoformat() == "2023-09-13T00:09:00+00:00"
    assert evidence_sessions(["D3:1", " D1:2 ", "D3:4", "D30:05", "D:11:26", "D4:1 D1:1"], {1, 3, 30}) == [3, 1, 30]


def test_dataset_choice(path: Path) -> None:
    assert load_corpus("locomo", path).source == "locomo:locomo.json"
    with pytest.raises(ValueError, match="--file"):
        load_corpus("locomo", None)
    with pytest.raises(SystemExit):
        bench_main(["--dataset", "locomo"])  # no --file: refused before anything starts
    with pytest.raises(SystemExit):
        bench_main(["--longmemeval", str(path), "--dataset", "locomo"])


def test_roles_pair_makes_the_second_speaker_the_assistant(path: Path) -> None:
    c = from_locomo(path, roles="pair")
    s1, s2 = c.users[0].sessions
    assert [(t.role, t.content) for t in s1.turns] == [
        ("user", "Rosa: I started pottery classes on Tuesday."),  # speaker_a, whoever speaks first in a session
        ("assistant", "Ivo: Nice, where are they?"),
        ("user", "Rosa: At the studio near the river."),
    ]
    assert [t.role for t in s2.turns] == ["assistant", "user"]
    assert c.source == "locomo:locomo.json (the second speaker as assistant)"
    assert [q.evidence_session_ids for q in c.questions] == [
        q.evidence_session_ids for q in from_locomo(path).questions
    ]


def test_roles_pair_is_refused_where_no_two_people_talk(path: Path) -> None:
    with pytest.raises(ValueError, match="--roles pair applies to --dataset locomo or realtalk"):
        load_corpus("synthetic", None, roles="pair")
    with pytest.raises(ValueError, match="roles must be one of user, pair"):
        from_locomo(path, roles="assistant")
    with pytest.raises(SystemExit):
        bench_main(["--dataset", "locomo", "--file", str(path), "--roles", "both"])  # refused by the parser


def test_a_missing_file_is_refused_with_its_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "locomo10.json"
    assert bench_main(["--dataset", "locomo", "--file", str(missing), "--no-baseline"]) == 2
    err = capsys.readouterr().err
    assert "BAD_ARGUMENT" in err and "No such file or directory" in err and str(missing) in err


def test_a_file_of_another_dataset_is_refused_with_its_reason(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The LoCoMo sample read as LongMemEval: JSON, but a list of conversations, not of questions.
    assert bench_main(["--dataset", "longmemeval", "--file", str(path), "--no-baseline"]) == 2
    err = capsys.readouterr().err
    assert "BAD_ARGUMENT" in err and f"{path} does not read as --dataset longmemeval's format" in err
    with pytest.raises(ValueError, match="does not read as --dataset longmemeval's format"):
        load_corpus("longmemeval", path)
