"""The claw-side KMMS SDK over HTTP: a claw's (or one of its users') long-term memory.

    mem = claw.memory(user_id="u-17")        # or MemoryClient(api_url, token, user_id="u-17")
    mem.add([{"role": "user", "content": "I moved to Porto last week"}], session_id="s-17",
            occurred_at="2026-03-04T10:00:00Z")
    mem.add([{"role": "user", "name": "Melanie", "content": "I painted a lake."},   # people talking: each
             {"role": "user", "name": "Caroline", "content": "I painted my dog."}])  # turn names its speaker
    hits = mem.search("where do I live now?", k=5).hits
    res = mem.search("where did I live in March?", as_of="2026-03-31")
    answer = mem.ask("what does John think about the DuckDB migration?")
    print(answer.answer, answer.result.confidence, answer.result.provenance)

A search's ``hits`` are evidence (L4 episodes: what an agent can cite), each with its score,
confidence, hedging, episode/session ids and time fields; its ``context`` holds what HiveMem derived
from them (L1–L3 abstractions, facts, summaries) with the sessions each cites. Errors raise ``MemoryError_`` with the
server's reason code (PII_REJECTED, DUPLICATE_CONTENT, ...).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from contracts import kmms_views as views


class _View(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


# The API's answer, declared once for the server and the SDK (contracts/kmms_views.py); here its times are datetimes.
Hit = views.MemoryHit[datetime]
LayerStep = views.LayerStep
SearchResult = views.SearchResult[datetime]


class Answer(_View):
    answer: str | None
    result: SearchResult


class AddResult(_View):
    status: str  # STORED | PENDING
    event_id: str
    episode_id: str
    consistency_token: str


class EraseResult(_View):
    status: str  # ERASED | PENDING
    event_id: str
    erasure_id: str
    erased_at: datetime | None = None
    consistency_token: str


class Erasure(_View):
    erasure_id: str
    user_id: str
    reason: str | None = None
    erased_at: datetime


class MemoryError_(Exception):
    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(f"{status} {code}: {detail}")
        self.status, self.code, self.detail = status, code, detail


def _iso(when: datetime | str | int | float | None) -> str | None:
    if when is None:
        return None
    if isinstance(when, (int, float)):  # epoch milliseconds
        return datetime.fromtimestamp(when / 1000, UTC).isoformat()
    if isinstance(when, datetime):
        return (when if when.tzinfo else when.replace(tzinfo=UTC)).isoformat()
    return when


def _ms_fields(data: Any) -> Any:
    """The API's times are epoch ms; the SDK shows datetimes."""
    if isinstance(data, dict):
        return {k: (datetime.fromtimestamp(v / 1000, UTC) if k in _TIME_KEYS and isinstance(v, int) else _ms_fields(v))
                for k, v in data.items()}  # fmt: skip
    if isinstance(data, list):
        return [_ms_fields(x) for x in data]
    return data


_TIME_KEYS = {"occurredAt", "validFrom", "validUntil", "loggedAt", "asOf", "windowStart", "windowEnd", "erasedAt"}


