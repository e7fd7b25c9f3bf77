"""Everything ``hivemem bench memory`` calls on the SDK (``producers.claw_client``, ``producers.memory_client``):
one claw and memory per user, an episode added, waited for and checked, a question searched and read into what
``bench.memory_metrics`` scores."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from confluent_kafka import Producer

from bench.memory_corpus import Corpus, Question, Session, parse_iso
from bench.memory_layers import l0_lookup_ms
from bench.memory_metrics import RankedHit, Retrieval, cited_sessions
from hivemem.settings import Settings

LETTERS = "abcdefghijkmnopqrstuvwxyz"


def open_memories(settings: Settings, tenant: str, user_ids: Sequence[str]) -> dict[str, Any]:
    """One claw per user (``mem-<user>``, its token bound to it) and that user's memory in it."""
    from governance.identity import HMAC_PREFIX, derive_deployment_key
    from producers.claw_client import ClawClient, producer_config
    from projections.auth import mint_token

    api = f"http://{settings.api_host}:{settings.api_port}"
    config = settings.load_config()
    secret_id, op_secret = next(iter(config.tenants[tenant].operator_secrets.items()))
    producer = Producer(producer_config(settings.require_kafka()))  # the claws' own writes (none here) share it
    out: dict[str, Any] = {}
    for uid in user_ids:
        claw_id = f"mem-{uid}"[:64]
        token = mint_token(config.token_secret, tenant, "bench", claw_id, ttl_s=12 * 3600)
        claw = ClawClient(settings.require_kafka(), tenant, claw_id, derive_deployment_key(op_secret, tenant, claw_id),
                          HMAC_PREFIX + secret_id, topics=settings.topics, producer=producer, api_url=api,
                          api_token=token)  # fmt: skip
        out[uid] = claw.memory(user_id=uid)
    return out


def l0_lookups(settings: Settings, tenant: str, corpus: Corpus) -> list[float]:
    """The L0 routing step timed on the stack's database, as the application role (ms per question)."""
    return l0_lookup_ms(settings.app_database_url(settings.load_config()), tenant, corpus)


def sdk_add(mem: Any, s: Session, wait_ms: int) -> tuple[str, str]:
    """(episode id, outcome): STORED | PENDING | the refusal's code (DUPLICATE_EPISODE on a re-run, ...)."""
    eid = episode_id(s)
    try:
        r = mem.add(s.messages(), session_id=s.session_id, occurred_at=s.occurred_at, episode_id=eid, wait_ms=wait_ms)
    except Exception as exc:  # the SDK's MemoryError_ carries .code
        code = getattr(exc, "code", None)
        if code is None:
            raise
        return eid, str(code)
    return str(r.episode_id), str(r.status)


def sdk_wait(mem: Any, episode_ids: Sequence[str], timeout_s: float) -> None:
    mem.wait_indexed(list(episode_ids), timeout_s)


def sdk_searchable(mem: Any, eid: str) -> bool:
    """One check (``wait_indexed`` with no time to wait checks once, then raises TimeoutError)."""
    try:
        mem.wait_indexed([eid], 0)
    except TimeoutError:
        return False
    return True


NODE_HITS = ("cite", "skip")


def _get(h: Any, name: str, camel: str) -> Any:
    """A hit's field, from the SDK's model or from a plain dict (a result field the SDK does not model yet)."""
    return h.get(camel, h.get(name)) if isinstance(h, dict) else getattr(h, name, None)


def sdk_search(mem: Any, q: Question, k: int, mode: str, by_episode: dict[str, str] | None = None,
               nodes: str = "cite") -> tuple[Retrieval, float | None]:  # fmt: skip
    """The question searched at its date: (the result for the metrics, the server-reported ms if any). Only the
    result's ``hits`` are ranked (not its ``context`` of derived nodes). An L4 hit is its episode's session. With
    ``nodes="cite"`` an L1-L3 node hit (summary, fact, abstraction) counts for the sessions of the episodes it cites:
    its ``sessionIds`` when the server lists them, else its ``sourceIds`` resolved through the nodes the result holds
    (its hits and its ``context``) down to episode ids, those of the corpus' sessions kept; with ``"skip"`` it counts
    for none (the bench before 2026-11-27)."""
    res = mem.search(q.question, k=k, as_of=q.question_date, mode=mode)
    by_episode = by_episode or {}
    held = [*res.hits, *(getattr(res, "context", None) or [])]
    sources = {str(_get(h, "node_id", "nodeId")): [str(x) for x in _get(h, "source_ids", "sourceIds") or []]
               for h in held if int(_get(h, "layer", "layer") or 4) < 4}  # fmt: skip

    def session_of(h: Any) -> str | None:
        if h.session_id:
            return str(h.session_id)
        eid = getattr(h, "episode_id", None)
        return by_episode.get(eid) if eid else None

    def sessions_cited(h: Any) -> tuple[str, ...]:
        told = [str(x) for x in getattr(h, "session_ids", None) or []]  # the server's own resolution, if given
        return tuple(dict.fromkeys(told)) if told else cited_sessions(h.source_ids or [], sources, by_episode)

    def cited(h: Any) -> tuple[str, ...]:
        return () if nodes != "cite" or int(h.layer) >= 4 else sessions_cited(h)

    hits = tuple(RankedHit(session_of(h), _dt(h.occurred_at), _dt(h.valid_from), h.fact_value, int(h.layer),
                           str(h.status), float(h.similarity), str(h.text)[:160], cited(h))
                 for h in res.hits)  # fmt: skip
    context = tuple(RankedHit(None, layer=int(h.layer), cited=sessions_cited(h))
                    for h in getattr(res, "context", None) or [])  # fmt: skip
    server = getattr(res, "latency_ms", None)
    found = Retrieval(hits, float(res.confidence), bool(res.abstained), context)
    return found, None if server is None else float(server)


def sdk_close(mems: dict[str, Any]) -> None:
    for m in mems.values():
        with contextlib.suppress(Exception):
            m.close()


def _dt(v: Any) -> datetime | None:
    if v is None or isinstance(v, datetime):
        return v
    if isinstance(v, int | float):
        return datetime.fromtimestamp(v / 1000, UTC)
    return parse_iso(str(v))


def episode_id(s: Session) -> str:
    """Deterministic (a re-run finds the same episode) and letters only (no digit run for the PII scan)."""
    digest = hashlib.sha256(f"{s.user_id}|{s.session_id}|{s.occurred_at}".encode()).digest()
    return "ep-" + "".join(LETTERS[b % len(LETTERS)] for b in digest[:20])
