"""KMMS end to end: a person's history over many sessions (a move, a job change) through the real
pipeline — HTTP -> gate -> kmms processor -> enricher -> consolidator -> embedder -> read model ->
search. L3/L2/L1 appear; CURRENT answers the new value, EVOLUTION lists both with the SUPERSEDES
chain, POINT_IN_TIME answers the old one, and no result ever holds anything after ``as_of``."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import connect

from hivemem.settings import Settings
from hivemem.stack import Stack
from producers.memory_client import MemoryClient, SearchResult
from tests.conftest import wait_until
from tests.integration.kmms_support import app_pool, conversed, memory, tell

pytestmark = pytest.mark.integration

HISTORY = [  # (date, what the user said)
    ("2026-01-10", "I live in Lisbon, in a small flat near the river."),
    ("2026-01-12", "I work at Acme as a data engineer."),
    ("2026-01-25", "My flat in Lisbon has a tiny balcony where I grow basil."),
    ("2026-02-03", "I work at Acme on the billing pipelines team, and I like it there."),
    ("2026-02-14", "I cooked a mushroom risotto for dinner with my friends."),
    ("2026-03-08", "I baked sourdough bread this weekend, the crust came out great."),
    ("2026-04-20", "I moved to Porto last week and the new apartment is bigger."),
    ("2026-05-04", "I now work at Globex as a staff engineer."),
    ("2026-05-09", "For lunch I made a chickpea salad with lemon."),
]


CLAW = f"assistant-{uuid.uuid4().hex[:6]}"


def _ms(day: str) -> int:
    return int(datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp() * 1000)


@pytest.fixture(scope="module")
def person(stack: Stack) -> MemoryClient:
    mem = memory(stack, "mem-b", claw=CLAW, user_id="ana")
    ids = tell(mem, HISTORY)

    def consolidated() -> bool:
        res = {f.fact_value or "" for f in mem.facts(key="residence", history=True)}
        jobs = {f.fact_value or "" for f in mem.facts(key="employer", history=True)}
        return any("Porto" in v for v in res) and any("Globex" in v for v in jobs)

    wait_until(consolidated, timeout=120, interval=0.5, what="the residence and employer facts")
    mem.wait_indexed(ids, timeout_s=120)  # units and every node derived from them have vectors
    return mem


def _leaks(res: SearchResult, as_of: datetime) -> list[str]:
    return [h.node_id for h in [*res.hits, *res.context]
            if (h.occurred_at and h.occurred_at > as_of) or (h.valid_from and h.valid_from > as_of)]  # fmt: skip


def test_layers_appear_with_version_chains(person: MemoryClient) -> None:
    history = person.facts(key="residence", history=True)
    assert [(("Lisbon" in (f.fact_value or "")), f.status, f.version) for f in history] == [
        (True, "SUPERSEDED", 1), (False, "CURRENT", 2)]  # fmt: skip
    old, new = history
    assert "Porto" in (new.fact_value or "") and new.supersedes == old.node_id and old.superseded_by == new.node_id
    assert old.valid_until == new.valid_from == datetime(2026, 4, 20, 9, tzinfo=UTC)
    assert old.layer == new.layer == 2 and new.entity == "user"
    current = person.facts()
    assert {f.fact_key for f in current} >= {"residence", "employer"}
    assert not any("Lisbon" in (f.fact_value or "") for f in current if f.fact_key == "residence")
    by_meaning = person.search("Where do I live now?", k=5, mode="vector")  # the facts are embedded too
    assert any(h.layer == 2 and "Porto" in (h.fact_value or "") and h.similarity > 0.3 for h in by_meaning.context)
    terms = {t["term"] for t in person.entities()}
    assert {"porto", "lisbon", "residence", "employment"} <= terms


def test_current_evolution_and_point_in_time(person: MemoryClient) -> None:
    now = person.search("Where do I live now?", k=5)
    assert now.temporal_intent == "CURRENT"
    facts = [h for h in now.context if h.layer == 2 and h.fact_key == "residence"]
    assert facts and "Porto" in (facts[0].fact_value or "") and facts[0].status == "CURRENT"
    assert all("Lisbon" not in (h.fact_value or "") for h in facts)
    assert all(h.layer == 4 for h in now.hits)  # evidence first: the facts are context
    assert facts[0].session_ids and set(facts[0].session_ids) <= {f"s-{i}" for i in range(8)}
    top = now.hits[0]
    assert 0.0 <= top.confidence <= 1.0 and top.layer_meaning and now.provenance
    assert "s-6" in [h.session_id for h in now.hits]  # the move's session is evidence

    evo = person.search("How has the place where I live changed over time?", k=5)
    assert evo.temporal_intent == "EVOLUTION"
    chain = [h for h in evo.context if h.layer == 2 and h.fact_key == "residence"]
    assert [("Lisbon" in (h.fact_value or ""), h.status) for h in chain] == [(True, "SUPERSEDED"), (False, "CURRENT")]

    then = person.search("Where did I live in March?", k=5, as_of="2026-04-30T00:00:00Z")
    assert then.temporal_intent == "POINT_IN_TIME"
    facts = [h for h in then.context if h.layer == 2 and h.fact_key == "residence"]
    assert facts and all("Lisbon" in (h.fact_value or "") for h in facts)
    # Asked on April 10, before the move (April 20): Lisbon was current then, and the move must not show in it.
    before = person.search("Where do I live?", k=5, as_of="2026-04-10T00:00:00Z")
    facts = [h for h in before.context if h.layer == 2 and h.fact_key == "residence"]
    assert facts and all("Lisbon" in (h.fact_value or "") for h in facts)
    assert all(h.status == "CURRENT" and h.superseded_by is None and h.valid_until is None for h in facts)


def test_answers_come_with_confidence_hedging_and_evidence(person: MemoryClient) -> None:
    a = person.ask("Where do I work now?")
    assert a.answer is not None and "Globex" in a.answer and not a.result.abstained
    # A question about the present: the current fact answers from HIVEMEM_KMMS_TAU_CURRENT (0.40), under tau (0.75).
    fact = next(s for s in a.result.drill if s.layer == 2)
    assert a.result.answer_layer == 2 and fact.sufficient and fact.best_similarity is not None
    assert 0.40 <= fact.best_similarity < 0.75
    assert a.result.hedging_prefix is None or a.answer.startswith(a.result.hedging_prefix)
    nothing = person.ask("What is the name of my pet iguana?")
    assert nothing.result.confidence < 0.5 or nothing.result.abstained


def test_modes_find_the_session(person: MemoryClient) -> None:
    for mode in ("hybrid", "vector", "text"):
        res = person.search("sourdough bread crust", k=3, mode=mode)
        assert next(h.session_id for h in res.hits if h.layer == 4) == "s-5", mode


def test_common_lexemes_are_the_owners_statistics_read_by_the_app_role(person: MemoryClient, stack: Stack) -> None:
    """kmms.common_lexemes (migration 24): pg_stats hides a row-level-secured table's statistics from the
    application role; the function shows it the most common lexemes, and only those."""
    settings: Settings = stack.settings
    with connect(settings.require_database(), autocommit=True) as owner:
        owner.execute("ANALYZE kmms.kmms_units")
        stats = owner.execute(
            "SELECT x.e FROM pg_stats s, unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs) "
            "AS x(e, f) WHERE s.schemaname = 'kmms' AND s.tablename = 'kmms_units' AND s.attname = 'tsv' "
            "AND x.e IS NOT NULL AND x.f >= 0.05"
        ).fetchall()
    with connect(settings.app_database_url(settings.load_config()), autocommit=True) as app:
        hidden = app.execute("SELECT count(*) FROM pg_stats WHERE schemaname = 'kmms'").fetchone()
        common = app.execute("SELECT kmms.common_lexemes(0.05)").fetchall()
    assert hidden == (0,)
    assert {r[0] for r in common} == {r[0] for r in stats} and common


def test_a_large_memorys_full_text_selects_by_its_rarer_lexemes(person: MemoryClient, stack: Stack,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """In process, on the real read model: with the person's memory counted as large, a common lexeme
    ("bread") no longer selects candidates, a rare one ("sourdough") still finds the session, a question of
    common lexemes only has no full-text candidates, and full text alone (mode text) keeps every lexeme."""
    import asyncio
    import time

    from projections.kmms import search
    from projections.queries import tenant_tx

    monkeypatch.setattr(search, "EXACT_STATS_BELOW", 0)

    async def sessions(query: str, common: set[str], prune: bool = True) -> list[str]:
        monkeypatch.setattr(search, "_common", (time.monotonic(), frozenset(common)))
        async with app_pool(stack, max_size=1) as pool, tenant_tx(pool, "mem-b") as conn:
            p = {"t": "mem-b", "c": CLAW, "s": "ana", "text": query, "start": -(2**62), "bound": 2**62,
                 "th": None, "n": 5}  # fmt: skip
            units = [u for u, _ in await search._bm25_units(conn, p, prune=prune)]
            cur = await conn.execute("SELECT DISTINCT session_id FROM kmms.kmms_units WHERE unit_id = ANY(%s)",
                                     (units,))  # fmt: skip
            return sorted(str(r[0]) for r in await cur.fetchall())

    assert asyncio.run(sessions("sourdough bread crust", {"bread", "crust"})) == ["s-5"]
    assert asyncio.run(sessions("bread crust", {"bread", "crust"})) == []
    assert asyncio.run(sessions("bread crust", {"bread", "crust"}, prune=False)) == ["s-5"]
    assert asyncio.run(sessions("bread crust", set())) == ["s-5"]


def test_a_large_window_is_ranked_in_two_halves_alike(person: MemoryClient, stack: Stack,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """In process, on the real read model: a window counted as large is ranked as two halves of time on two
    of the pool's connections, giving the units the single ranking gives, in its order; with no connection to
    spare it is one ranking."""
    import asyncio

    from projections.kmms import nearest
    from projections.queries import tenant_tx

    settings: Settings = stack.settings
    with connect(settings.require_database(), autocommit=True) as owner:
        row = owner.execute("SELECT model, embedding::text FROM kmms.kmms_vectors WHERE tenant = 'mem-b' AND "
                            "claw_id = %s AND scope = 'ana' AND kind = 'unit' ORDER BY unit_id LIMIT 1",
                            (CLAW,)).fetchone()  # fmt: skip
    assert row is not None
    calls: list[int] = []
    exact = nearest.exact

    async def counted(conn: nearest.Conn, where: str, p: dict[str, object], span: str = "") -> list[tuple[str, float]]:
        calls.append(1)
        return await exact(conn, where, p, span)

    monkeypatch.setattr(nearest, "exact", counted)

    async def ranking(max_size: int, use_pool: bool) -> tuple[list[tuple[str, float]], int]:
        calls.clear()
        async with app_pool(stack, max_size=max_size) as pool, tenant_tx(pool, "mem-b") as conn:
            where = nearest.IN_SPAN  # all of time
            p = {"t": "mem-b", "c": CLAW, "s": "ana", "model": row[0], "q": row[1], "n": 7,
                 "start": -(2**62), "bound": 2**62, "th": None}  # fmt: skip
            window = await nearest.window_count(conn, where, p)
            units = await nearest.window_ranking(conn, pool if use_pool else None, "mem-b", where, p,
                                                      window, split=2)  # fmt: skip
            return units, len(calls)

    single, one = asyncio.run(ranking(2, use_pool=False))
    halves, two = asyncio.run(ranking(2, use_pool=True))
    busy, still_one = asyncio.run(ranking(1, use_pool=True))
    assert len(single) == 7 and (one, two, still_one) == (1, 2, 1)
    assert halves == single and busy == single


def test_a_large_memorys_nearest_units_rank_as_a_small_ones(person: MemoryClient, stack: Stack,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """In process, on the real read model: the nearest units by HNSW (the memory counted as large: its nearest
    vectors first, then each one's unit looked up in order until enough pass the time filter)
    are those of the small memory's exact path, in its order, and those ``exact`` ranks by each unit's best
    vector (read by their time); with a bound in the past, only units up to it."""
    import asyncio

    from projections.kmms import nearest as vectors
    from projections.kmms import search
    from projections.queries import tenant_tx

    settings: Settings = stack.settings
    with connect(settings.require_database(), autocommit=True) as owner:
        row = owner.execute("SELECT model, embedding::text FROM kmms.kmms_vectors WHERE tenant = 'mem-b' AND "
                            "claw_id = %s AND scope = 'ana' AND kind = 'unit' ORDER BY unit_id LIMIT 1",
                            (CLAW,)).fetchone()  # fmt: skip
        times = sorted(int(r[0]) for r in owner.execute("SELECT occurred_at FROM kmms.kmms_units WHERE tenant = "
                                                         "'mem-b' AND claw_id = %s", (CLAW,)).fetchall())  # fmt: skip
    assert row is not None and len(times) > 4

    where = vectors.IN_SPAN

    async def nearest(large: bool, bound: int, exact: bool = False) -> list[str]:
        monkeypatch.setattr(search, "EXACT_STATS_BELOW", 0 if large else 5_000)
        search._stats.clear()
        async with app_pool(stack, max_size=1) as pool, tenant_tx(pool, "mem-b") as conn:
            await conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            p = {"t": "mem-b", "c": CLAW, "s": "ana", "model": row[0], "q": row[1], "n": 6,
                 "bound": bound, "start": -(2**62), "th": None}  # fmt: skip
            if exact:
                return [u for u, _ in await vectors.exact(conn, where, p)]
            units, *_ = await search._corpus_stats(conn, p)
            ranked = await vectors.nearest(conn, where, p, 40, units, units < search.EXACT_STATS_BELOW)
            return list(dict.fromkeys(u for u, _ in ranked))[:6]

    middle = times[len(times) // 2]
    for bound in (2**62, middle):
        small = asyncio.run(nearest(False, bound))
        assert asyncio.run(nearest(True, bound)) == small
        assert asyncio.run(nearest(False, bound, exact=True)) == small
        assert len(small) == min(6, sum(t <= bound for t in times))
    found = asyncio.run(nearest(True, middle))
    with connect(settings.require_database(), autocommit=True) as owner:
        late = owner.execute("SELECT count(*) FROM kmms.kmms_units WHERE tenant = 'mem-b' AND unit_id = ANY(%s) "
                             "AND occurred_at > %s", (found, middle)).fetchone()  # fmt: skip
    assert late == (0,)


def test_full_text_candidates_keep_to_the_transactions_tenant(person: MemoryClient, stack: Stack) -> None:
    """kmms.unit_text_terms runs as the tables' owner (so the text index is used under row-level
    security); it must still show the application role only its own tenant's units, each with only the query's
    terms of its tsvector."""
    settings: Settings = stack.settings
    seen: dict[str | None, list[str]] = {}
    with connect(settings.app_database_url(settings.load_config()), autocommit=True) as app:
        for tenant in ("mem-b", "mem-a", None):
            with app.transaction():
                if tenant is not None:
                    app.execute("SELECT set_config('hivemem.tenant', %s, true)", (tenant,))
                query = "to_tsquery('english', 'sourdough | porto')"
                rows = app.execute(f"SELECT m.unit_id, m.terms FROM kmms.unit_text_terms(%s, 'ana', {query}, "
                                   "ARRAY['sourdough', 'porto'], 0, 9e15::bigint, NULL, 100) m",
                                   (CLAW,)).fetchall()  # fmt: skip
            seen[tenant] = [str(r[1]) for r in rows]
    assert len(seen["mem-b"]) == 2
    term = r"'(sourdough|porto)':[\dA-D,]+"  # a lexeme and its positions (weights are the filter's marks)
    assert all(re.fullmatch(f"{term}( {term})?", t) for t in seen["mem-b"]), seen["mem-b"]
    assert seen["mem-a"] == [] and seen[None] == []


QUERIES = ["Where do I live?", "Where do I work?", "what did I cook?", "How has my job changed?"]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(day=st.integers(min_value=0, max_value=140), query=st.sampled_from(QUERIES))
def test_no_result_is_from_after_as_of(person: MemoryClient, day: int, query: str) -> None:
    as_of = datetime(2026, 1, 1, tzinfo=UTC).timestamp() * 1000 + day * 86_400_000
    when = datetime.fromtimestamp(as_of / 1000, UTC)
    res = person.search(query, k=10, as_of=when)
    assert _leaks(res, when) == []
    # A supersession after as_of is the future: a hit superseded then is shown as it was, current.
    assert all(h.valid_until is None or h.valid_until <= when for h in [*res.hits, *res.context])
    assert all(h.superseded_by is None for h in [*res.hits, *res.context] if h.status == "CURRENT")


def test_a_day_alone_as_of_is_the_end_of_that_day(stack: Stack) -> None:
    # Told at 09:00 on June 1 (``converse``): asked "as of 2026-06-01", the day's morning is known; the day before, not.
    mem = conversed(stack, CLAW, "bo", [("2026-06-01", "I adopted a grey kitten called Miso this morning.",
                                         "Congratulations on Miso!")])  # fmt: skip
    that_day = mem.search("What is my kitten called?", as_of="2026-06-01")
    assert that_day.as_of == datetime(2026, 6, 1, 23, 59, 59, 999_000, tzinfo=UTC)
    assert [h.session_id for h in that_day.hits] == ["s-0"]
    before = mem.search("What is my kitten called?", as_of="2026-05-31")
    assert before.as_of == datetime(2026, 5, 31, 23, 59, 59, 999_000, tzinfo=UTC) and before.hits == []
    exact = mem.search("What is my kitten called?", as_of="2026-06-01T00:00:00Z")  # a time given is that instant
    assert exact.hits == []
