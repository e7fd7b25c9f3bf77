"""The local deterministic KMMS consolidator (inference.kmms.local, inference.kmms.patterns, inference.kmms.dates)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from governance.kmms.consolidation import ConsolidationEngine, ScopeState
from governance.kmms.phrasing import speaker_lines
from governance.kmms.values import EpisodeText, Summary
from inference.kmms.backends import consolidator_from_env
from inference.kmms.dates import episode_date, find_date
from inference.kmms.llm import LlmConsolidator
from inference.kmms.local import LocalConsolidator, owner_lines, sentence_facts


def ms(day: str) -> int:
    return int(datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp() * 1000)


REF = ms("2026-03-04")  # a Wednesday


def ep(eid: str, day: str, text: str) -> EpisodeText:
    return EpisodeText(eid, "s-" + eid, ms(day), text)


def facts(sentence: str, entity: str = "user") -> list[tuple[str, str, str]]:
    return [(h.key, h.value, h.fact_type) for _, hits in sentence_facts(entity, sentence, REF) for h in hits]


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("I live in Porto.", [("residence", "Porto", "attribute")]),
        ("I moved to Porto last March.", [("residence", "Porto", "attribute")]),
        ("I moved from Lisbon to Porto.", [("residence", "Porto", "attribute")]),
        ("We relocated to Berlin last year.", [("residence", "Berlin", "attribute")]),
        ("My new apartment in Lisbon is tiny.", [("residence", "Lisbon", "attribute")]),
        ("I'm based in New York.", [("residence", "New York", "attribute")]),
        ("I work at Acme.", [("employer", "Acme", "attribute")]),
        ("I joined Google last week.", [("employer", "Google", "attribute")]),
        ("I started at Stripe.", [("employer", "Stripe", "attribute")]),
        ("I now work for Shopify.", [("employer", "Shopify", "attribute")]),
        ("I work at Acme as a data engineer.",
         [("employer", "Acme", "attribute"), ("job_title", "data engineer", "attribute")]),
        ("I'm a data engineer at Acme.",
         [("employer", "Acme", "attribute"), ("job_title", "data engineer", "attribute")]),
        ("I was promoted to team lead.", [("job_title", "team lead", "attribute")]),
        ("My role is product manager.", [("job_title", "product manager", "attribute")]),
        ("I prefer Python for data pipelines.", [("preferred_language", "Python for data pipelines", "preference")]),
        ("I always use Python for data pipelines", [("preferred_language", "Python for data pipelines", "preference")]),
        ("I prefer tea at work.", [("preferred_drink", "tea at work", "preference")]),
        ("I switched from Python to Rust for systems code.",
         [("preferred_language", "Rust for systems code", "preference")]),
        ("We moved from Postgres to DuckDB for analytics.",
         [("preferred_database", "DuckDB for analytics", "preference")]),
        ("My favourite food is sushi.", [("favourite_food", "sushi", "preference")]),
        ("My favorite programming language is Rust.", [("favourite_programming_language", "Rust", "preference")]),
        ("My favourite café is Café Lume.", [("favourite_cafe", "Café Lume", "preference")]),  # not "favourite_caf"
        ("I love hiking.", [("likes_hiking", "loves hiking", "preference")]),
        ("My sister Anna lives in Lisbon.", [("sister_anna", "Anna", "relationship")]),
        ("My partner is Tom.", [("partner", "Tom", "relationship")]),
        ("Sarah is my manager.", [("manager", "Sarah", "relationship")]),
        ("My manager Sarah approved it.", [("manager", "Sarah", "relationship")]),
        ("My dog Rex loves the beach.", [("pet_dog", "Rex", "relationship")]),
        ("I have a cat named Luna.", [("pet_cat", "Luna", "relationship")]),
        ("I'm learning Rust.", [("learning_rust", "Rust", "skill")]),
        ("I know Python.", [("skill_python", "Python", "skill")]),
        ("I speak Portuguese.", [("skill_portuguese", "Portuguese", "skill")]),
        ("I ran a marathon last March.", [("event_ran_marathon", "ran a marathon (2025-03)", "event")]),
        ("I got married yesterday.", [("event_got_married", "got married (2026-03-03)", "event")]),
        ("I visited Tokyo in 2024.", [("event_visited_tokyo", "visited Tokyo (2024)", "event")]),
        ("I live in Porto with my partner Tom.",
         [("residence", "Porto", "attribute"), ("partner", "Tom", "relationship")]),
        # job changes and other everyday phrasings of a fact
        ("I started my new job at Northwind on Monday.", [("employer", "Northwind", "attribute")]),
        ("I've joined Google.", [("employer", "Google", "attribute")]),  # "I've" was once read as "I 've"
        ("I've moved to Porto.", [("residence", "Porto", "attribute")]),
        # ... and look-alikes that state no such fact
        ("I've been at the beach for two days.", []),
        ("I never worked at Globex.", []),
        ("I wonder if it will rain.", []),  # "won" is a whole word: not "wonder" (nor "won't")
        ("I won't be there.", []),
    ],
)  # fmt: skip
def test_extraction(sentence: str, expected: list[tuple[str, str, str]]) -> None:
    assert facts(sentence) == expected


@pytest.mark.parametrize(
    ("entity", "sentence", "expected"),
    [
        ("John", "John thinks the DuckDB migration is risky.", [("opinion_duckdb_migration", "risky", "other")]),
        ("John", "John works at Acme.", [("employer", "Acme", "attribute")]),
        ("John", "John moved to Madrid.", [("residence", "Madrid", "attribute")]),
        ("John", "John is a senior engineer at Acme.",
         [("employer", "Acme", "attribute"), ("job_title", "senior engineer", "attribute")]),
        ("John", "John's manager is Sarah.", [("manager", "Sarah", "relationship")]),
        ("John Smith", "John prefers Rust.", [("preferred_language", "Rust", "preference")]),
        ("John", "I live in Porto.", []),  # first person is the owner, not John
        ("user", "John works at Acme.", []),  # and John's facts are not the owner's
    ],
)  # fmt: skip
def test_third_person(entity: str, sentence: str, expected: list[tuple[str, str, str]]) -> None:
    assert facts(sentence, entity) == expected


def test_pronoun_after_the_named_sentence() -> None:
    assert facts("John moved to Madrid. He works at Globex now.", "John") == [
        ("residence", "Madrid", "attribute"), ("employer", "Globex", "attribute")]  # fmt: skip
    assert facts("The weather is fine. He works at Globex.", "John") == []


@pytest.mark.parametrize(
    "sentence",
    [
        "I don't live in Paris.",
        "I do not work at Google.",
        "I never lived in Paris and I never worked at Initech.",
        "I no longer work at Acme.",
        "I used to live in Lisbon.",
        "If I moved to Berlin, I would work at SAP.",
        "I might join Google.",
        "Maybe I will move to Berlin.",
        "I'm thinking about moving to Berlin.",
        "I'll join Google next month.",
        "I would prefer tea.",
        "Do I live in Porto?",
        "I want to learn Rust.",
        "I could work at Acme.",
        "Unless I move to Berlin, my dog Rex stays here.",
        "The move to Berlin might happen next year.",
        "If the move to Berlin goes ahead, I'll tell you.",
        "We talked about the move to the cloud.",
    ],
)
def test_negations_and_hypotheticals_give_nothing(sentence: str) -> None:
    assert facts(sentence) == []


def test_negated_clause_does_not_block_the_affirmed_one() -> None:
    assert facts("I don't live in Paris, I live in Porto.") == [("residence", "Porto", "attribute")]


def test_confidence_by_pattern_strength() -> None:
    [(_, hits)] = sentence_facts("user", "I live in Porto.", REF)
    [(_, hedged)] = sentence_facts("user", "I think I live in Porto.", REF)
    [(_, weak)] = sentence_facts("user", "I joined Acme.", REF)
    assert (hits[0].confidence, hedged[0].confidence, weak[0].confidence) == (0.85, 0.70, 0.80)


def test_assistant_turns_are_not_the_owner() -> None:
    text = "user: Any tips?\nassistant: I live in the cloud and I work at OpenAI.\nuser: I work at Acme."
    assert facts(text) == [("employer", "Acme", "attribute")]


@pytest.mark.parametrize(
    ("mention", "expected"),
    [
        ("yesterday", "2026-03-03"),
        ("the day before yesterday", "2026-03-02"),
        ("last March", "2025-03"),
        ("last February", "2026-02"),
        ("in May", "2025-05"),
        ("in 2024", "2024"),
        ("last year", "2025"),
        ("last month", "2026-02"),
        ("last week", "2026-W09"),
        ("3 days ago", "2026-03-01"),
        ("two months ago", "2026-01"),
        ("last Monday", "2026-03-02"),
        ("on Wednesday", "2026-02-25"),
        ("on 3 March 2025", "2025-03-03"),
        ("March 10", "2025-03-10"),
        ("2024-12-24", "2024-12-24"),
        ("in March 2023", "2023-03"),
        ("nothing here", None),
    ],
)
def test_dates(mention: str, expected: str | None) -> None:
    assert find_date(f"It happened {mention}.", REF) == expected


def test_episode_date() -> None:
    assert episode_date(REF) == "2026-03-04"


HISTORY = [
    ep("e1", "2026-01-05", "user: I live in Lisbon. I work at Acme as a data engineer.\nassistant: Lisbon is lovely!"),
    ep("e2", "2026-01-06", "user: I prefer Python for data pipelines. The weather was bad today."),
    ep("e3", "2026-01-07", "user: I don't live in Paris. If I moved to Berlin I would freeze."),
    ep("e4", "2026-03-02", "user: Big news: I moved to Porto! I joined Globex as a senior data engineer."),
    ep("e5", "2026-03-03", "user: I switched from Python to Rust for data pipelines."),
    ep("e6", "2026-03-04", "user: My new apartment in Porto is tiny."),
]


def test_person_history_facts_and_temporal_updates() -> None:
    c = LocalConsolidator()
    first = c.extract_facts("user", Summary("", ()), HISTORY[:3], {})
    assert [(f.key, f.value, f.is_contradiction) for f in first] == [
        ("residence", "Lisbon", False), ("employer", "Acme", False), ("job_title", "data engineer", False),
        ("preferred_language", "Python for data pipelines", False)]  # fmt: skip
    existing = {f.key: f.value for f in first}
    later = c.extract_facts("user", Summary("", ()), HISTORY[3:], existing)
    assert [(f.key, f.value, f.updates_existing, f.is_contradiction) for f in later] == [
        ("residence", "Porto", "residence", True), ("employer", "Globex", "employer", True),
        ("job_title", "senior data engineer", "job_title", True),
        ("preferred_language", "Rust for data pipelines", "preferred_language", True),
        ("residence", "Porto", None, False)]  # fmt: skip
    old = {f.key: f for f in first}
    for f in later[:4]:
        assert c.classify(f.key, old[f.key].value, f.value, old[f.key].source_quote, f.source_quote) == "temporal"
    assert all(f.source_quote in e.text for f in later for e in HISTORY if e.episode_id == "e4" and "Globex" in f.value)


def test_history_through_the_engine_supersedes() -> None:
    engine, st = ConsolidationEngine(LocalConsolidator(), batch=3), ScopeState()
    kinds = []
    for e in HISTORY:
        engine.stored(st, e)
        kinds += [(x.kind, x.detail) for x in engine.enriched(st, e.episode_id, "user", "employment", e.episode_id)]
    assert kinds.count(("CONTRADICTION_LOGGED", "temporal:supersede")) == 4
    current = {k.split("|")[1]: v[-1].value for k, v in st.facts.items()}
    assert current == {"residence": "Porto", "employer": "Globex", "job_title": "senior data engineer",
                       "preferred_language": "Rust for data pipelines"}  # fmt: skip


@pytest.mark.parametrize("owner", [True, False])
def test_an_owner_change_said_in_passing_reaches_the_owner_facts(owner: bool) -> None:
    """An episode tagged with another entity (the enricher's primary: a place) but in which the owner speaks of
    themself also waits in the owner's pair of its topic; without the owner flag it does not."""
    engine, st = ConsolidationEngine(LocalConsolidator(), batch=3), ScopeState()
    episodes = [(ep("a", "2026-03-02", "user: I live in Prague and I love it."), "user"),
                (ep("b", "2026-03-03", "user: I bought a keyboard for my desk at home."), "user"),
                (ep("c", "2026-03-04", "user: By the way, I moved from Prague to Melbourne last week. "
                                       "Should I get a mechanical keyboard?"), "Prague"),
                (ep("d", "2026-03-05", "user: I need a new desk lamp too."), "user")]  # fmt: skip
    out = []
    for e, entity in episodes:
        engine.stored(st, e)
        out += engine.enriched(st, e.episode_id, entity, "shopping", e.episode_id, owner=owner)
    ids = [x.node.node_id for x in out if x.node is not None]
    assert len(ids) == len(set(ids))  # two pairs consolidated by one input never share an id
    current = {k: v[-1].value for k, v in st.facts.items()}
    assert current.get("user|residence") == ("Melbourne" if owner else "Prague")


@pytest.mark.parametrize(
    ("key", "old", "new", "old_quote", "new_quote", "expected"),
    [
        ("residence", "Lisbon", "Porto", "I live in Lisbon.", "I moved to Porto.", "temporal"),
        ("residence", "Lisbon", "Porto", "I live in Lisbon.", "I live in Porto since 2025.", "temporal"),
        ("residence", "Lisbon", "Porto", "I live in Lisbon.", "I live in Porto.", "direct"),
        ("residence", "Lisbon", "Porto", "I live in Lisbon.", "I live in Porto on weekends.", "contextual"),
        ("employer", "Acme", "Globex", "I work at Acme.", "I joined Globex.", "temporal"),
        ("favourite_food", "sushi", "pizza", "My favourite food is sushi.", "My new favourite food is pizza.",
         "temporal"),
        ("preferred_drink", "tea at work", "coffee at home", "I prefer tea at work.", "I prefer coffee at home.",
         "contextual"),
        ("preferred_language", "Python for data pipelines", "Rust for systems code", "I prefer Python for data "
         "pipelines.", "I switched from Python to Rust for systems code.", "contextual"),
        ("preferred_drink", "tea", "coffee", "I prefer tea.", "I now prefer coffee.", "temporal"),
        ("preferred_drink", "tea", "coffee", "I prefer tea.", "I prefer coffee.", "direct"),
    ],
)  # fmt: skip
def test_classify(key: str, old: str, new: str, old_quote: str, new_quote: str, expected: str) -> None:
    assert LocalConsolidator().classify(key, old, new, old_quote, new_quote) == expected


def test_summary_dated_capped_and_fact_sentences_kept() -> None:
    filler = " ".join(f"Our team had meeting number {i} about the office." for i in range(30))
    episodes = [
        ep("a", "2026-03-02", f"user: {filler} I work at Acme."),
        ep("b", "2026-03-04", "user: I live in Porto."),
    ]
    s = LocalConsolidator().summarize("user", "employment", "2026-W10", episodes, None)
    assert s.text.startswith("[2026-03-02] ")
    assert "[2026-03-02] I work at Acme." in s.text and s.text.endswith("[2026-03-04] I live in Porto.")
    assert len(s.text) <= 600 + 60 and s.source_episode_ids == ("a", "b") and s.contradictions == ()


def test_summary_skips_unrelated_and_assistant_sentences() -> None:
    s = LocalConsolidator().summarize("user", "residence", "2026-W02", HISTORY[:2], None)
    assert s.text == ("[2026-01-05] I live in Lisbon. [2026-01-05] I work at Acme as a data engineer. "
                      "[2026-01-06] I prefer Python for data pipelines.")  # fmt: skip


def test_merge_keeps_previous_adds_new_and_reports_contradictions() -> None:
    c = LocalConsolidator()
    first = c.summarize("user", "residence", "2026-W02", HISTORY[:2], None)
    merged = c.summarize("user", "residence", "2026-W02", HISTORY[3:5], first)
    assert merged.text.startswith(first.text)
    assert "[2026-03-02] Big news: I moved to Porto!" in merged.text
    assert merged.source_episode_ids == ("e1", "e2", "e4", "e5")
    assert merged.contradictions == (
        "employer: Acme -> Globex (temporal)", "job_title: data engineer -> senior data engineer (temporal)",
        "preferred_language: Python for data pipelines -> Rust for data pipelines (temporal)",
        "residence: Lisbon -> Porto (temporal)")  # fmt: skip
    again = c.summarize("user", "residence", "2026-W02", HISTORY[3:5], merged)
    assert again.text == merged.text  # merging the same episodes twice adds nothing


def test_extract_from_summary_when_no_episodes() -> None:
    s = Summary("[2026-03-02] I live in Porto. [2026-03-03] I ran a marathon yesterday.", ("x",))
    got = LocalConsolidator().extract_facts("user", s, [], {})
    assert [(f.key, f.value) for f in got] == [
        ("residence", "Porto"),
        ("event_ran_marathon", "ran a marathon (2026-03-02)"),
    ]


FACTS = [("residence", "Porto"), ("employer", "Acme"), ("job_title", "data engineer"),
         ("preferred_language", "Python for data pipelines")]  # fmt: skip


def test_abstract_template() -> None:
    assert LocalConsolidator().abstract("user", FACTS) == (
        "user lives in Porto, works at Acme as data engineer, and prefers Python for data pipelines."
    )


def test_abstract_deterministic_and_at_most_three_sentences() -> None:
    many = [*FACTS, ("partner", "Tom"), ("pet_dog", "Rex"), ("skill_python", "Python"), ("learning_rust", "Rust"),
            ("event_ran_marathon", "ran a marathon (2025-03)"), ("opinion_duckdb_migration", "risky"),
            ("sister_anna", "Anna"), ("favourite_food", "sushi"), ("preferred_drink", "tea at work"),
            ("preferred_drink", "coffee at home")]  # fmt: skip
    c = LocalConsolidator()
    text = c.abstract("user", many)
    assert text == c.abstract("user", list(reversed(many)))
    assert text.count(". ") + 1 == 3 and text.endswith(".")
    assert "prefers coffee at home and tea at work" in text and "has a dog named Rex" in text
    assert c.abstract("John", []) == "Nothing is known about John yet."


def test_factory_picks_local_without_url_and_llm_with_it() -> None:
    assert consolidator_from_env({}).model_id == "local-v1"
    llm = consolidator_from_env({"HIVEMEM_LLM_URL": "http://127.0.0.1:9/v1"}, prompt_prefix="Be brief.")
    assert isinstance(llm, LlmConsolidator) and llm.model_id == "llm:smollm2" and llm.prompt_prefix == "Be brief."
    llm.close()


@pytest.mark.parametrize(
    ("said", "existing", "expected"),
    [
        ("I switched from Python to Rust.", {"favourite_language": "Python"},
         ("favourite_language", "Rust", "favourite_language")),
        ("We moved from Postgres to DuckDB for analytics.", {"preferred_database": "Postgres"},
         ("preferred_database", "DuckDB for analytics", "preferred_database")),
    ],
)  # fmt: skip
def test_a_change_updates_the_fact_that_held_the_old_value(said: str, existing: dict[str, str],
                                                           expected: tuple[str, str, str | None]) -> None:  # fmt: skip
    out = LocalConsolidator().extract_facts(
        "user", Summary("", ()), [ep("e1", "2026-03-02", "user: " + said)], existing
    )
    assert [(f.key, f.value, f.updates_existing) for f in out] == [expected]


def test_a_favourites_key_leaves_out_the_moment() -> None:
    out = LocalConsolidator().extract_facts(
        "user", Summary("", ()), [ep("e1", "2026-03-02", "user: My favourite show at the moment is Severance.")], {}
    )
    assert [(f.key, f.value) for f in out] == [("favourite_show", "Severance")]


def test_a_long_replys_later_lines_are_the_assistants() -> None:
    text = ("user: My favourite show at the moment is Severance.\nassistant: Good choice!\n"
            "My favourite show is The Wire, and I live in Baltimore.\n\nuser: Thanks.\n"
            "And I work at Initech.")  # fmt: skip
    assert speaker_lines(text)[2] == ("assistant", "My favourite show is The Wire, and I live in Baltimore.")
    assert owner_lines(text) == ["My favourite show at the moment is Severance.", "Thanks.", "And I work at Initech."]
    facts = [(h.key, h.value) for _, hits in sentence_facts("user", text, 0) for h in hits]
    assert facts == [("favourite_show", "Severance"), ("employer", "Initech")]  # nothing the assistant said
    assert owner_lines("A note.\nuser: hi") == ["A note.", "hi"]  # text before any prefix: no conversation yet
