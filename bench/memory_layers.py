"""Two figures of ``hivemem bench memory`` beside retrieval: the local consolidator's own throughput and the
L0 lookup's latency.

- Consolidation: every session of the corpus through ``ConsolidationEngine`` with the local back-end, in
  this process, no Kafka or Postgres: what the consolidator's rules and patterns cost per episode (the
  consolidator processor adds one state load and save per batch). Each session is tagged with the owner
  and its topic, as the enricher tags a first-person conversation.
- L0 lookup: the routing step of every search (``known_terms``: which of the question's words and word pairs
  the memory's L0 index holds), timed as SQL on the application role against the loaded memory.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field

from bench.memory_corpus import Corpus, parse_iso


@dataclass
class Consolidated:
    episodes: int = 0
    seconds: float = 0.0
    events: Counter[str] = field(default_factory=Counter)  # emitted kinds, L2 facts as "FACT"

    @property
    def rate(self) -> float:
        return self.episodes / self.seconds if self.seconds > 0 else float("nan")


def consolidate_locally(corpus: Corpus) -> Consolidated:
    from governance.kmms.consolidation import ConsolidationEngine, ScopeState
    from governance.kmms.values import USER_ENTITY, EpisodeText
    from inference.kmms.local import LocalConsolidator

    out = Consolidated()
    engine = ConsolidationEngine(LocalConsolidator())
    t0 = time.perf_counter()
    for user in corpus.users:
        st = ScopeState()
        for n, s in enumerate(sorted(user.sessions, key=lambda s: s.occurred_at)):
            when = int(parse_iso(s.occurred_at).timestamp() * 1000)
            engine.stored(st, EpisodeText(s.session_id, s.session_id, when, s.text()))
            for e in engine.enriched(st, s.session_id, USER_ENTITY, s.topic or "other", f"0:{n}"):
                out.events["FACT" if e.node is not None and e.node.layer == 2 else e.kind] += 1
            out.episodes += 1
    out.seconds = time.perf_counter() - t0
    return out


def l0_lookup_ms(db_url: str, tenant: str, corpus: Corpus) -> list[float]:
    """One timed ``known_terms`` per question, on its user's memory (after 5 untimed warm-up lookups)."""
    from projections.kmms.queries import known_terms
    from projections.kmms.search import Memory
    from projections.queries import app_pool, tenant_tx

    async def run() -> list[float]:
        out: list[float] = []
        # As the API connects (projections/http/context.py): the application role, statements prepared after a few runs.
        pool = app_pool(db_url, min_size=1, max_size=1)
        async with pool:
            for i, q in enumerate([*corpus.questions[:5], *corpus.questions]):
                m = Memory(tenant, f"mem-{q.user_id}"[:64], q.user_id)
                async with tenant_tx(pool, tenant) as conn:
                    t = time.perf_counter()
                    await known_terms(conn, m, q.question)
                    if i >= 5:
                        out.append((time.perf_counter() - t) * 1000)
        return out

    return asyncio.run(run())
