"""``hivemem bench caml [--observations N]``: collective memory (CAML) on the real parts.

Starts its own Kafka + Postgres + services in a temporary HIVEMEM_HOME (tenants on the ``enterprise``
tier, so the per-operator write limit is not what is measured), then prints:
1. ingest: N clean ANOMALY_DETECTED observations (seeded texts over the 14 domains, many deployments
   of several operators) published fire-and-forget straight to Kafka, through gate -> caml processor
   (PII cascade, reputation) -> embedder (MiniLM int8) -> caml read model (HNSW index); throughput end
   to end, and the caml processor's and the embedder's rates (from the read model, polled each second);
2. recall at N: ``POST /caml/v1/recall`` p50/p95/p99 over HTTP (sequential, unique queries, after a
   warm-up), the server's own figure, and the query service's parts measured in this process: embedding
   the query (uncached) and the recall SQL + ranking; EXPLAIN ANALYZE of the recall query;
3. observe -> recallable: observations published one by one at a modest rate; time from the publish
   call to the row that recall reads (embedding with its observation's filters) existing, by polling;
4. ``POST /caml/v1/observe`` (verdict included) and ``POST /caml/v1/validate`` p50/p95/p99;
5. PII stage-1 cost per clean observation and stage-2 (spaCy) throughput on the same generated texts
   (``bench.pii``'s functions), with the stack stopped.
Figures only: nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import re
import statistics
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import psycopg
from confluent_kafka import Consumer, Producer, TopicPartition
from psycopg_pool import AsyncConnectionPool
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from bench import BENCHES
from bench.figures import dist, load, percentile
from bench.pii import cpu_model, stage1_cost, stage2_speed
from bench.temp_stack import temporary_stack
from contracts.avro import decode_envelope
from contracts.caml_records import CamlEmbedding, CamlEvent, decode_caml
from contracts.models import ObservationPayload
from governance.caml.taxonomy import DOMAINS
from governance.pii import cascade, regex_stage
from hivemem.demo import claw_client
from hivemem.settings import Settings
from processors.caml.embedder import embedding_text
from producers.caml_client import CamlClient, CamlError
from producers.claw_client import ClawClient, producer_config
from projections.auth import mint_token
from projections.caml import queries as q
from projections.vectors import index_name
from streams.kafka import Watermarks, consumer_config

TENANTS = ("acme", "globex", "initech", "umbrella", "hooli", "soylent", "tyrell", "wonka")
CLAWS_PER_TENANT = 25
KIND = "ANOMALY_DETECTED"  # the one kind a deployment may write at reputation 0 (seed Table 4)

# --- seeded, PII-free texts over the 14 domains ----------------------------------------------------------------
# Lower case but for the first letter and acronyms: a capitalised multi-word run, a location, street or PII cue
# word ("account", "address", "ms", ...), a 6+ digit run or a singular person with a health term would send a
# text to stage 2 (or get it refused), which is not what a clean observation is.


@dataclass(frozen=True)
class Vocab:
    processes: tuple[str, ...]
    signals: tuple[str, ...]
    causes: tuple[str, ...]
    fixes: tuple[str, ...]


VOCAB: dict[str, Vocab] = {
    "legal": Vocab(
        ("contract clause review", "NDA triage", "litigation hold requests", "matter intake", "e-discovery batches",
         "redline turnaround", "outside counsel invoices", "trademark renewal filings"),
        ("review turnaround|hours", "escalation rate|%", "rework rate|%", "backlog age|days", "clause mismatch rate|%"),
        ("the new clause library was missing the indemnity variants", "a template change reset the fallback clauses",
         "intake forms stopped asking for the governing law", "the matter tagging job ran twice",
         "counterparty paper arrived as scanned images"),
        ("pre-fetching the governing law cut the follow-up turns", "a clause diff against the playbook caught it",
         "sending low-risk NDAs to self-service cleared the queue", "a weekly backlog review brought it down")),
    "finance": Vocab(
        ("invoice matching", "month-end close", "account reconciliation", "intercompany reconciliation",
         "expense report approval", "vendor payment runs", "cash application", "revenue recognition checks",
         "budget variance reporting"),
        ("duplicate payment rate|%", "match failure rate|%", "close duration|days", "unapplied cash|% of receipts",
         "exception volume|per day"),
        ("the ERP upgrade changed the tolerance for rounding", "two currencies shared one rate table",
         "the nightly batch overlapped the close window", "supplier master data had stale tax codes",
         "a retry policy doubled submissions during the outage"),
        ("an idempotency key on the payment API fixed it", "a three-way match before approval caught most of them",
         "moving the batch after the cut-off removed the overlap", "a daily exception report made it visible")),
    "procurement": Vocab(
        ("purchase requisitions", "supplier onboarding", "RFQ evaluation", "catalogue updates", "contract renewals",
         "spend classification", "purchase order changes", "sourcing events"),
        ("cycle time|days", "maverick spend share|%", "approval latency|hours", "supplier response rate|%",
         "PO change rate|per day"),
        ("approval chains grew after the reorganisation", "the catalogue feed dropped half the price updates",
         "supplier questionnaires doubled in length", "category codes were remapped without a migration",
         "requisitions above the threshold waited for a second approver"),
        ("auto-approving repeat low-value orders halved the wait", "a price sanity check on the feed stopped it",
         "a shorter questionnaire for low-risk suppliers helped", "a mapping table for the old codes fixed it")),
    "hr": Vocab(
        ("offer letter generation", "onboarding checklists", "leave approvals", "payroll input freeze",
         "performance review cycles", "job requisition approvals", "exit checklists", "benefits enrolment"),
        ("time to offer|days", "checklist completion rate|%", "approval backlog|requests",
         "payroll correction volume|per cycle", "requisition cycle time|days"),
        ("the template engine lost the grade bands", "approvals were routed to inactive managers",
         "the payroll cut-off moved two days earlier", "new hires received duplicate tasks",
         "the review form added three mandatory sections"),
        ("reassigning approvals from inactive managers cleared it", "a grade band check before sending caught it",
         "sending the cut-off reminder earlier reduced corrections", "deduplicating tasks by role helped")),
    "customer_support": Vocab(
        ("ticket triage", "refund requests", "chat handoffs", "warranty claims", "password reset tickets",
         "escalations to tier two", "order status queries", "callback scheduling"),
        ("first response time|minutes", "reopen rate|%", "handle time|minutes", "escalation share|%",
         "backlog size|tickets"),
        ("the macro for refunds pointed to an old policy", "chat transfers lost the conversation history",
         "a release changed the order status labels", "the knowledge base search returned stale articles",
         "the callback queue ignored time windows"),
        ("linking the macro to the current policy fixed the reopens", "carrying the transcript on handoff helped",
         "a status glossary in the reply templates cut follow-ups", "reindexing the knowledge base brought it back")),
    "logistics": Vocab(
        ("shipment consolidation", "proof of delivery capture", "customs pre-clearance", "carrier booking",
         "last-mile dispatch", "returns pickup", "cross-dock transfers", "line haul planning"),
        ("on-time delivery rate|% missed", "dwell time|hours", "failed pickup rate|%", "booking rejection rate|%",
         "damage claims|per week"),
        ("the carrier API throttled bookings at peak", "scanners lost sync after the firmware update",
         "cut-off times were not adjusted for the holiday", "pallet labels were printed twice",
         "the planning tool ignored vehicle capacity limits"),
        ("spreading bookings over the hour avoided the throttle", "a sync check at shift start caught it",
         "a holiday calendar for cut-offs fixed the misses", "a capacity check before dispatch helped")),
    "manufacturing": Vocab(
        ("line changeovers", "quality inspections", "spare parts replenishment", "batch release",
         "preventive maintenance", "work order scheduling", "scrap reporting", "tooling calibration"),
        ("scrap rate|%", "changeover duration|minutes", "unplanned downtime|hours per week", "first pass yield|% lost",
         "maintenance backlog|work orders"),
        ("a sensor drifted after recalibration", "the scheduling job skipped the maintenance windows",
         "a supplier changed the resin grade", "inspection sampling was halved by mistake",
         "the changeover checklist missed the torque step"),
        ("an automatic drift check on the sensor caught it", "blocking maintenance windows in the scheduler helped",
         "incoming material checks on the resin grade fixed it", "restoring the sampling plan brought it back")),
    "healthcare": Vocab(
        ("discharge summary coding", "lab orders sent to the LIS", "prior authorisation batches",
         "appointment reminders", "bed turnover reporting", "pharmacy stock reorders", "claims coding review",
         "referral intake"),
        ("coding backlog|days", "denial rate|%", "no-show rate|%", "turnaround time|hours", "reorder misses|per week"),
        ("a code set update was loaded a week late", "reminder messages went out after the appointment window",
         "the interface engine queued orders during the upgrade", "reorder points were set from last year",
         "authorisation batches hit the payer's new size limit"),
        ("loading code sets on release day fixed the denials", "sending reminders two days ahead cut no-shows",
         "splitting the batches under the payer's limit cleared them", "recomputing reorder points helped")),
    "real_estate": Vocab(
        ("lease renewals", "maintenance requests", "rent reconciliation", "property listings", "move-in inspections",
         "service charge budgets", "vacancy reporting", "vendor work orders"),
        ("renewal rate|% lapsed", "request resolution time|days", "listing update lag|hours", "arrears share|%",
         "vacancy duration|weeks"),
        ("renewal notices went out after the notice period", "the listing feed stopped syncing photos",
         "work orders were assigned to expired vendor contracts", "service charge budgets used the old rates",
         "inspection reports were not linked to the lease"),
        ("sending notices ninety days ahead restored renewals", "a feed health check caught the photo sync",
         "checking vendor contract dates before assignment fixed it", "linking reports to the lease helped")),
    "education": Vocab(
        ("course enrolment", "assignment grading", "timetable generation", "library loans", "exam scheduling",
         "fee reminders", "learning platform logins", "transcript requests"),
        ("grading turnaround|days", "enrolment errors|per day", "timetable clashes|per week", "login failures|%",
         "request backlog|requests"),
        ("the timetable solver ignored room capacity", "single sign-on tokens expired too early",
         "grading rubrics were not copied to new sections", "fee reminders used an outdated schedule",
         "enrolment caps were not raised after the room change"),
        ("adding room capacity to the solver removed the clashes", "a longer token lifetime fixed the logins",
         "copying rubrics with the section template helped", "syncing caps with rooms cleared the errors")),
    "government": Vocab(
        ("permit applications", "benefit claim processing", "records requests", "grant disbursements",
         "inspection scheduling", "procurement notices", "tax filing support", "service portal submissions"),
        ("processing time|days", "resubmission rate|%", "backlog age|days", "payment delays|days",
         "portal error rate|%"),
        ("a form change made an optional field mandatory", "the portal timed out on large uploads",
         "grant payments waited for a manual sign-off", "inspection slots were double booked",
         "records requests were split across two queues"),
        ("making the field optional again cut resubmissions", "chunked uploads fixed the portal timeouts",
         "delegated sign-off for small grants cleared the delays", "merging the queues reduced the backlog")),
    "retail": Vocab(
        ("store replenishment", "returns restocking", "promotion pricing", "online order picking",
         "click and collect", "inventory counts", "markdown planning", "supplier deliveries"),
        ("stockout rate|%", "pick accuracy|% errors", "price mismatch rate|%", "return processing time|hours",
         "shrink|% of sales"),
        ("promotions were pushed to POS after the store opened", "the min-max model used last season's demand",
         "returns waited for a quality check that was no longer required", "pick lists were sorted by SKU",
         "delivery slots overlapped the inventory count"),
        ("pushing prices before opening removed the mismatches", "refreshing demand weekly cut stockouts",
         "skipping the obsolete quality check cleared the returns", "sorting pick lists by aisle helped")),
    "technology": Vocab(
        ("the checkout service", "the nightly ETL", "the search index rebuild", "the deploy pipeline",
         "the message queue consumers", "the auth token service", "the reporting database", "the cache layer"),
        ("p95 latency|seconds", "error rate|%", "queue depth|thousand messages",
         "connection pool exhaustion|events per hour", "retry storms|per day"),
        ("a connection pool was sized for the old replica count", "a config flag disabled the cache warm-up",
         "the retry policy had no jitter", "an index was dropped by a migration", "a certificate expired on a proxy"),
        ("raising the pool size and adding a timeout fixed it", "restoring the warm-up cut cold-start errors",
         "exponential backoff with jitter stopped the storms", "recreating the index brought latency back")),
    "general": Vocab(
        ("weekly status reporting", "meeting scheduling", "document approvals", "handoffs between teams",
         "shared inbox triage", "onboarding of new tools", "knowledge base updates", "travel request approvals"),
        ("turnaround time|hours", "handoff delays|hours", "approval backlog|requests", "duplicate requests|per week",
         "missed deadlines|per month"),
        ("two teams used different templates for the same request", "reminders went to an unmonitored inbox",
         "approvals waited on people out of office", "the tool migration lost the saved filters",
         "status updates were collected by hand"),
        ("one shared template removed the duplicates", "sending reminders to the team queue fixed it",
         "automatic delegation during absences cleared the backlog", "an automated digest replaced the manual step")),
}  # fmt: skip
WINDOWS = ("1 h", "6 h", "24 h", "48 h", "7 days", "14 days", "30 days")
SINCE = ("since the last release", "after the quarterly update", "during month end", "over the last week",
         "after the vendor change", "since the migration", "during the peak season",
         "after the policy update")  # fmt: skip
SITES = ("Pune", "Chennai", "Dublin", "Singapore", "Rotterdam", "Austin", "Leeds", "Nagpur")
LETTERS = "abcdefghijkmnopqrstuvwxyz"


@dataclass(frozen=True)
class Obs:
    domain: str
    summary: str
    pattern: dict[str, Any]
    evidence: list[str]

    def content(self) -> str:
        """What the caml processor scans for PII (summary, canonical pattern, evidence)."""
        return "\n".join([self.summary, json.dumps(self.pattern, sort_keys=True), *self.evidence])


def new_id(prefix: str) -> str:
    """A random id of letters only. The caml processor scans the id for PII too, and the SDK's default
    ``obs-<uuid4>`` escalates to stage 2 for about 2.6 % of ids (a 6+ digit run) and is refused as an Aadhaar
    number for about 0.17 % (three hyphenated 4-digit groups): not what this bench measures."""
    return prefix + "-" + "".join(LETTERS[b % len(LETTERS)] for b in os.urandom(20))


def _ref(r: random.Random) -> str:
    return r.choice(("trace", "run", "ticket", "log", "case")) + "-" + "".join(r.choices(LETTERS, k=10))


def sentences(text: str) -> str:
    """Capitalise the first letter of each sentence."""
    return ". ".join(part[:1].upper() + part[1:] for part in text.split(". "))


def observation(r: random.Random) -> Obs:
    domain = r.choice(DOMAINS)
    v = VOCAB[domain]
    proc, (sig, unit) = r.choice(v.processes), r.choice(v.signals).split("|")
    cause, fix = r.choice(v.causes), r.choice(v.fixes)
    if r.random() < 0.04:  # a site name: stage 2 runs (a location word) and lets it through
        proc = f"{proc} at the {r.choice(SITES)} site"
    base = round(r.uniform(0.5, 12.0), 1)
    obs = round(base * r.uniform(1.6, 6.0), 1)
    window, since = r.choice(WINDOWS), r.choice(SINCE)
    text = r.choice((
        f"{sig} for {proc} rose from {base} to {obs} {unit} within {window} {since}; {cause}. {fix}.",
        f"{proc}: {sig} at {obs} {unit} against a baseline of {base} {unit} over {window}, because {cause}; "
        f"{fix}.",
        f"{since}, {sig} in {proc} went up {obs / base:.1f}x over {window}. Root cause: {cause}. Mitigation: {fix}.",
        f"anomaly in {proc}: {sig} went from {base} to {obs} {unit} {since}. {cause}, and {fix}.",
        f"{sig} for {proc} up from {base} to {obs} {unit} over {window}.",
        f"{proc}: {sig} at {obs / base:.1f}x the baseline {since}; {cause}.",
    ))  # fmt: skip
    pattern = {"signal": f"{sig} in {proc}", "baseline": base, "observed": obs, "window": window}
    refs = list(dict.fromkeys(_ref(r) for _ in range(r.randint(3, 6))))
    return Obs(domain, sentences(text), pattern, refs)


def queries(n: int, seed: int) -> list[tuple[str, str]]:
    """``n`` unique (domain, question) pairs: every one misses the API's query-embedding cache."""
    r = random.Random(seed)
    out: dict[str, str] = {}
    forms = ("why is {s} up for {p} {w}?", "how do other teams reduce {s} in {p}?", "{p} {s} spike root cause {w}",
             "what fixed {s} for {p} {w}?", "has anyone seen {s} rising in {p} {w}?")  # fmt: skip
    while len(out) < n:
        domain = r.choice(DOMAINS)
        v = VOCAB[domain]
        text = r.choice(forms).format(s=r.choice(v.signals).split("|")[0], p=r.choice(v.processes), w=r.choice(SINCE))
        out.setdefault(text, domain)
    return [(d, t) for t, d in out.items()]


