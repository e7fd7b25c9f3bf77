"""CLAM local perceiver (G-07, X-36): each English pattern, questions ignored, bounded, deterministic."""

from __future__ import annotations

import pytest

from governance.clam.nodes import Deduction
from governance.clam.perceiver import fact_description, fact_of, perceive_local
from governance.clam.triples import Triple


def facts(prompt: str) -> list[Triple]:
    return [d.triple for d in perceive_local(prompt, "") if d.kind == "fact" and d.triple is not None]


@pytest.mark.parametrize("prompt,triple", [
    ("My name is Marcello Mangione.", Triple("User", "has_name", "Marcello Mangione")),
    ("Hi, I am called Bob", Triple("User", "has_name", "Bob")),
    ("I'm called Anna Maria Rossi Bianchi Verdi", Triple("User", "has_name", "Anna Maria Rossi Bianchi")),  # 4 words
    ("Call me Ishmael.", Triple("User", "has_name", "Ishmael")),
    ("I live in Milan, Italy.", Triple("User", "lives_in", "Milan")),
    ("I'm based in Berlin", Triple("User", "lives_in", "Berlin")),
    ("I work at ACME Corp because it is near.", Triple("User", "works_at", "ACME Corp")),
    ("I work for the university", Triple("User", "works_at", "university")),
    ("I am employed by Siemens", Triple("User", "works_at", "Siemens")),
    ("I use an ESP32 for my projects.", Triple("User", "uses", "ESP32")),
    ("I'm using Python 3.11", Triple("User", "uses", "Python 3.11")),
    ("I work with KiCad", Triple("User", "uses", "KiCad")),
    ("I like pizza.", Triple("User", "likes", "pizza")),
    ("I really love jazz!", Triple("User", "likes", "jazz")),
    ("I prefer dark mode", Triple("User", "likes", "dark mode")),
    ("I am 60 years old.", Triple("User", "has_age", "60")),
    ("I'm 1 year old", Triple("User", "has_age", "1")),
    ("My age is 42", Triple("User", "has_age", "42")),
    ("I'm from Naples", Triple("User", "comes_from", "Naples")),
    ("I speak Italian", Triple("User", "speaks", "Italian")),
    ("Remember that I live in Turin", Triple("User", "lives_in", "Turin")),
])  # fmt: skip
def test_fact_patterns(prompt: str, triple: Triple) -> None:
    out = perceive_local(prompt, "")
    assert out == [Deduction("fact", fact_description(triple), triple)]


def test_fact_description_reads_back() -> None:
    t = Triple("User", "lives_in", "Milan")
    assert fact_description(t) == "User lives in Milan"
    assert fact_of("User lives in Milan") == t
    assert fact_of("User has name Marcello Mangione") == Triple("User", "has_name", "Marcello Mangione")
    assert fact_of("The weather is nice") is None


def test_several_clauses_in_one_sentence() -> None:
    assert facts("My name is Marcello Mangione and I live in Milan; I use ESP32 and I am 60 years old.") == [
        Triple("User", "has_name", "Marcello Mangione"), Triple("User", "lives_in", "Milan"),
        Triple("User", "uses", "ESP32"), Triple("User", "has_age", "60")]  # fmt: skip
    assert facts("I like pizza and pasta") == [Triple("User", "likes", "pizza and pasta")]  # "and" alone: one object


def test_episodic() -> None:
    seed = "On 12 May we fixed a capacitive sensor bug by filtering noise with a moving average."
    assert perceive_local(seed, "") == [Deduction("episodic", seed.rstrip("."))]
    assert perceive_local("", "Last week we finally solved the OTA timeout by raising the watchdog.") == [
        Deduction("episodic", "Last week we finally solved the OTA timeout by raising the watchdog")]  # fmt: skip
    assert perceive_local("Yesterday I debugged the I2C bus", "")[0].kind == "episodic"
    assert perceive_local("We never fixed the leak", "")[0].kind == "semantic"  # not a solved problem


@pytest.mark.parametrize("text", [
    "What is my name?", "Do I live in Milan?", "Where do I work", "Is the server up?", "My name is?",
    "Can you tell me what I like?", "How old am I",
])  # fmt: skip
def test_questions_are_not_deductions(text: str) -> None:
    assert perceive_local(text, "") == []


def test_semantic_statements_and_non_statements() -> None:
    out = perceive_local("I don't use ESP32 anymore. The server IP is 192.168.1.10. Please explain recursion. Hello. "
                         "I want you to write a poem. Thanks!", "")  # fmt: skip
    assert out == [Deduction("semantic", "I don't use ESP32 anymore"),  # a negation is no fact: the critic weighs it
                   Deduction("semantic", "The server IP is 192.168.1.10")]  # fmt: skip


def test_response_gives_only_experiences() -> None:
    # the response's "I" is the assistant: no facts about the user, no claims, but its experience counts
    out = perceive_local("", "I live in the cloud. Python is great. We fixed the bug by pinning the driver.")
    assert out == [Deduction("episodic", "We fixed the bug by pinning the driver")]


def test_duplicates_once_and_input_order() -> None:
    out = perceive_local("I live in Milan. I reside in milan. I like tea", "We fixed it by rebooting.")
    assert [d.kind for d in out] == ["fact", "fact", "episodic"]
    assert out[0].triple == Triple("User", "lives_in", "Milan")


def test_bounded() -> None:
    prompt = " ".join(f"I like food number {i}." for i in range(40))
    assert len(perceive_local(prompt, "")) == 16
    assert len(perceive_local(prompt, "", limit=3)) == 3
    assert perceive_local(prompt, "", limit=3) == perceive_local(prompt, "")[:3]


def test_deterministic() -> None:
    prompt = "Hi! My name is Ada and I live in London. I use an Analytical Engine. The engine is slow."
    response = "On 10 December we fixed the carry by adding a lookahead. I think so."
    first = perceive_local(prompt, response)
    assert first == perceive_local(prompt, response)
    assert [d.kind for d in first] == ["fact", "fact", "fact", "semantic", "episodic"]


def test_long_object_is_no_fact() -> None:
    out = perceive_local("I use " + "very " * 30 + "long things", "")
    assert [d.kind for d in out] == ["semantic"]


def test_a_statement_about_anything_is_a_node_whatever_its_verb() -> None:
    # docs/clam.md: anything else the user states becomes a short-term node, not only "is/are" claims.
    out = perceive_local("The irrigation pump restarts every night. Our irrigation pump restarts every night. "
                         "Thank you so much. Sorry about that. Tell me a joke.", "")  # fmt: skip
    assert out == [Deduction("semantic", "The irrigation pump restarts every night"),
                   Deduction("semantic", "Our irrigation pump restarts every night")]  # fmt: skip
