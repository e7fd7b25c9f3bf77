"""A question's statement form and the blended search vector (governance.kmms.statement)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from governance.kmms.statement import as_statement, blend, question_vectors


@pytest.mark.parametrize(
    ("question", "statement"),
    [
        ("Where do I work?", "i work"),
        ("Which concerts have I been to recently?", "concerts i have been to recently"),
        ("How many pets do I have?", "pets i have"),
        ("What am I allergic to?", "i am allergic to"),
        ("Where am I based?", "i am based"),
        ("What kind of diet do I follow?", "kind of diet i follow"),
        ("Which company am I working for these days?", "company i am working for these days"),
        ("Where was I living?", "i was living"),
        ("What did we decide about the offsite?", "we decide about the offsite"),
        ("What's my favourite café?", "my favourite café is"),
        ("What’s my partner's name?", "my partner's name is"),  # a typographic apostrophe
        ("What is the name of my partner?", "the name of my partner is"),
        ("Which month is my birthday in?", "my birthday is in month"),
        ("Which café was my favourite?", "my favourite was café"),
        ("Where does my sister live?", "my sister live"),
        ("Which hotel did the assistant suggest?", "hotel the assistant suggest"),
        ("Remind me, what's my sister's name?", "my sister's name is"),
        ("So, where did we go for dinner?", "we go for dinner"),
        ("Do I have any allergies?", "i have any allergies"),
        ("Am I allergic to nuts?", "i am allergic to nuts"),
    ],
)
def test_statement_form(question: str, statement: str) -> None:
    assert as_statement(question) == statement


@pytest.mark.parametrize(
    "question",
    [
        "Who stayed with me last weekend?",  # the wh-word is the subject: no inversion to undo
        "What happened at the offsite?",
        "What did you recommend for Lisbon?",  # about the assistant: its vector stays its own
        "Lisbon trip notes",
        "",
        "Where can they park?",  # not about the user, nor a noun phrase the search can use
    ],
)
def test_no_statement_form(question: str) -> None:
    assert as_statement(question) is None


def test_blend_is_the_weighted_sum_normalised() -> None:
    assert blend([1.0, 0.0], [0.0, 1.0], 1.0) == pytest.approx([math.sqrt(0.5), math.sqrt(0.5)])
    v = blend([0.6, 0.8], [1.0, 0.0], 0.5)
    assert v == pytest.approx([1.1 / math.hypot(1.1, 0.8), 0.8 / math.hypot(1.1, 0.8)])
    assert blend([1.0, 0.0], [-1.0, 0.0], 1.0) == [1.0, 0.0]  # they cancel: the question's own


@given(st.lists(st.floats(-1, 1), min_size=3, max_size=3), st.lists(st.floats(-1, 1), min_size=3, max_size=3),
       st.floats(0.01, 2.0))  # fmt: skip
def test_blend_has_unit_length(a: list[float], b: list[float], w: float) -> None:
    v = blend(a, b, w)
    if any(abs(x) > 1e-6 for x in (x + w * y for x, y in zip(a, b, strict=True))):
        assert math.sqrt(sum(x * x for x in v)) == pytest.approx(1.0)


def test_question_vectors_embed_the_statement_only_when_there_is_one() -> None:
    seen: list[str] = []

    def embed(text: str) -> list[float]:
        seen.append(text)
        return [1.0, 0.0] if text == "Where do I work?" else [0.0, 1.0]

    own, ranked = question_vectors(embed, "Where do I work?", 0.5)
    assert seen == ["Where do I work?", "i work"]
    assert own == [1.0, 0.0]
    assert ranked == pytest.approx(blend([1.0, 0.0], [0.0, 1.0], 0.5))
    seen.clear()
    assert question_vectors(embed, "Who stayed with me?", 0.5) == ([0.0, 1.0], None)
    assert question_vectors(embed, "Where do I work?", 0.0) == ([1.0, 0.0], None)  # off
    assert seen == ["Who stayed with me?", "Where do I work?"]
