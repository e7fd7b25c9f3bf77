"""The claw-side CAML SDK over HTTP: observe, recall, validate in a line each.

    caml = CamlClient("http://127.0.0.1:8080", token)      # a token bound to the claw
    caml.observe("WORKFLOW_PATTERN", "legal", "Pre-fetching jurisdiction cuts turns 8.5 -> 3.2",
                 pattern={...}, evidence=["trace-1", ...])
    hits = caml.recall("how do I speed up contract clause analysis?", k=5)
    caml.validate(hits[0].observation_id, "CONFIRMED")
    system_message = collective_memory(hits)               # the seed's <collective_memory> block

Resilience as the seed's agent nodes want it (§9.3): ``recall`` races a 2 s timeout and, with
``fail_silently=True``, returns ``[]`` on any failure; ``observe``/``validate`` raise
``CamlError`` (with the server's reason code) unless ``fail_silently=True``, when they log and
return None — an agent never blocks on collective memory.
"""

from __future__ import annotations

import logging
from html import escape
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from contracts.caml_views import RecallHit

log = logging.getLogger("hivemem.caml.client")
TOKENS_PER_CHAR = 0.25  # a rough budget: about four characters per token


class _View(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


Hit = RecallHit  # the server's answer, declared once (contracts/caml_views.py)


class WriteResult(_View):
    status: str  # ACCEPTED | PENDING
    event_id: str
    observation_id: str
    consistency_token: str
    reputation_at_write: float | None = None


class CamlError(Exception):
    def __init__(self, status: int, code: str, detail: str, retry_after_s: int | None = None) -> None:
        super().__init__(f"{status} {code}: {detail}")
        self.status, self.code, self.detail, self.retry_after_s = status, code, detail, retry_after_s


class CamlClient:
    def __init__(self, api_url: str, token: str, timeout_s: float = 10.0,
                 transport: httpx.BaseTransport | None = None) -> None:  # fmt: skip
        self._http = httpx.Client(base_url=api_url.rstrip("/"), headers={"Authorization": f"Bearer {token}"},
                                  timeout=timeout_s, transport=transport)  # fmt: skip

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> CamlClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _post(self, path: str, body: dict[str, Any], timeout: float | None = None,
              params: dict[str, Any] | None = None) -> Any:  # fmt: skip
        r = self._http.post(path, json=body, params=params, timeout=timeout or self._http.timeout)
        if r.status_code >= 400:
            try:
                err = r.json()
            except ValueError:
                err = {"code": f"HTTP_{r.status_code}", "detail": r.text[:200]}
            retry = r.headers.get("retry-after")
            raise CamlError(r.status_code, str(err.get("code")), str(err.get("detail")),
                            int(retry) if retry and retry.isdigit() else None)  # fmt: skip
        return r.json()

    def observe(self, observation_type: str, domain: str, summary: str, *, pattern: dict[str, Any] | None = None,
                evidence: list[str] | None = None, confidence: float = 0.5, observation_id: str | None = None,
                wait_ms: int = 5_000, fail_silently: bool = False) -> WriteResult | None:  # fmt: skip
        """Share an observation; the answer is the verdict (or PENDING after ``wait_ms``)."""
        body = {"type": observation_type, "domain": domain, "summary": summary, "pattern": pattern or {},
                "evidence": evidence or [], "confidence": confidence, "observationId": observation_id}  # fmt: skip
        return self._write("/caml/v1/observe", {k: v for k, v in body.items() if v is not None}, wait_ms,
                           fail_silently)  # fmt: skip

    def validate(self, observation_id: str, outcome: str, note: str | None = None, *, wait_ms: int = 5_000,
                 fail_silently: bool = False) -> WriteResult | None:  # fmt: skip
        """Report CONFIRMED, REFUTED or INCONCLUSIVE for an observation this claw acted on."""
        body = {"observationId": observation_id, "outcome": outcome, "note": note}
        return self._write("/caml/v1/validate", {k: v for k, v in body.items() if v is not None}, wait_ms,
                           fail_silently)  # fmt: skip

    def _write(self, path: str, body: dict[str, Any], wait_ms: int, fail_silently: bool) -> WriteResult | None:
        try:
            return WriteResult.model_validate(self._post(path, body, timeout=wait_ms / 1000 + 10,
                                                         params={"waitMs": wait_ms}))  # fmt: skip
        except (CamlError, httpx.HTTPError) as exc:
            if not fail_silently:
                raise
            log.warning("CAML %s failed: %s", path, exc)
            return None

    def recall(self, query: str, k: int = 5, *, domain: str | None = None, types: list[str] | None = None,
               min_score: float = 0.0, timeout_s: float = 2.0, fail_silently: bool = False) -> list[Hit]:  # fmt: skip
        """Observations of every operator ranked by the composite score (best first)."""
        body: dict[str, Any] = {"query": query, "k": k, "minScore": min_score}
        if domain:
            body["domain"] = domain
        if types:
            body["types"] = types
        try:
            return [Hit.model_validate(h) for h in self._post("/caml/v1/recall", body, timeout=timeout_s)["results"]]
        except (CamlError, httpx.HTTPError) as exc:
            if not fail_silently:
                raise
            log.warning("CAML recall failed: %s", exc)
            return []


def collective_memory(hits: list[Hit], min_score: float = 0.3, token_budget: int = 1_500) -> str:
    """The seed's injection block (§9.2): hits with composite ≥ ``min_score``, best first, until
    the (approximate) token budget is spent; empty string if none qualifies."""
    parts: list[str] = []
    used = len("<collective_memory></collective_memory>") * TOKENS_PER_CHAR
    for h in sorted(hits, key=lambda h: -h.composite_score):
        if h.composite_score < min_score:
            continue
        block = (f'<observation type="{escape(h.observation_type)}" domain="{escape(h.domain)}" '
                 f'confidence="{h.confidence:.2f}" composite_score="{h.composite_score:.2f}">\n'
                 f"{escape(h.summary, quote=False)}\n</observation>")  # fmt: skip
        cost = len(block) * TOKENS_PER_CHAR
        if used + cost > token_budget:
            break
        parts.append(block)
        used += cost
    if not parts:
        return ""
    return "<collective_memory>\n" + "\n".join(parts) + "\n</collective_memory>"