# --- helpers ---------------------------------------------------------------------------------------------------


def scalar(conn: psycopg.Connection[tuple[Any, ...]], sql: str, args: Sequence[object] = ()) -> int:
    row = conn.execute(sql, args).fetchone()  # type: ignore[arg-type]
    return int(row[0]) if row and row[0] is not None else 0


ACCEPTED = "SELECT count(*) FROM caml.caml_observations"
# A vector recall can return: the observation's filters (active, domain, expiry) copied onto it.
RECALLABLE = "SELECT count(*) FROM caml.caml_obs_embeddings WHERE expires_at IS NOT NULL"


def claws(settings: Settings, producer: Producer | None = None) -> list[ClawClient]:
    return [claw_client(settings, t, f"claw-{i:02d}", producer) for t in TENANTS for i in range(CLAWS_PER_TENANT)]


def payload(o: Obs, oid: str) -> ObservationPayload:
    """What ``ClawClient.observe`` publishes (built here so a bulk load need not wait for each delivery)."""
    return ObservationPayload(observation_id=oid, observation_type=KIND, domain=o.domain,  # type: ignore[arg-type]
                              summary=o.summary, pattern=json.dumps(o.pattern, sort_keys=True),
                              evidence=o.evidence, confidence=0.7)  # fmt: skip


