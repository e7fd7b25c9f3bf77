"""L4 write rules (seed 000 §2.2, §13.1): what an accepted ``episode`` envelope becomes.

An episode is verbatim and immutable. It is rendered once (conversation turns as ``role: text``
lines, a named speaker's ``role: name: text``), passed through the tenant's PII policy, hashed, and
deduplicated: the same content in the same memory (tenant, claw, user, thread) is one node, whatever
its episode id.

PII policy (per tenant, ``memory_pii`` in the tenants file): ``redact`` keeps the episode with each
stage-1 hit (email, phone, card, national id, public IP, passport) replaced by ``[CATEGORY]``;
``reject`` refuses it (PII_REJECTED). Names are not redacted: in a personal memory the people are
the subject (stage 2's NER is for CAML, where content is shared across operators).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

from contracts.models import EpisodePayload, EpisodeTurn
from governance.pii.regex_stage import redact
from governance.transcripts import render

PiiPolicy = Literal["redact", "reject"]


@dataclass(frozen=True)
class MemoryScope:
    tenant: str
    claw_id: str
    user_id: str  # "" = the claw's own memory

    @property
    def key(self) -> str:
        """Message key of every KMMS event of this memory: one partition keeps its story in order."""
        return f"{self.tenant}/{self.claw_id}/{self.user_id}"


@dataclass(frozen=True)
class StoredEpisode:
    content: str
    turns: tuple[EpisodeTurn, ...]
    content_hash: str
    redacted: tuple[str, ...]


@dataclass(frozen=True)
class EpisodeRefusal:
    code: str
    detail: str


def content_hash(scope: MemoryScope, thread_id: str, text: str) -> str:
    return hashlib.sha256(f"{scope.key}\n{thread_id}\n{text}".encode()).hexdigest()


def judge(scope: MemoryScope, p: EpisodePayload, policy: PiiPolicy) -> StoredEpisode | EpisodeRefusal:
    """The episode as stored, or why it is refused. Deduplication is the caller's (it needs state)."""
    turns = list(p.turns)
    cats: dict[str, None] = {}
    if turns:
        redacted_turns = []
        for t in turns:
            r, n = redact(t.content), redact(t.name)  # a speaker's name may be an address or a number too
            cats.update(dict.fromkeys([*r.categories, *n.categories]))
            changed = {k: v.text for k, v in (("content", r), ("name", n)) if v.categories}
            redacted_turns.append(t.model_copy(update=changed) if changed else t)
        text = render(redacted_turns, "")
    else:
        r = redact(p.content)
        cats.update(dict.fromkeys(r.categories))
        redacted_turns, text = [], r.text
    if cats and policy == "reject":
        return EpisodeRefusal("PII_REJECTED", "the episode holds personal data (" + ", ".join(cats) + ")")
    # The hash is over what is stored, so a redacted copy and its original are one episode.
    return StoredEpisode(text, tuple(redacted_turns), content_hash(scope, p.thread_id, text), tuple(cats))
