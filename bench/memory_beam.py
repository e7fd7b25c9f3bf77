"""BEAM as a bench ``Corpus`` (``hivemem bench memory --dataset beam --file chats/100K``).

**BEAM** ("Beyond a Million Tokens", mohammadtavakoli78/BEAM, ``chats/<scale>/<n>/``; arXiv 2510.27246): long
chats between a user and an assistant about one project each (a budget tracker in Flask, a thesis, ...), written by
a model from a plan, with probing questions whose evidence names messages. A conversation's directory holds
``chat.json``, a list of batches ``{batch_number, turns: [[message, ...], ...]}`` (each inner list one exchange: a
user message and the replies, ``{role, id, content, time_anchor (on a batch's first message: "March-15-2024")}``),
and ``probing_questions/probing_questions.json``, ten categories (``information_extraction``,
``multi_session_reasoning``, ``knowledge_update``, ...) of ``{question, answer | ideal_answer | ..., source_chat_ids:
[id, ...] | {label: [id, ...]}}``. Read by this protocol:

* each conversation is its own memory (one bench user, ``beam-<scale>-<n>``);
* each exchange is one episode: a conversation has only 3-5 batches at 100K (10 at 500K), too few for session
  recall to say anything, and the evidence names messages; the exchanges of a batch occur at its ``time_anchor``,
  08:00 UTC, one minute apart, in order;
* every message is a message of its role; a user message's closing "->-> b,t" (the batch and turn the generator
  wrote it for) is left out;
* every question is asked one day after the conversation's last exchange, its evidence the exchanges holding its
  ``source_chat_ids`` (every id of a dict's lists); a question with none (the abstention questions, a few others)
  is left out;
* a ``knowledge_update`` question whose ``updated_info`` lies in one exchange, after its ``original_info``, has
  that exchange as ``current_session_id`` (the bench's current-vs-superseded score, ``bench.memory_metrics``);
  one whose update spans exchanges, or has none, is scored on recall only;
* categories, BEAM's own, written with hyphens (``information-extraction``).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.memory_corpus import Corpus, Question, Session, Turn, User, iso
from bench.memory_loading import mark_evidence

FIRST = timedelta(hours=8)  # a batch's first exchange, UTC
APART = timedelta(minutes=1)  # the exchanges of one batch
_MARKER = re.compile(r"\s*->->\s*[0-9]+\s*,\s*[0-9]+\s*$")
_ANSWERS = ("answer", "ideal_answer", "ideal_response", "ideal_summary", "expected_compliance")


def beam_dirs(path: str | Path) -> list[Path]:
    """The conversation directories under ``path`` (a scale's directory, or one conversation's), by number."""
    p = Path(path)
    if (p / "chat.json").is_file():
        return [p]
    found = [d for d in p.iterdir() if (d / "chat.json").is_file()] if p.is_dir() else []
    if not found:
        raise ValueError(f"{p}: no BEAM conversation (a directory holding chat.json) in it")
    return sorted(found, key=lambda d: (not d.name.isdigit(), int(d.name) if d.name.isdigit() else 0, d.name))


def source_ids(ids: Any) -> list[int]:
    """The message ids a question's ``source_chat_ids`` names: a list, or a dict of lists (``{original_info: [86],
    updated_info: [114]}``), in order, once each."""
    values = [x for v in ids.values() for x in (v if isinstance(v, list) else [v])] if isinstance(ids, dict) else ids
    return list(dict.fromkeys(x for x in values or [] if isinstance(x, int) and not isinstance(x, bool)))


def _current(ids: Any, where: dict[int, str], when: dict[str, str]) -> str | None:
    """The exchange telling a knowledge update's new value: ``updated_info``'s one exchange, when it occurs after
    every ``original_info`` exchange (``when``: a session's ``occurred_at``); None otherwise."""
    if not isinstance(ids, dict):
        return None
    new = {where[x] for x in source_ids(ids.get("updated_info")) if x in where}
    old = {where[x] for x in source_ids(ids.get("original_info")) if x in where}
    if len(new) != 1 or not old or new & old:
        return None
    (s,) = new
    return s if all(when[s] > when[o] for o in old) else None


def _anchor(batch: dict[str, Any]) -> datetime | None:
    for exchange in batch.get("turns") or []:
        for m in exchange:
            if m.get("time_anchor"):
                return datetime.strptime(str(m["time_anchor"]), "%B-%d-%Y").replace(tzinfo=UTC)
    return None


def _conversation(d: Path, uid: str) -> tuple[User, list[Question], int]:
    chat = json.loads((d / "chat.json").read_text(encoding="utf-8"))
    sessions: list[Session] = []
    where: dict[int, str] = {}  # message id -> its exchange's session id
    day = datetime(2024, 1, 1, tzinfo=UTC)
    for b, batch in enumerate(chat):
        day = _anchor(batch) or day + timedelta(days=1)
        for e, exchange in enumerate(batch.get("turns") or []):
            turns = [Turn("assistant" if m.get("role") == "assistant" else "user", _MARKER.sub("", str(m["content"])))
                     for m in exchange if str(m.get("content") or "").strip()]  # fmt: skip
            if not turns:
                continue
            s = Session(f"{uid}-b{b + 1}e{e + 1}", uid, iso(day + FIRST + e * APART), turns)
            sessions.append(s)
            where.update((int(m["id"]), s.session_id) for m in exchange if isinstance(m.get("id"), int))
    sessions.sort(key=lambda s: s.occurred_at)
    asked = iso(datetime.fromisoformat(sessions[-1].occurred_at.replace("Z", "+00:00")) + timedelta(days=1))
    probing = json.loads((d / "probing_questions" / "probing_questions.json").read_text(encoding="utf-8"))
    questions: list[Question] = []
    when = {s.session_id: s.occurred_at for s in sessions}
    left = 0
    for kind, items in probing.items():
        for i, item in enumerate(items):
            evidence = list(dict.fromkeys(where[x] for x in source_ids(item.get("source_chat_ids")) if x in where))
            if not evidence:
                left += 1
                continue
            answer = next((str(item[k]) for k in _ANSWERS if item.get(k)), "")
            current = _current(item.get("source_chat_ids"), where, when) if kind == "knowledge_update" else None
            questions.append(Question(f"{uid}-{kind}-{i}", uid, str(item["question"]), asked, answer, evidence,
                                      kind.replace("_", "-"), current_session_id=current,
                                      fact_kind="beam"))  # fmt: skip
    mark_evidence(sessions, questions)
    return User(uid, sessions[-1].occurred_at, sessions), questions, left


def from_beam(path: str | Path, limit: int | None = None) -> Corpus:
    """BEAM's conversation directories under ``path`` as a ``Corpus`` (the module's protocol); ``limit``: the first
    N conversations by number."""
    p = Path(path)
    scale = p.parent.name if (p / "chat.json").is_file() else p.name
    users, questions = [], []
    left = 0
    for d in beam_dirs(p)[:limit]:
        user, asked, none = _conversation(d, f"beam-{scale}-{d.name}")
        users.append(user)
        questions += asked
        left += none
    note = f"{len(questions)} questions kept, {left} without an evidence message"
    return Corpus(0, users, questions, source=f"beam:{scale} ({note})")
