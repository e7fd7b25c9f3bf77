"""The PII cascade (seed 000, §7; SPEC C-16..C-20, X-5): stage-2 label rules, the threshold, escalation
decisions and their record, the stage-3 fallback, and that no verdict carries the PII it found.

Stage 2 and 3 back-ends here are small deterministic implementations of the protocols, so that each rule is
exercised at its boundary; the real spaCy back-end is tested in test_pii_ner.py and drives the property test
at the bottom.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from governance.pii import (
    ADDRESS,
    DATE_OF_BIRTH,
    FINANCIAL_ACCOUNT,
    GOVERNMENT_ID,
    LLM,
    LOCAL_RULE,
    MEDICAL_RECORD,
    NER,
    PERSON,
    REGEX,
    ImplicitVerdict,
    NerSpan,
    PiiPolicy,
    PiiVerdict,
    implicit_rule,
    scan,
)
from inference.ner import SpacyNer

NAME_LIKE = "The escalation came from Harbour View after the audit."  # a capitalised run: stage 2 runs
NO_CUES = "the nightly batch retried twice and the queue drained by morning."


@dataclass
class FixedNer:
    spans: list[NerSpan]
    calls: int = 0

    def entities(self, text: str) -> list[NerSpan]:
        self.calls += 1
        return list(self.spans)


@dataclass
class FixedClassifier:
    answer: ImplicitVerdict | None
    seen: list[str] = field(default_factory=list)

    def classify(self, text: str) -> ImplicitVerdict | None:
        self.seen.append(text)
        return self.answer


def span(label: str, words: int, score: float) -> NerSpan:
    return NerSpan(label, words, score, 0, 5)


CLEAN_LLM = ImplicitVerdict(False, None, 0.9)


def test_stage1_hit_exits_early() -> None:
    ner, llm = FixedNer([span(PERSON, 2, 0.99)]), FixedClassifier(CLEAN_LLM)
    v = scan("Escalated by priya.sharma@gmail.com today.", PiiPolicy(), ner, llm)
    assert v == PiiVerdict(False, REGEX, (REGEX,), "none", "email")
    assert ner.calls == 0 and not llm.seen


def test_clean_text_without_cues_stops_at_stage1() -> None:
    ner = FixedNer([span(PERSON, 2, 0.99)])
    v = scan(NO_CUES, PiiPolicy(), ner, None)
    assert v.clean and v.stages_run == (REGEX,) and v.escalation == "none" and v.category is None
    assert ner.calls == 0


@pytest.mark.parametrize(
    ("label", "words", "score", "pii"),
    [
        (PERSON, 1, 0.99, False),  # one-word person: not PII
        (PERSON, 2, 0.99, True),  # two-word person: PII
        (PERSON, 3, 0.70, True),
        (ADDRESS, 2, 0.99, False),  # two-word address: not PII
        (ADDRESS, 3, 0.70, True),  # three-word address: PII
        (DATE_OF_BIRTH, 1, 0.90, True),
        (FINANCIAL_ACCOUNT, 1, 0.90, True),
        (MEDICAL_RECORD, 1, 0.90, True),
        (GOVERNMENT_ID, 1, 0.90, True),
        ("ORG", 3, 0.99, False),  # not a PII label
        (PERSON, 2, 0.65, True),  # threshold boundary: >= 0.65 is PII
        (PERSON, 2, 0.6499, False),
        (ADDRESS, 4, 0.65, True),
        (ADDRESS, 4, 0.6499, False),
    ],
)
def test_stage2_label_rules_and_threshold(label: str, words: int, score: float, pii: bool) -> None:
    v = scan(NAME_LIKE, PiiPolicy(), FixedNer([span(label, words, score)]), FixedClassifier(CLEAN_LLM))
    assert NER in v.stages_run
    assert v.clean is not pii
    if pii:
        assert v.stage_hit == NER and v.category == label and v.stages_run == (REGEX, NER)


def test_threshold_is_the_policy_s() -> None:
    ner = FixedNer([span(PERSON, 2, 0.7)])
    assert not scan(NAME_LIKE, PiiPolicy(), ner).clean
    assert scan(NAME_LIKE, PiiPolicy(ner_threshold=0.8, llm_band=(0.35, 0.8)), ner, FixedClassifier(CLEAN_LLM)).clean


@pytest.mark.parametrize(
    ("spans", "band"),
    [
        ([span(PERSON, 2, 0.35)], True),  # band lower bound inclusive
        ([span(PERSON, 2, 0.64)], True),
        ([span(PERSON, 2, 0.34)], False),
        ([span(PERSON, 1, 0.60)], False),  # a one-word person is not a PII candidate at any score
        ([span(ADDRESS, 2, 0.60)], False),
        ([span(ADDRESS, 3, 0.50), span(PERSON, 2, 0.10)], True),  # the best eligible score counts
    ],
)
def test_stage3_runs_on_the_ner_band(spans: list[NerSpan], band: bool) -> None:
    llm = FixedClassifier(CLEAN_LLM)
    v = scan(NAME_LIKE, PiiPolicy(), FixedNer(spans), llm)
    assert v.clean
    assert (LLM in v.stages_run) is band
    assert ("ner-band" in v.escalation) is band
    assert len(llm.seen) == int(band)


def test_escalation_reasons_are_recorded() -> None:
    v = scan("Sample sent to qa@example.com from 10.0.0.7 by Harbour View.", PiiPolicy(), FixedNer([]))
    assert v.clean
    assert v.stages_run == (REGEX, NER)
    assert v.escalation == "s2=near-miss-safe-email+near-miss-private-ip+capitalised-run"


def test_quasi_identifier_cues_escalate_to_the_local_rule() -> None:
    v = scan("The user in Mumbai who reported the outage is 34 years old.", PiiPolicy(), FixedNer([]), None)
    assert not v.clean
    assert v.stages_run == (REGEX, NER, LOCAL_RULE)
    assert v.stage_hit == LOCAL_RULE and v.category == "indirect_reference"
    assert "s3=quasi-cues" in v.escalation


def test_llm_decision_is_used_when_it_decides() -> None:
    llm = FixedClassifier(ImplicitVerdict(True, "quasi_identifier", 0.8))
    v = scan("Customers in Pune aged 30-40 prefer UPI.", PiiPolicy(), FixedNer([]), llm)
    assert (v.clean, v.stage_hit, v.category, v.stages_run) == (False, LLM, "quasi_identifier", (REGEX, NER, LLM))


def test_undecided_llm_falls_back_to_the_local_rule() -> None:
    text = "The patient in Chennai whose dialysis slot moved twice complained."
    v = scan(text, PiiPolicy(), FixedNer([]), FixedClassifier(None))
    assert v.stages_run == (REGEX, NER, LLM, LOCAL_RULE)
    assert v.escalation.endswith(";llm-undecided")
    assert not v.clean and v.stage_hit == LOCAL_RULE and v.category == "health_individual"
    # ... and the fallback can also find the text clean: it is a rule, not a default.
    v2 = scan("Teams in Chennai and Pune share one dialysis vendor.", PiiPolicy(), FixedNer([]), FixedClassifier(None))
    assert v2.clean and v2.stages_run == (REGEX, NER, LLM, LOCAL_RULE)


def test_policy_always_runs_every_stage() -> None:
    ner, llm = FixedNer([]), FixedClassifier(CLEAN_LLM)
    v = scan(NO_CUES, PiiPolicy(escalation="always"), ner, llm)
    assert v.clean and v.stages_run == (REGEX, NER, LLM)
    assert v.escalation == "s2=policy-always;s3=policy-always"
    assert ner.calls == 1 and llm.seen == [NO_CUES]
    assert scan(NO_CUES, PiiPolicy(escalation="always"), ner, None).stages_run == (REGEX, NER, LOCAL_RULE)


def test_missing_ner_backend_escalates_instead_of_passing() -> None:
    v = scan(NAME_LIKE, PiiPolicy(), None, None)
    assert v.stages_run == (REGEX, LOCAL_RULE)
    assert "ner-unavailable" in v.escalation


def test_policy_safe_domains_extend_the_defaults() -> None:
    text = "Route it to support@acme-partner.com."
    assert scan(text, PiiPolicy()).stage_hit == REGEX
    assert scan(text, PiiPolicy(safe_email_domains=frozenset({"ACME-partner.com."})), FixedNer([])).clean


@pytest.mark.parametrize(
    "kwargs",
    [{"escalation": "sometimes"}, {"ner_threshold": 0.0}, {"ner_threshold": 1.5}, {"llm_band": (0.7, 0.3)}],
)
def test_policy_is_validated(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        PiiPolicy(**kwargs)  # type: ignore[arg-type]


def test_classifier_free_text_never_reaches_the_verdict() -> None:
    leaky = FixedClassifier(ImplicitVerdict(True, "the user Anita Desai in Mumbai", 0.9))
    v = scan(NAME_LIKE, PiiPolicy(escalation="always"), FixedNer([]), leaky)
    assert v.category == "implicit" and not v.clean


# --- the privacy invariant, on the real back-end -------------------------------------------------------------


@cache
def real_ner() -> SpacyNer:
    ner = SpacyNer()
    ner.warm_up()
    return ner


_name = st.from_regex(r"[A-Z][a-z]{3,9}", fullmatch=True)
_emails = st.builds(lambda u, d: f"{u}@{d}.com", st.from_regex(r"[a-z][a-z0-9._]{2,12}", fullmatch=True),
                    st.from_regex(r"[a-z]{3,10}", fullmatch=True))  # fmt: skip
_phones = st.builds(lambda a, b: f"+91 {a} {b}", st.from_regex(r"[6-9][0-9]{4}", fullmatch=True),
                    st.from_regex(r"[0-9]{5}", fullmatch=True))  # fmt: skip
_names = st.builds(lambda a, b: f"{a} {b}", _name, _name)
_templates = st.sampled_from([
    "Escalation: {} asked the Pune warehouse to hold the shipment.",
    "After the audit, {} confirmed the reconciliation gap of 4%.",
    "The vendor contact {} flagged duplicate invoices in the SAP connector.",
    "Mr. {} lives at 42 Baker Street and disputes the charge.",
])  # fmt: skip


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pii=st.one_of(_emails, _phones, _names), template=_templates,
       policy=st.sampled_from([PiiPolicy(), PiiPolicy(escalation="always")]))  # fmt: skip
def test_no_user_facing_part_of_a_verdict_contains_the_pii(pii: str, template: str, policy: PiiPolicy) -> None:
    v = scan(template.format(pii), policy, real_ner(), None)
    assert v.stage_hit == REGEX or NER in v.stages_run  # the model saw every text that stage 1 let through
    for part in (repr(v), str(v), v.escalation, v.category or "", " ".join(v.stages_run), v.stage_hit or ""):
        assert pii not in part
        for piece in pii.split():
            if len(piece) >= 4:
                assert piece not in part


# --- the local stage-3 rule ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("The user in Mumbai who reported the outage keeps calling the helpdesk.", "indirect_reference"),
        ("One of our employees was diagnosed with diabetes and asked for flexible hours.", "health_individual"),
        ("The patient whose dialysis slot moved twice filed a grievance.", "health_individual"),
        ("A 34-year-old woman from Pune complained about the billing error.", "indirect_reference"),
        ("The claimant, a divorced Sikh father in his forties, disputed the premium.", "quasi_identifier"),
        # An unrelated percentage in another sentence does not make it an aggregate statement.
        ("Cycle time rose 18% this quarter. One of our drivers was hospitalised after the crash.", "health_individual"),
    ],
)
def test_local_rule_flags_implicit_pii(text: str, category: str) -> None:
    verdict = implicit_rule.evaluate(text)
    assert verdict.pii and verdict.category == category
    assert implicit_rule.quasi_cues(text)


@pytest.mark.parametrize(
    "text",
    [
        "Acme Logistics Ltd in Chennai changed its invoice workflow.",  # organisation
        "The approver must sign the purchase order before release.",  # generic role
        "The user interface in the Mumbai office was slow after the release.",  # person noun as a modifier
        "About 40% of patients in Mumbai waited over an hour for discharge.",  # aggregate
        "Customers in Delhi saw 12% more failed payments in Q3.",
        "Retry with exponential backoff and jitter capped at 30 seconds.",  # technical pattern
        "Number porting requests are validated against the donor operator; teams in Pune saw it first.",
    ],
)
def test_local_rule_allows_orgs_roles_aggregates_and_technical_text(text: str) -> None:
    assert implicit_rule.evaluate(text) == ImplicitVerdict(False, None, 0.6)
