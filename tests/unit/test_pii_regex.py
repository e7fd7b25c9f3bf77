"""PII stage 1 (seed 000, §7.1, C-17): every detected type, and every false-positive rule."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from governance.pii.regex_stage import (
    AADHAAR,
    AADHAAR_INVALID,
    CREDIT_CARD,
    EMAIL,
    IPV4,
    LUHN_INVALID,
    PAN,
    PASSPORT,
    PASSPORT_LIKE,
    PHONE,
    PRIVATE_IP,
    SAFE_EMAIL,
    SHORT_DIGITS,
    SSN,
    SSN_INVALID,
    luhn_valid,
    scan,
    verhoeff_check_digit,
    verhoeff_valid,
)


def luhn_complete(prefix: str) -> str:
    """``prefix`` + the check digit that makes it Luhn-valid."""
    return next(prefix + str(d) for d in range(10) if luhn_valid(prefix + str(d)))


def luhn_break(number: str) -> str:
    last = (int(number[-1]) + 1) % 10
    return number[:-1] + str(last)


AADHAAR_OK = "49836127350" + verhoeff_check_digit("49836127350")
CARD_OK = luhn_complete("453201511283036")  # 16 digits, Visa range


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("Escalated by priya.sharma@gmail.com after the close.", EMAIL),
        ("Contact ops-lead+alerts@acme-logistics.co.in for the runbook.", EMAIL),
        ("Vendor called from +91 98765 43210 about the delay.", PHONE),
        ("UK desk: +44 20 7946 0958, ask for the duty manager.", PHONE),
        ("US line (415) 555-0132 rings the night shift.", PHONE),
        ("Fax 415-555-0132 is still listed on the invoice.", PHONE),
        ("The courier's number 98765 43210 was printed on the label.", PHONE),
        ("Call me on 9876543210 after lunch.", PHONE),
        ("KYC file lists PAN ABCDE1234F for the proprietor.", PAN),
        ("Form 16 carries BNZPM2501F in the header.", PAN),
        ("Aadhaar 2345 6789 0123 was attached to the claim.", AADHAAR),
        (f"The upload contained {AADHAAR_OK} in the remarks.", AADHAAR),
        ("Claimant SSN 123-45-6789 on the W-2.", SSN),
        ("social security number 123456789 was in the ticket", SSN),
        (f"Refund went to card {CARD_OK[:4]} {CARD_OK[4:8]} {CARD_OK[8:12]} {CARD_OK[12:]} yesterday.", CREDIT_CARD),
        (f"Card {CARD_OK} was charged twice.", CREDIT_CARD),
        (f"Amex {luhn_complete('37828224631000')} declined.", CREDIT_CARD),
        ("Login attempts from 203.45.67.89 were blocked.", IPV4),
        ("Traffic to 8.8.8.8. was fine.", IPV4),
        ("Passport no. K1234567 expires next month.", PASSPORT),
        ("US passport 123456789 was scanned at check-in.", PASSPORT),
    ],
)
def test_every_stage1_type_is_detected(text: str, category: str) -> None:
    result = scan(text)
    assert category in result.hits
    assert not result.clean


@pytest.mark.parametrize(
    ("text", "near_miss"),
    [
        # Luhn-invalid 16-digit numbers pass.
        (f"Ref {luhn_break(CARD_OK)} in the ledger.", LUHN_INVALID),
        (f"Ref {'-'.join(luhn_break(CARD_OK)[i : i + 4] for i in range(0, 16, 4))} grouped.", LUHN_INVALID),
        # Private IPv4 ranges pass.
        ("Gateway 10.0.0.1 timed out.", PRIVATE_IP),
        ("Node 10.255.3.7 rebooted.", PRIVATE_IP),
        ("Pod 172.16.5.4 was evicted.", PRIVATE_IP),
        ("Pod 172.31.255.254 was evicted.", PRIVATE_IP),
        ("Printer 192.168.1.20 is offline.", PRIVATE_IP),
        ("Loopback 127.0.0.1 answered.", PRIVATE_IP),
        # Allow-listed email domains pass.
        ("Send the sample to qa@example.com first.", SAFE_EMAIL),
        ("Fixture user alice@mail.example.org is seeded.", SAFE_EMAIL),
        ("Bounce from robot@ci.test is expected.", SAFE_EMAIL),
        # Aadhaar only at 12 digits, first digit 2-9, checksum for unspaced runs.
        ("Batch 1234 5678 9012 starts with 1.", AADHAAR_INVALID),
        (f"Order {AADHAAR_OK[:-1] + str((int(AADHAAR_OK[-1]) + 1) % 10)} shipped.", AADHAAR_INVALID),
        # Short digit runs pass.
        ("Order 123456789 shipped.", SHORT_DIGITS),
        ("Order 9876543210 shipped.", SHORT_DIGITS),
        ("Consignment 12345678901 (11 digits) cleared.", SHORT_DIGITS),
        # Near-misses of other types.
        ("Test SSN 666-12-3456 is reserved.", SSN_INVALID),
        ("Ticket K1234567 was closed.", PASSPORT_LIKE),
    ],
)
def test_false_positive_rules_pass_and_report_a_near_miss(text: str, near_miss: str) -> None:
    result = scan(text)
    assert result.clean, result
    assert near_miss in result.near_misses


@pytest.mark.parametrize("digits", [11, 13])
def test_aadhaar_only_at_exactly_12_digits(digits: int) -> None:
    number = (AADHAAR_OK * 2)[:digits]
    spaced = " ".join(number[i : i + 4] for i in range(0, digits, 4))
    if digits == 13:
        number = luhn_break(number) if luhn_valid(number) else number  # not a card either
    for form in (number, spaced):
        result = scan(f"Batch {form} was posted.")
        assert AADHAAR not in result.hits
        assert result.clean


def test_thirteen_digit_luhn_invalid_passes() -> None:
    thirteen = luhn_break(luhn_complete("401288888888"))
    assert scan(f"Container {thirteen} arrived.").clean


def test_aadhaar_not_inside_longer_runs() -> None:
    # The first 12 digits of a 16-digit Luhn-invalid number are not an Aadhaar number.
    assert scan(f"ID {AADHAAR_OK}7 and {AADHAAR_OK[:4]} {AADHAAR_OK[4:8]} {AADHAAR_OK[8:]} 1234").clean


def test_public_172_outside_the_private_block_is_an_address() -> None:
    assert scan("Scan from 172.32.0.1 logged.").hits == (IPV4,)


def test_configured_safe_domain_passes_and_others_still_hit() -> None:
    text = "Route it to support@acme-partner.com."
    assert scan(text).hits == (EMAIL,)
    assert scan(text, ["acme-partner.com"]).clean
    assert scan("Or j.doe@gmail.com.", ["acme-partner.com"]).hits == (EMAIL,)


@pytest.mark.parametrize(
    "text",
    [
        "In Q3 2024 the team closed 4521 tickets, 12% more than in Q2.",
        "Regulation 14(b) applies above 50,000 INR; see section 3.2.1 of the policy.",
        "Build v1.2.3.4 of the connector fixed the retry loop.",
        "Invoices dated 2024-03-12 were posted twice.",
        "The SLA is 24 hours for P1 and 72 hours for P2 incidents.",
    ],
)
def test_ordinary_business_numbers_are_clean(text: str) -> None:
    assert scan(text).clean


def test_luhn_and_verhoeff_reference_values() -> None:
    assert luhn_valid("4111111111111111")
    assert not luhn_valid("4111111111111112")
    assert verhoeff_valid("2363")  # the textbook example: 236 -> check digit 3
    assert not verhoeff_valid("2364")


@settings(max_examples=500, deadline=None)
@given(st.uuids())
def test_generated_ids_are_not_personal_data(u: object) -> None:
    # A random UUID has 4-4-4(-4) digit groups about once in 700 draws: they are an id, not a card.
    assert scan(f"obs {u} and trace-{str(u).replace('-', '')[:12]}").clean


@pytest.mark.parametrize("text", ["ref a3fd7291-8424-4744-9606-6a99c71b58c7", "trace-764927221031",
                                  "ord_4111111111111111", "e09e3057-4954-4182-bee0-06fbe778d7cb"])  # fmt: skip
def test_digits_glued_to_an_identifier_pass(text: str) -> None:
    assert scan(text).clean


def test_the_same_digits_standing_alone_still_hit() -> None:
    assert scan("card 4111-1111-1111-1111 on file").hits == (CREDIT_CARD,)
    assert scan("ref a3fd-4111-1111-1111-1111").clean
    assert scan("aadhaar 764927221031.").hits == (AADHAAR,)
    assert scan("id: 3057-4954-4182").hits == (AADHAAR,)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=["Nd"]), max_size=300))
def test_text_without_digits_or_at_signs_is_clean(text: str) -> None:
    assert scan(text.replace("@", " ")).clean


@settings(max_examples=100, deadline=None)
@given(st.from_regex(r"[2-9][0-9]{3} [0-9]{4} [0-9]{4}", fullmatch=True))
def test_any_spaced_12_digit_aadhaar_shape_hits(number: str) -> None:
    assert scan(f"doc {number} end").hits == (AADHAAR,)


def test_redact_replaces_each_hit_by_its_category_and_keeps_the_rest() -> None:
    from governance.pii.regex_stage import redact

    r = redact("Mail jo.doe@gmail.com or a@example.com, call +44 20 7946 0958; card 4111 1111 1111 1111.")
    assert r.text == "Mail [EMAIL] or a@example.com, call [PHONE]; card [CREDIT_CARD]."
    assert r.categories == (EMAIL, PHONE, CREDIT_CARD)
    assert redact("Nothing personal in 2024.").categories == ()
