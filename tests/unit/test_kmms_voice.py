"""Voices of a unit's text and the addressee of a question (governance/kmms/voice.py), and the owner's words of a
unit for full text (governance/kmms/phrasing.said_text)."""

from __future__ import annotations

import pytest

from governance.kmms.phrasing import said_text
from governance.kmms.voice import VoiceWeights, addressee, sentence_voice, unit_voice


@pytest.mark.parametrize(("text", "voice"), [
    ("If I ever get to Kyoto, what are the must-sees?", "asked"),
    ("Can you recommend a gaming chair?", "asked"),
    ("I saw Portishead live on Friday, what a show.", "told"),
    ("Not that it matters, but my go-to café is Morning Ritual.", "told"),
    ("We finally moved to Cusco last week.", "told"),
    ("I'm allergic to peanuts", "told"),
    ("Okay, thanks, that helps.", ""),
    ("Great tip.", ""),
])  # fmt: skip
def test_a_users_sentence_is_asked_told_or_neither(text: str, voice: str) -> None:
    assert sentence_voice(text) == voice


def test_a_units_own_vector() -> None:
    assert unit_voice("How do I fix a squeaky door?", conversation=True, user_lines=True) == "asked"
    assert unit_voice("I ran the Oslo 10K on Sunday.", conversation=True, user_lines=True) == "told"
    # One sentence of three words or more: its voice, unless a short one says otherwise (tells and asks: none).
    assert unit_voice("I started my new job at Halcyon Health on Monday. Cool. Anything similar?",
                      conversation=True, user_lines=True) == ""  # fmt: skip
    assert unit_voice("I started my new job at Halcyon Health on Monday. Cool.", conversation=True,
                      user_lines=True) == "told"  # fmt: skip
    assert unit_voice("Okay. How long until I see results?", conversation=True, user_lines=True) == "asked"
    assert unit_voice("Thanks! Any tips?", conversation=True, user_lines=True) == "asked"
    # Several sentences: the round as a whole has no voice, its sentences have theirs.
    assert unit_voice("I ran the Oslo 10K. How long until I see results?", conversation=True, user_lines=True) == ""
    assert unit_voice("Stretch after, not before.", conversation=True, user_lines=False) == "reply"
    assert unit_voice("Quarterly report: revenue is up.", conversation=False, user_lines=False) == ""


@pytest.mark.parametrize("question", [
    "Which hotel did you recommend when I was planning Oslo?",
    "What was the book you recommended for my holiday?",
    "You suggested a stretch for my back. Which one was it?",
    "Remind me what you said I should add to my banana bread.",
    "In our last conversation about Rust, which crate did you mention?",
    "What did we discuss about my visa application?",
    "What was your advice on the lease?",
])  # fmt: skip
def test_questions_about_what_the_assistant_said(question: str) -> None:
    assert addressee(question) == "assistant"


@pytest.mark.parametrize("question", [
    "Which concerts have I been to recently?",
    "Where do I live now?",
    "Can you remind me where I parked?",
    "Could you tell me what my sister's name is?",
    "How many books have I finished this year?",
    "What do you know about my allergies?",
])  # fmt: skip
def test_questions_about_the_users_life(question: str) -> None:
    assert addressee(question) == "user"


def test_adjustments_apply_to_questions_about_the_user_only() -> None:
    w = VoiceWeights(asked=0.1, told=0.05, reply=0.2)
    assert w.adjustments("Where do I live now?") == {"asked": 0.1, "told": -0.05, "reply": 0.2}
    assert w.adjustments("Which hotel did you recommend?") == {"asked": 0.0, "told": 0.0, "reply": 0.0}
    assert VoiceWeights(0, 0, 0).adjustments("Where do I live now?") == {"asked": 0, "told": 0, "reply": 0}


def test_said_text_is_the_owners_words() -> None:
    round_ = "user: I moved to Porto.\nassistant: Congratulations!\nuser: Any tips for the first week?"
    assert said_text(round_, conversation=True) == "I moved to Porto.\nAny tips for the first week?"
    assert said_text("assistant: Day one: the old town.\nDay two: a museum.", conversation=True) == ""
    assert said_text("Day two: a museum and a food tour.", conversation=True) == ""  # a later piece of a reply
    assert said_text("Minutes of the planning meeting.", conversation=False) == "Minutes of the planning meeting."
