"""Through the API, a question is embedded without the names of the memory's speakers (governance/kmms/speakers.py;
docs/kmms.md, "How the ranking was chosen"): what a hit reports as its similarity is the cosine of the turn and
"What did paint?", not of the turn and "What did Melanie paint?"; in a memory whose turns carry no names the
question keeps every word."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from governance.kmms.phrasing import embedding_text
from hivemem.stack import Stack
from inference.minilm import MiniLmEmbedder
from producers.memory_client import MemoryClient
from tests.integration.kmms_support import memory

pytestmark = pytest.mark.integration

QUESTION = "What did Melanie paint?"
AS_OF = "2026-05-10T00:00:00Z"


def _cosine(embedder: MiniLmEmbedder, a: str, b: str) -> float:
    va, vb = (np.asarray(v) for v in embedder.embed([a, b]))
    return float(va @ vb)


def _told(stack: Stack, named: bool) -> tuple[str, MemoryClient]:
    """A memory of two sessions between Melanie and Caroline, their turns named (the ``name`` field) or not."""
    mem = memory(stack, "mem-b", claw=f"names-{uuid.uuid4().hex[:6]}", user_id="pals")

    def turn(name: str, content: str) -> dict[str, str]:
        return {"role": "user", "name": name, "content": content} if named else {"role": "user", "content": content}

    s0 = [turn("Caroline", "How was your weekend away?"),
          turn("Melanie", "Lovely. I painted a sunset over the lake, my first oil painting in years."),
          turn("Caroline", "That sounds so peaceful.")]  # fmt: skip
    s1 = [turn("Melanie", "Work has been busy with the new project at the office."),
          turn("Caroline", "I adopted a puppy from the shelter on Friday.")]  # fmt: skip
    ids = [mem.add(turns, session_id=f"s-{i}", occurred_at=f"2026-05-0{i + 1}T09:00:00Z").episode_id
           for i, turns in enumerate((s0, s1))]  # fmt: skip
    mem.wait_indexed(ids, timeout_s=120)
    return "Lovely. I painted a sunset", mem


def test_a_question_is_embedded_without_the_speakers_names(stack: Stack) -> None:
    painted, mem = _told(stack, named=True)
    res = mem.search(QUESTION, k=5, as_of=AS_OF, mode="vector")
    hit = next(h for h in res.hits if h.layer == 4 and painted in h.text)
    assert hit.text.startswith("user: Melanie: Lovely.")  # the name stays in what is stored and shown
    embedder = MiniLmEmbedder()
    unit = embedding_text(hit.text)  # "Melanie: Lovely. I painted ..."
    without, with_name = _cosine(embedder, "What did paint?", unit), _cosine(embedder, QUESTION, unit)
    assert abs(without - with_name) > 0.005  # the test can tell the two apart
    assert hit.similarity == pytest.approx(without, abs=5e-4)


def test_a_memory_without_named_turns_keeps_every_word_of_the_question(stack: Stack) -> None:
    painted, mem = _told(stack, named=False)
    res = mem.search(QUESTION, k=5, as_of=AS_OF, mode="vector")
    hit = next(h for h in res.hits if h.layer == 4 and painted in h.text)
    embedder = MiniLmEmbedder()
    assert hit.similarity == pytest.approx(_cosine(embedder, QUESTION, embedding_text(hit.text)), abs=5e-4)


def test_a_round_between_named_people_is_embedded_with_both_speakers_words(stack: Stack) -> None:
    """Melanie's turns as the assistant's, named: her answer is part of the round's vector (phrasing.between_people),
    so a question about what she painted finds the round by vector alone."""
    mem = memory(stack, "mem-b", claw=f"pair-{uuid.uuid4().hex[:6]}", user_id="pals")
    caroline = {"role": "user", "name": "Caroline"}
    melanie = {"role": "assistant", "name": "Melanie"}
    s0 = [caroline | {"content": "How was your weekend away?"},
          melanie | {"content": "Lovely. I painted a sunset over the lake, my first oil painting in years."},
          caroline | {"content": "That sounds so peaceful."}]  # fmt: skip
    s1 = [caroline | {"content": "I adopted a puppy from the shelter on Friday."},
          melanie | {"content": "Work has been busy with the new project at the office."}]  # fmt: skip
    ids = [mem.add(turns, session_id=f"s-{i}", occurred_at=f"2026-05-0{i + 1}T09:00:00Z").episode_id
           for i, turns in enumerate((s0, s1))]  # fmt: skip
    mem.wait_indexed(ids, timeout_s=120)
    res = mem.search(QUESTION, k=5, as_of=AS_OF, mode="vector")
    first = next(h for h in res.hits if h.layer == 4)
    assert first.text == ("user: Caroline: How was your weekend away?\nassistant: Melanie: Lovely. I painted a sunset "
                          "over the lake, my first oil painting in years.")  # fmt: skip
    embedder = MiniLmEmbedder()
    whole = ("Caroline: How was your weekend away?\nMelanie: Lovely. I painted a sunset over the lake, my first oil "
             "painting in years.")  # fmt: skip
    said = _cosine(embedder, "What did paint?", "Caroline: How was your weekend away?")
    assert abs(_cosine(embedder, "What did paint?", whole) - said) > 0.05  # the test can tell the two apart
    assert first.similarity == pytest.approx(_cosine(embedder, "What did paint?", whole), abs=5e-4)