# --- 1. ingest -------------------------------------------------------------------------------------------------


@dataclass
class Ingest:
    seconds: float  # first publish to the last observation recallable
    publish_s: float
    judged: int  # the caml processor's verdicts (its audit entries on Kafka)
    embedded: int  # the embedder's vectors on Kafka
    accepted: int  # observations in the read model
    recallable: int  # vectors in the read model with their observation's filters
    rates: dict[str, float]  # stage -> steady rate (10-90 %)
    refusals: dict[str, int]


def crossing(samples: list[tuple[float, int]], level: float) -> float | None:
    return next((t for t, c in samples if c >= level), None)


def steady_rate(samples: list[tuple[float, int]], total: int) -> float:
    """Items/s between 10 % and 90 % of ``total`` (start-up and the tail left out)."""
    a, b = crossing(samples, 0.1 * total), crossing(samples, 0.9 * total)
    if a is None or b is None or b <= a:
        return float("nan")
    return 0.8 * total / (b - a)


def ingest(settings: Settings, n: int, seed: int, console: Console) -> Ingest:
    r = random.Random(seed)
    producer = Producer(producer_config(settings.require_kafka(), **{"linger.ms": 20}))
    fleet = claws(settings, producer)
    names = settings.topics
    marks = Watermarks(settings.require_kafka())

    def ends(topic: str) -> int:
        return sum(marks([topic]).values())

    errors: list[str] = []
    stages = ("judged", "embedded", "recallable")
    samples: dict[str, list[tuple[float, int]]] = {k: [] for k in stages}
    columns = (TextColumn("{task.description:<24}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TimeRemainingColumn())  # fmt: skip
    with psycopg.connect(settings.require_database(), autocommit=True) as conn, \
            Progress(*columns, console=console) as bar:  # fmt: skip
        base = {"judged": ends(names.caml_audit), "embedded": ends(names.caml_embeddings),
                "recallable": scalar(conn, RECALLABLE), "accepted": scalar(conn, ACCEPTED)}  # fmt: skip
        t_pub = bar.add_task("published (Kafka)", total=n, rate="")
        tasks = {"judged": bar.add_task("judged (caml processor)", total=n, rate=""),
                 "embedded": bar.add_task("embedded (embedder)", total=n, rate=""),
                 "recallable": bar.add_task("recallable (read model)", total=n, rate="")}  # fmt: skip
        t0 = time.perf_counter()
        last_poll = t0

        def poll() -> dict[str, int]:
            now = {"judged": ends(names.caml_audit) - base["judged"],
                   "embedded": ends(names.caml_embeddings) - base["embedded"],
                   "recallable": scalar(conn, RECALLABLE) - base["recallable"]}  # fmt: skip
            at = time.perf_counter() - t0
            for k in stages:
                samples[k].append((at, now[k]))
                bar.update(tasks[k], completed=now[k], rate=f"{now[k] / max(at, 1e-9):6.0f}/s")
            return now

        for i in range(n):
            c = fleet[i % len(fleet)]
            env = c.build("observation", payload(observation(r), new_id("obs")))
            c.publish_envelope_async(env, lambda tok, err: errors.append(err) if err else None)
            if i % 500 == 499:
                bar.update(t_pub, completed=i + 1, rate=f"{(i + 1) / (time.perf_counter() - t0):6.0f}/s")
                if time.perf_counter() - last_poll >= 1.0:
                    poll()
                    last_poll = time.perf_counter()
        producer.flush(60)
        publish_s = time.perf_counter() - t0
        bar.update(t_pub, completed=n, rate=f"{n / publish_s:6.0f}/s")
        stalled_since, best = time.monotonic(), (-1, -1, -1)
        while True:
            now = poll()
            accepted = scalar(conn, ACCEPTED) - base["accepted"]
            if now["judged"] >= n and now["embedded"] >= accepted and now["recallable"] >= accepted:
                break
            progress = (now["judged"], now["embedded"], now["recallable"])
            if progress != best:
                best, stalled_since = progress, time.monotonic()
            elif time.monotonic() - stalled_since > 180:
                console.print(f"[red]no progress for 180 s ({now}, accepted {accepted}); giving up[/red]")
                break
            time.sleep(1.0)
        seconds = time.perf_counter() - t0
        refusals = dict(conn.execute(
            "SELECT coalesce(reason_code, '?'), count(*) FROM caml.caml_audit_log WHERE operation = 'OBSERVE' "
            "AND outcome <> 'ACCEPTED' GROUP BY 1").fetchall())  # fmt: skip
        gate = scalar(conn, "SELECT count(*) FROM audit.events WHERE type = 'observation' AND outcome = 'REJECTED'")
        if gate:
            refusals["gate"] = gate
    marks.close()
    if errors:
        refusals["publish errors"] = len(errors)
    rates = {k: steady_rate(samples[k], samples[k][-1][1]) for k in stages}
    return Ingest(seconds, publish_s, now["judged"], now["embedded"], accepted, now["recallable"], rates, refusals)


def mean_tokens(seed: int, sample: int = 500) -> float:
    """Mean tokens the embedder sees for the ingested texts (the first ``sample`` of them)."""
    from hivemem.caml_wiring import warm_embedder
    from inference.minilm import MiniLmEmbedder

    emb = warm_embedder()
    if not isinstance(emb, MiniLmEmbedder):
        return float("nan")
    r = random.Random(seed)
    obs = [observation(r) for _ in range(sample)]
    return statistics.fmean(emb.token_count(embedding_text(o.summary, json.dumps(o.pattern))) for o in obs)


# --- 2. recall -------------------------------------------------------------------------------------------------


def recall_http(api: str, token: str, qs: list[tuple[str, str]], domain: bool) -> tuple[list[float], list[float]]:
    """(client-side ms, server-reported ms) of sequential recalls (k=5)."""
    client, server = [], []
    with httpx.Client(base_url=api, headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
        for d, text in qs:
            body: dict[str, Any] = {"query": text, "k": 5}
            if domain:
                body["domain"] = d
            t = time.perf_counter()
            res = http.post("/caml/v1/recall", json=body)
            client.append((time.perf_counter() - t) * 1000)
            res.raise_for_status()
            server.append(float(res.json()["latencyMs"]))
    return client, server


def healthz(api: str, count: int) -> list[float]:
    out = []
    with httpx.Client(base_url=api, timeout=30) as http:
        for _ in range(count):
            t = time.perf_counter()
            http.get("/healthz").raise_for_status()
            out.append((time.perf_counter() - t) * 1000)
    return out


def recall_parts(settings: Settings, tenant: str, qs: list[tuple[str, str]]) -> tuple[list[float], list[float], str]:
    """In this process, as the API does it: embed_query (uncached) ms, and recall SQL + ranking ms."""
    from hivemem.caml_wiring import warm_embedder

    emb = warm_embedder()
    vectors, embed_ms = [], []
    for _, text in qs:
        t = time.perf_counter()
        vectors.append(emb.embed_query(text))
        embed_ms.append((time.perf_counter() - t) * 1000)

    async def sql() -> list[float]:
        config = settings.load_config()
        url, key = settings.app_database_url(config), config.token_secret
        async with AsyncConnectionPool(url, min_size=1, max_size=2, open=False) as pool:
            await pool.open()
            out = []
            for vec in vectors:
                t = time.perf_counter()
                await q.recall(pool, tenant, vec, emb.model_id, k=5, domain=None, kinds=None, min_score=0.0,
                               candidates=50, pseudonym_key=key)  # fmt: skip
                out.append((time.perf_counter() - t) * 1000)
            return out

    return embed_ms, asyncio.run(sql()), emb.model_id


def explain(settings: Settings, tenant: str, model: str, text: str, domain: str | None) -> list[str]:
    """EXPLAIN ANALYZE of the recall query (as ``projections.caml.queries.recall`` builds it), as the app role."""
    from hivemem.caml_wiring import embedder

    vec = "[" + ",".join(f"{x:.7g}" for x in embedder().embed_query(text)) + "]"
    model_lit = "'" + model.replace("'", "''") + "'"
    where = f"e.model = {model_lit} AND e.active AND e.expires_at >= %s"
    args: list[object] = [vec, int(time.time() * 1000)]
    if domain is not None:
        where += " AND e.domain = %s"
        args.append(domain)
    sql = f"""EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) WITH near AS (
                SELECT e.observation_id, 1 - (e.embedding <=> %s::vector) AS sim
                FROM caml.caml_obs_embeddings e WHERE {where}
                ORDER BY e.embedding <=> %s::vector LIMIT %s)
            SELECT o.observation_id, coalesce(r.score, 0), near.sim
            FROM near JOIN caml.caml_observations o USING (observation_id)
            LEFT JOIN caml.caml_reputation r ON r.tenant = o.tenant AND r.claw_id = o.claw_id
            WHERE o.active"""
    url = settings.app_database_url(settings.load_config())
    with psycopg.connect(url) as conn, conn.transaction():
        conn.execute("SELECT set_config('hivemem.tenant', %s, true)", (tenant,))
        conn.execute("SET LOCAL hnsw.ef_search = 64")
        conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        rows = conn.execute(sql, (*args, vec, 50)).fetchall()  # type: ignore[arg-type]
    return [re.sub(r"'\[[^']*\]'::vector", "'[query vector]'::vector", str(row[0])) for row in rows]


# --- 3. observe -> recallable ----------------------------------------------------------------------------------


@dataclass
class Probes:
    accepted_ms: list[float]  # publish -> the observation in the read model (gate, caml processor, projection)
    recallable_ms: list[float]  # publish -> its vector there too (+ embedder, projection)
    hops: dict[str, list[float]]  # publish -> on each topic on the way (broker log time)
    recalled: int  # returned by an HTTP recall of their own summary
    count: int


def log_times(settings: Settings, topic: str, since_ms: int, ids: set[str]) -> dict[str, int]:
    """Broker log time (ms) of the first record on ``topic`` about each of ``ids`` since ``since_ms``: the
    gate's accepted envelope, the caml processor's OBSERVATION_ACCEPTED or the embedder's vector."""
    c = Consumer(consumer_config(settings.require_kafka(), f"bench-{new_id('times')}"))
    try:
        parts = c.list_topics(topic, timeout=10).topics[topic].partitions
        starts = c.offsets_for_times([TopicPartition(topic, p, since_ms) for p in parts], timeout=10)
        ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in parts}
        todo = {tp.partition for tp in starts if 0 <= tp.offset < ends[tp.partition]}
        c.assign([tp for tp in starts if tp.partition in todo])
        out: dict[str, int] = {}
        deadline = time.monotonic() + 60
        while todo and time.monotonic() < deadline:
            for m in c.consume(500, 0.5):
                if m.error() is not None:
                    continue
                oid = about(settings, topic, m.value() or b"")
                if oid in ids:
                    out.setdefault(oid, int(m.timestamp()[1]))
                if (m.offset() or 0) + 1 >= ends[m.partition() or 0]:
                    todo.discard(m.partition() or 0)
        return out
    finally:
        c.close()


def about(settings: Settings, topic: str, value: bytes) -> str | None:
    names = settings.topics
    if topic == names.accepted("observation"):
        p = decode_envelope(value).payload
        return p.observation_id if isinstance(p, ObservationPayload) else None
    if topic == names.caml_events:
        ev = decode_caml(value, CamlEvent)
        return ev.observation.observation_id if ev.kind == "OBSERVATION_ACCEPTED" and ev.observation else None
    return decode_caml(value, CamlEmbedding).observation_id


def observe_to_recallable(settings: Settings, count: int, rate: float, seed: int, token: str) -> Probes:
    r = random.Random(seed)
    claw = claw_client(settings, TENANTS[0], "latency-probe")
    sent: dict[str, float] = {}
    wall: dict[str, float] = {}  # publish time, epoch ms, to compare with broker log times
    accepted: dict[str, float] = {}
    recallable: dict[str, float] = {}
    summaries: dict[str, str] = {}
    lock = threading.Lock()
    done = threading.Event()

    def watch() -> None:
        with psycopg.connect(settings.require_database(), autocommit=True) as conn:
            while not done.is_set():
                with lock:
                    pending = [k for k in sent if k not in recallable]
                if pending:
                    rows = conn.execute(
                        "SELECT o.observation_id, coalesce(e.active AND e.expires_at >= %s, false) "
                        "FROM caml.caml_observations o LEFT JOIN caml.caml_obs_embeddings e USING (observation_id) "
                        "WHERE o.observation_id = ANY(%s)", (int(time.time() * 1000), pending)).fetchall()  # fmt: skip
                    now = time.perf_counter()
                    with lock:
                        for oid, ready in rows:
                            accepted.setdefault(str(oid), now)
                            if ready:
                                recallable.setdefault(str(oid), now)
                time.sleep(0.01)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    start = time.perf_counter()
    for i in range(count):
        target = start + i / rate
        while (left := target - time.perf_counter()) > 0:
            time.sleep(left)
        o = observation(r)
        oid = new_id("lat")
        summaries[oid] = o.summary
        t, wall[oid] = time.perf_counter(), time.time() * 1000
        claw.observe(KIND, o.domain, o.summary, pattern=o.pattern, evidence=o.evidence, observation_id=oid)
        with lock:
            sent[oid] = t
    deadline = time.monotonic() + 60
    while len(recallable) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    done.set()
    watcher.join(5)
    found = 0
    with CamlClient(f"http://{settings.api_host}:{settings.api_port}", token, timeout_s=30) as caml:
        for oid, text in summaries.items():
            if any(h.observation_id == oid for h in caml.recall(text, k=10, timeout_s=30)):
                found += 1
    names, since = settings.topics, int(min(wall.values())) - 1000
    hops = {}
    for label, topic in (("gate (accepted.observation)", names.accepted("observation")),
                         ("caml processor (caml.events)", names.caml_events),
                         ("embedder (caml.embeddings)", names.caml_embeddings)):  # fmt: skip
        at = log_times(settings, topic, since, set(wall))
        hops[label] = [at[k] - wall[k] for k in wall if k in at]
    return Probes([(accepted[k] - sent[k]) * 1000 for k in sent if k in accepted],
                  [(recallable[k] - sent[k]) * 1000 for k in sent if k in recallable], hops, found,
                  count)  # fmt: skip


# --- 4. observe and validate over HTTP -------------------------------------------------------------------------


def http_writes(settings: Settings, count: int, seed: int) -> tuple[list[float], list[float], dict[str, int]]:
    r = random.Random(seed)
    api = f"http://{settings.api_host}:{settings.api_port}"
    secret = settings.load_config().token_secret
    outcomes: dict[str, int] = {}
    observe_ms, validate_ms = [], []
    writers = [CamlClient(api, mint_token(secret, TENANTS[1], "bench", f"http-{i}"), timeout_s=60) for i in range(5)]

    def observe(c: CamlClient, wait_ms: int) -> str:
        o = observation(r)
        try:
            res = c.observe(KIND, o.domain, o.summary, pattern=o.pattern, evidence=o.evidence,
                            observation_id=new_id("http"), wait_ms=wait_ms)  # fmt: skip
        except CamlError as e:
            return e.code
        return res.status if res else "?"

    for c in writers:  # one unmeasured write each: connections open, code paths warm
        observe(c, 30_000)
    for i in range(count):
        t = time.perf_counter()
        key = "observe " + observe(writers[i % len(writers)], 10_000)
        observe_ms.append((time.perf_counter() - t) * 1000)
        outcomes[key] = outcomes.get(key, 0) + 1
    with psycopg.connect(settings.require_database(), autocommit=True) as conn:
        ids = [str(x[0]) for x in conn.execute(
            "SELECT observation_id FROM caml.caml_observations WHERE tenant NOT IN (%s, %s) ORDER BY random() LIMIT %s",
            (TENANTS[1], TENANTS[2], count + 5)).fetchall()]  # fmt: skip
    validators = [CamlClient(api, mint_token(secret, TENANTS[2], "bench", f"checker-{i}"), timeout_s=60)
                  for i in range(5)]  # fmt: skip
    for c, oid in zip(validators, ids[:5], strict=True):  # warm-up, unmeasured
        c.validate(oid, "CONFIRMED", wait_ms=30_000)
    for i, oid in enumerate(ids[5:]):
        t = time.perf_counter()
        try:
            res = validators[i % len(validators)].validate(oid, r.choice(("CONFIRMED", "CONFIRMED", "INCONCLUSIVE")),
                                                           wait_ms=10_000)  # fmt: skip
            key = f"validate {res.status if res else '?'}"
        except CamlError as e:
            key = f"validate {e.code}"
        validate_ms.append((time.perf_counter() - t) * 1000)
        outcomes[key] = outcomes.get(key, 0) + 1
    for c in writers + validators:
        c.close()
    return observe_ms, validate_ms, outcomes


# --- main ------------------------------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="hivemem bench caml", description=BENCHES["caml"])
    ap.add_argument("--observations", type=int, default=100_000, help="observations loaded into the pool")
    ap.add_argument("--queries", type=int, default=500, help="measured recalls (after 50 warm-up ones)")
    ap.add_argument("--probes", type=int, default=200, help="observations timed from publish to recallable")
    ap.add_argument("--probe-rate", type=float, default=20.0, help="their rate (per second)")
    ap.add_argument("--writes", type=int, default=200, help="observes and validates timed over HTTP")
    ap.add_argument("--seed", type=int, default=7, help="seed of the generated observations")
    args = ap.parse_args(argv)
    console = Console(stderr=True)  # progress on stderr; the figures on stdout
    n = args.observations

    print(f"hivemem bench caml  {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    print(f"machine: {cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{len(TENANTS)} operators (enterprise tier) x {CLAWS_PER_TENANT} deployments; load average "
          f"{load()} before the start (the machine is shared)")  # fmt: skip
    tenants = dict.fromkeys(TENANTS, True)
    with temporary_stack(tenants, dict.fromkeys(TENANTS, "enterprise")) as settings:
        api = f"http://{settings.api_host}:{settings.api_port}"
        secret = settings.load_config().token_secret
        reader = mint_token(secret, TENANTS[3], "bench", "reader", ttl_s=6 * 3600)

        # 1. ingest
        ing = ingest(settings, n, args.seed, console)
        tokens = mean_tokens(args.seed)
        print(f"\n1. ingest of {n:,} observations (gate -> caml processor + PII -> embedder -> read model)  "
              f"[load {load()}]")  # fmt: skip
        print(f"   published in {ing.publish_s:.1f} s ({n / ing.publish_s:,.0f}/s, fire and forget)")
        print(f"   end to end: {ing.recallable:,} recallable in {ing.seconds:.1f} s = "
              f"{ing.recallable / ing.seconds:,.0f} observations/s")  # fmt: skip
        print(f"   steady rates (10-90 %): caml processor {ing.rates['judged']:,.0f}/s, embedder "
              f"{ing.rates['embedded']:,.0f}/s, read model {ing.rates['recallable']:,.0f}/s "
              f"(embedding text: {tokens:.0f} tokens on average)")  # fmt: skip
        print(f"   judged {ing.judged:,}, accepted {ing.accepted:,}, embedded {ing.embedded:,}, "
              f"refused {ing.refusals or 'none'}")  # fmt: skip

        # 2. recall
        qs = queries(args.queries * 2 + 100, args.seed + 1)
        warm, measured, domained = qs[:50], qs[50 : 50 + args.queries], qs[50 + args.queries :][: args.queries // 2]
        recall_http(api, reader, warm, domain=False)
        client_ms, server_ms = recall_http(api, reader, measured, domain=False)
        client_d, _ = recall_http(api, reader, domained, domain=True)
        cached_c, cached_s = recall_http(api, reader, [measured[0]] * 100, domain=False)
        health = healthz(api, 200)
        embed_ms, sql_ms, model = recall_parts(settings, TENANTS[3], qs[-args.queries :])
        print(f"\n2. recall at {ing.accepted:,} observations (k=5, 50 candidates, unique queries, sequential)  "
              f"[load {load()}]")  # fmt: skip
        rows = (("HTTP POST /caml/v1/recall (goal p50 <= 10, p95 <= 25)", client_ms),
                ("  server-reported: embed + SQL + rank", server_ms),
                ("HTTP recall with a domain filter", client_d),
                ("HTTP recall, one repeated query (embedding cached)", cached_c),
                ("  server-reported: SQL + rank only", cached_s),
                ("HTTP GET /healthz (round trip, nothing else)", health),
                ("in process: embed_query (uncached)", embed_ms),
                ("in process: recall SQL + ranking", sql_ms))  # fmt: skip
        for label, values in rows:
            print(f"   {label:<54} {dist(values)}")
        plan = explain(settings, TENANTS[3], model, measured[0][1], None)
        plan_d = explain(settings, TENANTS[3], model, domained[0][1], domained[0][0])
        idx = index_name(model)
        for label, p in (("no filter", plan), ("domain filter", plan_d)):
            used = any(idx in line for line in p)
            print(f"   EXPLAIN ANALYZE ({label}): per-model partial HNSW index {idx} "
                  f"{'USED' if used else 'NOT used'}")  # fmt: skip
            for line in p:
                print(f"     {line}")

        # 3. observe -> recallable
        pr = observe_to_recallable(settings, args.probes, args.probe_rate, args.seed + 2, reader)
        print(f"\n3. observe -> recallable, {pr.count} observations one by one at {args.probe_rate:g}/s "
              f"(from the publish call, read model polled every 10 ms)  [load {load()}]")  # fmt: skip
        print(f"   recallable (vector + filters in the read model)     {dist(pr.recallable_ms)}")
        print("   on the way, publish -> log time of the record on the topic of:")
        for label, values in pr.hops.items():
            print(f"     {label:<48}  {dist(values)}")
        print(f"   observation row in the read model (no vector yet)   {dist(pr.accepted_ms)}")
        print(f"   {pr.recalled}/{pr.count} returned by a recall of their own summary (k=10); "
              f"{pr.count - len(pr.recallable_ms)} not recallable within 60 s")  # fmt: skip

        # 4. observe / validate over HTTP
        obs_ms, val_ms, outcomes = http_writes(settings, args.writes, args.seed + 3)
        seen = ", ".join(f"{k} {v}" for k, v in outcomes.items())
        print(f"\n4. writes over HTTP, sequential, verdict included ({seen})  [load {load()}]")
        print(f"   POST /caml/v1/observe  (clean)  {dist(obs_ms)}   (Table 8: 80/200/350 ms)")
        print(f"   POST /caml/v1/validate          {dist(val_ms)}   (Table 8: 20/50/100 ms)")

    # 5. PII stages on the same generated texts, with the stack stopped
    r = random.Random(args.seed + 4)
    texts = [observation(r).content() for _ in range(2000)]
    escalated = sum(bool(cascade.stage2_reasons(t, regex_stage.scan(t).near_misses)) for t in texts)
    s1 = stage1_cost(texts, 5)
    from inference.ner import SpacyNer

    ner = SpacyNer()
    ner.warm_up()
    single, lat2, batched = stage2_speed(ner, texts[:400])
    print(f"\n5. PII cascade on {len(texts):,} generated clean observations ({statistics.fmean(map(len, texts)):.0f} "
          f"chars on average; {escalated / len(texts):.1%} escalate to stage 2 under the cascade policy)")  # fmt: skip
    print(f"   stage 1 (regex) per observation: {dist(s1, digits=4)}")
    print(f"   stage 2 (spaCy {ner.model}, beam {ner.beam_width}): {single:,.0f} texts/s one at a time "
          f"(p50 {percentile(lat2, 0.5):.1f} ms, p99 {percentile(lat2, 0.99):.1f} ms), {batched:,.0f} texts/s in "
          "batches of 32")  # fmt: skip
    print(f"\nload average at the end: {load()}")
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