class MemoryClient:
    def __init__(self, api_url: str, token: str, user_id: str = "", thread_id: str | None = None,
                 timeout_s: float = 30.0, transport: httpx.BaseTransport | None = None) -> None:  # fmt: skip
        self.user_id, self.thread_id = user_id, thread_id
        self._http = httpx.Client(base_url=api_url.rstrip("/"), headers={"Authorization": f"Bearer {token}"},
                                  timeout=timeout_s, transport=transport)  # fmt: skip

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> MemoryClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _call(self, method: str, path: str, **kw: Any) -> Any:
        r = self._http.request(method, path, **kw)
        if r.status_code >= 400:
            try:
                err = r.json()
            except ValueError:
                err = {"code": f"HTTP_{r.status_code}", "detail": r.text[:200]}
            raise MemoryError_(r.status_code, str(err.get("code")), str(err.get("detail")))
        return r.json()

    def add(self, messages: Sequence[dict[str, Any]] | str, *, session_id: str | None = None,
            occurred_at: datetime | str | int | None = None, episode_id: str | None = None,
            content_type: str | None = None, wait_ms: int = 5_000) -> AddResult:  # fmt: skip
        """Store an episode: a conversation's messages ({"role", "content"}, and an optional speaker "name"; an OpenAI
        chat history as it is: text parts kept, tool calls, images and audio not) or a text."""
        body: dict[str, Any] = {"sessionId": session_id, "userId": self.user_id, "threadId": self.thread_id or "",
                                "occurredAt": _iso(occurred_at), "episodeId": episode_id,
                                "contentType": content_type}  # fmt: skip
        if isinstance(messages, str):
            body["content"] = messages
        else:
            body["messages"] = [{k: m[k] for k in views.MESSAGE_KEYS if m.get(k) is not None} for m in messages]
        body = {k: v for k, v in body.items() if v is not None}
        return AddResult.model_validate(self._call("POST", "/api/v1/memory/episodes", json=body,
                                                   params={"waitMs": wait_ms}))  # fmt: skip

    def search(self, query: str, k: int = 5, *, as_of: datetime | str | int | None = None,
               mode: str = "hybrid") -> SearchResult:  # fmt: skip
        body = {"query": query, "k": k, "userId": self.user_id, "threadId": self.thread_id, "asOf": _iso(as_of),
                "mode": mode}  # fmt: skip
        data = self._call("POST", "/api/v1/memory/search", json={k2: v for k2, v in body.items() if v is not None})
        return SearchResult.model_validate(_ms_fields(data))

    def ask(self, question: str, k: int = 5, *, as_of: datetime | str | int | None = None) -> Answer:
        body = {"query": question, "k": k, "userId": self.user_id, "threadId": self.thread_id, "asOf": _iso(as_of)}
        data = self._call("POST", "/api/v1/memory/ask", json={k2: v for k2, v in body.items() if v is not None})
        return Answer.model_validate(_ms_fields(data))

    def facts(self, key: str | None = None, entity: str | None = None, history: bool = False) -> list[Hit]:
        params: dict[str, Any] = {"userId": self.user_id, "includeSuperseded": history}
        params.update({k: v for k, v in (("key", key), ("entity", entity)) if v is not None})
        return [Hit.model_validate(_ms_fields(h)) for h in self._call("GET", "/api/v1/memory/facts", params=params)]

    def entities(self) -> list[dict[str, Any]]:
        return list(self._call("GET", "/api/v1/memory/entities", params={"userId": self.user_id}))

    def erase(self, reason: str = "", *, wait_ms: int = 5_000) -> EraseResult:
        """Erase this memory (this user's, or the claw's own): everything told before now leaves search,
        facts and the index; what is told afterwards starts a new memory."""
        data = self._call("POST", "/api/v1/memory/erase", json={"userId": self.user_id, "reason": reason},
                          params={"waitMs": wait_ms})  # fmt: skip
        return EraseResult.model_validate(_ms_fields(data))

    def erasures(self) -> list[Erasure]:
        data = self._call("GET", "/api/v1/memory/erasures", params={"userId": self.user_id})
        return [Erasure.model_validate(_ms_fields(e)) for e in data]

    def wait_indexed(self, episode_ids: Sequence[str], timeout_s: float = 60.0) -> None:
        """Block until every episode is searchable (stored and embedded); TimeoutError otherwise."""
        todo = set(episode_ids)
        deadline = time.monotonic() + timeout_s
        pause = 0.05
        while todo:
            for i in range(0, len(todo), 1_000):
                batch = sorted(todo)[i : i + 1_000]
                todo -= set(self._call("POST", "/api/v1/memory/indexed", json={"episodeIds": batch,
                                                                               "userId": self.user_id}))  # fmt: skip
            if not todo:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(todo)} episodes not searchable after {timeout_s:.0f} s")
            time.sleep(pause)
            pause = min(pause * 1.5, 0.5)
