"""The shared spaCy pipeline loads only what NER hears: the entity recogniser embeds tokens itself, so the shared
``tok2vec`` is dropped, and the entities are those of the pipeline with it."""

from __future__ import annotations

import pytest

spacy = pytest.importorskip("spacy")

from inference.spacy_model import _EXCLUDE, DEFAULT_MODEL, LazySpacy, drop_unheard_tok2vec  # noqa: E402

TEXTS = [
    "Caroline went to the LGBTQ support group in Boston on Friday with Melanie.",
    "I moved to Porto after three years at Bluefin Analytics in Lisbon.",
    "Dr. Anita Desai met Jon Snow at the Louvre; they talked about Google and Apple.",
]


def _ents(nlp: object, texts: list[str]) -> list[list[tuple[int, int, str]]]:
    return [[(e.start_char, e.end_char, e.label_) for e in d.ents] for d in nlp.pipe(texts)]  # type: ignore[attr-defined]


def test_the_shared_tok2vec_goes_and_the_entities_stay() -> None:
    nlp = LazySpacy().get()
    assert nlp.pipe_names == ["ner"]
    with_it = spacy.load(DEFAULT_MODEL, exclude=_EXCLUDE)
    assert "tok2vec" in with_it.pipe_names
    expected = _ents(with_it, TEXTS)
    assert any(expected), "the texts name people and places"
    assert _ents(nlp, TEXTS) == expected


def test_a_tok2vec_something_listens_to_stays() -> None:
    nlp = spacy.load(DEFAULT_MODEL)  # the tagger and parser listen to it
    drop_unheard_tok2vec(nlp)
    assert "tok2vec" in nlp.pipe_names
    assert [d.has_annotation("DEP") for d in nlp.pipe(TEXTS[:1])] == [True]
