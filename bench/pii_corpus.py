"""A deterministic, labelled synthetic corpus for the PII cascade (``bench.pii``): business observations about
workflows, anomalies and regulations in legal, finance, healthcare, logistics, retail, insurance, HR and
telecom, with PII of every stage-1 type, NER-type PII, implicit PII (quasi-identifiers), and the seed's
false-positive cases. Seeded: the same seed gives the same corpus. Every identifier in it is synthetic.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from governance.pii.regex_stage import luhn_valid, verhoeff_check_digit, verhoeff_valid


@dataclass(frozen=True)
class CorpusItem:
    text: str
    pii: bool
    category: str  # the PII kind for positives; "clean" or the false-positive case ("fp-...") for negatives
    stage: str  # the stage expected to catch it: "regex" | "ner" | "implicit" | "none"


DOMAINS = ("legal", "finance", "healthcare", "logistics", "retail", "insurance", "hr", "telecom")
ORGS = ("Acme Logistics Ltd", "Globex Bank", "Initech Services", "Umbrella Insurance", "Tata Consultancy Services",
        "HDFC Bank", "Infosys", "Deloitte", "Apollo Hospitals", "Blue Dart", "Reliance Retail", "Zenith Pharma",
        "Northwind Traders", "Contoso Healthcare", "Fabrikam Telecom", "Wayne Enterprises")  # fmt: skip
REGS = ("the GDPR", "HIPAA", "the DPDP Act 2023", "RBI's KYC master direction", "SOX section 404", "PCI DSS 4.0",
        "the EU AI Act", "IRDAI guidelines", "the Consumer Protection Act", "ISO 27001 clause 8.2")  # fmt: skip
CITIES = ("Mumbai", "Pune", "Chennai", "Bengaluru", "Delhi", "Hyderabad", "London", "Boston", "Singapore", "Dubai")
FIRST = ("Priya", "Rahul", "Anita", "Vikram", "Sunita", "Arjun", "Meera", "Karan", "John", "Emily", "Michael",
         "Sarah", "David", "Laura", "Ahmed", "Fatima", "Chen", "Olga", "Carlos", "Aisha")  # fmt: skip
LAST = ("Sharma", "Iyer", "Desai", "Mehta", "Nair", "Reddy", "Kapoor", "Banerjee", "Smith", "Johnson", "Williams",
        "Brown", "Garcia", "Khan", "Patel", "Wong", "Fischer", "Rossi", "Okafor", "Silva")  # fmt: skip
STREETS = ("Baker", "MG", "Linking", "Church", "Park", "Station", "Hill", "Lake", "Nehru", "Gandhi")
STREET_TYPES = ("Street", "Road", "Lane", "Avenue", "Marg")
TREATMENTS = ("dialysis", "chemotherapy", "surgery")
MAILERS = ("gmail.com", "yahoo.co.in", "outlook.com", "rediffmail.com")
UPPER = "ABCDEFGHJKLMNPRSTUVWXYZ"
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")  # fmt: skip

WORKFLOWS = {
    "legal": ("Contract renewals are routed to the legal queue once the counterparty signs",
              "NDAs above the standard template need a second reviewer", "Litigation holds are applied per matter"),
    "finance": ("Vendor invoices are matched against purchase orders before payment",
                "The month-end close reconciles intercompany balances", "Refunds above the limit need two approvals"),
    "healthcare": ("Discharge summaries are coded within 48 hours", "Lab orders flow from the EHR to the LIS",
                   "Prior authorisations are batched nightly"),
    "logistics": ("Shipments are consolidated at the hub before line haul", "Proof of delivery is captured by app",
                  "Customs filings are pre-cleared for repeat consignments"),
    "retail": ("Returns are restocked after a quality check", "Store replenishment runs on a min-max model",
               "Promotions are priced centrally and pushed to POS"),
    "insurance": ("Claims under the fast-track limit are auto-adjudicated", "Policy endorsements need underwriter "
                  "sign-off", "Renewal notices go out 30 days ahead"),
    "hr": ("Offer letters are generated from the approved requisition", "Exit interviews are scheduled by HR ops",
           "Payroll inputs freeze on the 25th"),
    "telecom": ("Number porting requests are validated against the donor operator", "SIM swaps need an OTP",
                "Tower alarms are triaged by the NOC"),
}  # fmt: skip
ANOMALIES = ("duplicates appeared when the nightly batch overlapped the close",
             "the retry policy doubled submissions during the outage",
             "a timezone bug shifted timestamps by 5.5 hours", "the queue backed up for about 3 hours",
             "approval emails were delayed by the mail relay", "the connector dropped records above 10,000 rows",
             "an expired certificate broke the SFTP feed", "cycle time rose 18% quarter on quarter")  # fmt: skip
LESSONS = ("An idempotency key on the API fixed it.", "Adding a reconciliation report caught the gap early.",
           "We moved the job after the cut-off.", "A dead-letter queue with alerting now covers it.",
           "Staggering the batch windows removed the contention.",
           "The runbook now has a manual fallback.")  # fmt: skip


def _opening(r: random.Random) -> str:
    d = r.choice(DOMAINS)
    return f"[{d}] {r.choice(WORKFLOWS[d])}; {r.choice(ANOMALIES)}."


def _clean(r: random.Random) -> str:
    return f"{_opening(r)} {_extra(r)} {_extra(r)} {r.choice(LESSONS)}".replace("  ", " ")


def _extra(r: random.Random) -> str:
    return r.choice((
        f"Under {r.choice(REGS)} the evidence is kept for {r.choice((3, 5, 7, 10))} years.",
        f"{r.choice(ORGS)} saw the same pattern in Q{r.randint(1, 4)} {r.choice((2023, 2024, 2025))}.",
        f"Ticket INC-{r.randint(1000, 99999)} tracks the fix; release v{r.randint(1, 9)}.{r.randint(0, 20)}.",
        f"Teams in {r.choice(CITIES)} reported it first; {r.randint(5, 60)}% of runs were affected.",
        f"The control owner signs off the {r.choice(('weekly', 'monthly', 'quarterly'))} exception report.",
        "",
    ))  # fmt: skip


def _luhn(prefix: str) -> str:
    return next(prefix + str(d) for d in range(10) if luhn_valid(prefix + str(d)))


def _digits(r: random.Random, n: int) -> str:
    return str(r.randint(1, 9)) + "".join(str(r.randint(0, 9)) for _ in range(n - 1))


def _aadhaar(r: random.Random) -> str:
    body = str(r.randint(2, 9)) + "".join(str(r.randint(0, 9)) for _ in range(10))
    return body + verhoeff_check_digit(body)


def _ip(r: random.Random) -> str:
    first = r.choice((23, 45, 62, 81, 103, 117, 151, 185, 203))
    return f"{first}.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(1, 254)}"


def _name(r: random.Random) -> str:
    return f"{r.choice(FIRST)} {r.choice(LAST)}"


def _ssn(r: random.Random) -> str:
    return f"{r.randint(1, 665):03d}-{r.randint(1, 99):02d}-{r.randint(1, 9999):04d}"


def _card(r: random.Random) -> str:
    prefix = r.choice(("4", "51", "52", "55", "6011"))
    c = _luhn(prefix + "".join(str(r.randint(0, 9)) for _ in range(15 - len(prefix))))
    return " ".join(c[i : i + 4] for i in range(0, 16, 4)) if r.random() < 0.5 else c


# Stage-1 positives: (category, fragment builder).
STAGE1: tuple[tuple[str, Callable[[random.Random], str]], ...] = (
    ("email", lambda r: f"The complaint came from {r.choice(FIRST).lower()}.{r.choice(LAST).lower()}"
                        f"{r.randint(1, 99)}@{r.choice(MAILERS)}."),
    ("phone", lambda r: r.choice((f"The driver can be reached on +91 {r.randint(70000, 99999)} {_digits(r, 5)}.",
                                  f"Caller left (617) {r.randint(200, 999)}-{_digits(r, 4)} as a callback number.",
                                  f"Escalate to +44 20 {_digits(r, 4)} {_digits(r, 4)} after hours."))),
    ("pan", lambda r: f"The vendor KYC lists PAN {''.join(r.choice('ABCDEFGHJKLMNPRSTUVWXYZ') for _ in range(3))}"
                      f"P{r.choice(UPPER)}{r.randint(1000, 9999)}{r.choice(UPPER)}."),
    ("aadhaar", lambda r: (lambda a: r.choice((f"Aadhaar {a[:4]} {a[4:8]} {a[8:]} was pasted into the remarks.",
                                               f"The scanned form showed {a} in the ID field.")))(_aadhaar(r))),
    ("ssn", lambda r: f"The W-2 correction shows SSN {_ssn(r)} for the contractor."),
    ("credit_card", lambda r: f"The refund went to card {_card(r)} instead of the wallet."),
    ("ipv4", lambda r: f"Failed logins came from {_ip(r)} for two hours."),
    ("passport", lambda r: r.choice((f"The traveller's passport no. {r.choice('JKLMNPRSTUVZ')}{_digits(r, 7)} was "
                                     "copied into the booking.",
                                     f"A US passport {_digits(r, 9)} was attached to the visa file."))),
)  # fmt: skip

# Stage-2 positives.
NER: tuple[tuple[str, Callable[[random.Random], str]], ...] = (
    ("person", lambda r: r.choice((f"{_name(r)} from the vendor side confirmed the duplicate run.",
                                   f"The exception was approved by {_name(r)} without a ticket.",
                                   f"Escalation: {_name(r)} asked the warehouse to hold the shipment."))),
    ("address", lambda r: r.choice((f"The parcel was returned to {r.randint(2, 299)} {r.choice(STREETS)} "
                                    f"{r.choice(STREET_TYPES)}, {r.choice(CITIES)} twice.",
                                    f"Delivery to Flat {r.randint(1, 40)}{r.choice('ABCD')}, {r.choice(STREETS)} "
                                    f"Apartments, {r.choice(('Andheri West', 'Koramangala', 'Salt Lake'))} failed."))),
    ("date_of_birth", lambda r: r.choice((f"The claimant, date of birth {r.randint(1, 28):02d}/{r.randint(1, 12):02d}/"
                                          f"{r.randint(1950, 2004)}, appealed.",
                                          f"The applicant born on {r.randint(1, 28)} {r.choice(MONTHS)} "
                                          f"{r.randint(1950, 2004)} failed the KYC check."))),
    ("financial_account", lambda r: r.choice((f"The reversal hit account number {_digits(r, 11)} at the branch.",
                                              f"Salary went to a/c {_digits(r, 10)} after the bank merger."))),
    ("medical_record", lambda r: r.choice((f"Lab results for MRN {_digits(r, 8)} were filed under the wrong ward.",
                                           f"Patient ID HX-{_digits(r, 6)} was duplicated in the EHR export."))),
    ("government_id", lambda r: r.choice((f"Driving licence no. MH{r.randint(10, 49)} {_digits(r, 11)} expired "
                                          "during onboarding.",
                                          f"Voter ID {''.join(r.choice('ABCDEFGHJK') for _ in range(3))}{_digits(r, 7)}"
                                          " was used as address proof."))),
)  # fmt: skip

# Implicit PII (stage 3).
IMPLICIT = (
    lambda r: f"The user in {r.choice(CITIES)} who reported the outage keeps calling the helpdesk.",
    lambda r: f"A {r.randint(25, 70)}-year-old woman from {r.choice(CITIES)} complained about the billing error.",
    lambda r: f"One of our employees was diagnosed with {r.choice(('diabetes', 'cancer', 'depression'))} and "
              "asked for flexible hours.",
    lambda r: f"The patient whose {r.choice(TREATMENTS)} slot moved twice filed a grievance.",
    lambda r: f"The customer from {r.choice(CITIES)} whose loan was rejected twice is now threatening to sue.",
    lambda r: f"Our only Sikh engineer in the {r.choice(CITIES)} office, a divorced father, asked about leave policy.",
    lambda r: f"The only female pilot at the {r.choice(CITIES)} base filed a complaint about her roster.",
    lambda r: "The tenant on the fourth floor who is undergoing chemotherapy asked for a reserved parking spot.",
    lambda r: f"Our {r.choice(CITIES)} client, a {r.randint(55, 80)}-year-old retired teacher, disputed the premium.",
    lambda r: f"His manager said the new hire from {r.choice(CITIES)} is pregnant and will need leave in May.",
)  # fmt: skip

# False-positive cases: (category, builder), all clean.
FALSE_POSITIVES: tuple[tuple[str, Callable[[random.Random], str]], ...] = (
    ("fp-luhn", lambda r: (lambda c: f"Reference {c[:4]} {c[4:8]} {c[8:12]} {c[12:]} was reused by the batch.")(
        (lambda c: c[:-1] + str((int(c[-1]) + 1) % 10))(_luhn("4" + _digits(r, 14))))),
    ("fp-private-ip", lambda r: f"The job on {r.choice(('10', '172.16', '192.168'))}."
                                f"{r.randint(0, 31) if r.random() < 0.5 else r.randint(0, 255)}.{r.randint(0, 255)}"
                                f"{'' if r.random() < 0.5 else '.' + str(r.randint(1, 254))} timed out."),
    ("fp-safe-email", lambda r: f"Test alerts go to {r.choice(('qa', 'alerts', 'noreply'))}@"
                                f"{r.choice(('example.com', 'example.org', 'ci.test'))} only."),
    ("fp-11-digits", lambda r: f"Consignment {_digits(r, 11)} cleared customs after the hold."),
    ("fp-13-digits", lambda r: (lambda n: f"AWB {n if not luhn_valid(n) else n[:-1] + str((int(n[-1]) + 1) % 10)} "
                                          "was rebooked.")(_digits(r, 13))),
    ("fp-short-digits", lambda r: f"Order {_digits(r, r.randint(4, 9))} shipped in {r.randint(2, 9)} boxes."),
    ("fp-org-name", lambda r: f"{r.choice(ORGS)} and {r.choice(ORGS)} agreed a new audit timeline."),
    ("fp-generic-role", lambda r: r.choice(("The approver must sign the purchase order before release.",
                                            "A claims handler reviews every rejected claim within two days.",
                                            "The account manager owns the renewal conversation.",
                                            f"A support agent in the {r.choice(CITIES)} centre resets passwords "
                                            "after an OTP check.",
                                            f"The on-call engineer in {r.choice(CITIES)} restarts the consumer "
                                            "when lag exceeds 5 minutes."))),
    ("fp-aggregate", lambda r: f"About {r.randint(5, 60)}% of patients in {r.choice(CITIES)} waited over an hour; "
                               f"{r.randint(100, 900)} customers were affected."),
    ("fp-technical", lambda r: r.choice(("Retry with exponential backoff and jitter capped at 30 seconds.",
                                         "The regex ^[A-Z]{5}[0-9]{4}[A-Z]$ validates PAN format on input.",
                                         "Use UUIDv7 keys so inserts stay index-friendly."))),
)  # fmt: skip


def _wrap(r: random.Random, fragment: str) -> str:
    """A fragment inside a realistic observation: context before, a lesson after."""
    return f"{_opening(r)} {fragment} {_extra(r)} {r.choice(LESSONS)}".replace("  ", " ")


def build(seed: int = 7, n_clean: int = 220, per_stage1: int = 14, per_ner: int = 14, n_implicit: int = 48,
          per_fp: int = 10) -> list[CorpusItem]:  # fmt: skip
    r = random.Random(seed)
    items = [CorpusItem(_clean(r), False, "clean", "none") for _ in range(n_clean)]
    for cat, make in STAGE1:
        items += [CorpusItem(_wrap(r, make(r)), True, cat, "regex") for _ in range(per_stage1)]
    for cat, make in NER:
        items += [CorpusItem(_wrap(r, make(r)), True, cat, "ner") for _ in range(per_ner)]
    items += [CorpusItem(_wrap(r, IMPLICIT[i % len(IMPLICIT)](r)), True, "implicit", "implicit")
              for i in range(n_implicit)]  # fmt: skip
    for cat, make in FALSE_POSITIVES:
        items += [CorpusItem(_wrap(r, make(r)), False, cat, "none") for _ in range(per_fp)]
    r.shuffle(items)
    return items


def _self_check(items: list[CorpusItem]) -> None:
    # Aadhaar positives must be valid, and no negative may carry a valid 12-digit Aadhaar by accident.
    for it in items:
        if not it.pii:
            words = [w.strip(".,;") for w in it.text.split()]
            assert not any(len(w) == 12 and w.isdigit() and w[0] in "23456789" and verhoeff_valid(w) for w in words)


if __name__ == "__main__":
    corpus = build()
    _self_check(corpus)
    print(len(corpus), "items")
