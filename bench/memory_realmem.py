"""RealMem as a bench ``Corpus`` (``hivemem bench memory --dataset realmem --file DIR``).

**RealMem** (zhiyuan5986/RealMemBench, ``dataset/*_dialogues_256k.json``, Apache-2.0; arXiv 2601.06966): ten
people's chats with an assistant, about 200 sessions each, in which some user turns are requests that need what an
earlier session settled ("Regarding the WhatsApp project tool from last time, ..."). One file per person:
``{_metadata: {person_name, ...}, dialogues: [session]}``; a session is ``{session_uuid, current_time:
"2025-12-17 (Wednesday)", dialogue_turns: [{speaker: "User" | "Assistant", content, is_query, query_id,
category_name, ...}]}``; the assistant turn after a query (``is_query: true``) names the sessions whose memory it
used, ``memory_session_uuids``. Read by this protocol:

* each file is its own memory (one bench user, ``realmem-<person_name>``);
* each session is one episode; a session has a day and no time, and a day holds up to 35 of them, so the sessions
  of a day occur at 08:00 UTC and ten minutes apart, in the file's order (which is the dataset's: sessions are
  numbered within their topic, ``S1_01``, ``S1_02``, ...);
* every turn is a message of its speaker's role (``User`` -> ``user``, ``Assistant`` -> ``assistant``);
* every query is a question: its text the query turn's, asked one second before its own session occurs (so the
  search sees the sessions before it and neither the query's session nor any later one), its evidence the
  ``memory_session_uuids`` of the assistant turn after it that occur before it. RealMem's answers are the
  assistant's replies, not short answers: the bench scores retrieval only. On the ten files that keeps 1,411 of the
  1,415 queries and 2,299 of their 2,319 evidence links: 17 links name a session of a later day and 3 the query's
  own session, which no search at the query's time can see (four queries name nothing else);
* categories, RealMem's own: ``Dynamic Incremental``, ``Implicit Preference``, ``Dynamic Updating``,
  ``Temporal-reasoning``, written lower case with hyphens.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.memory_corpus import Corpus, Question, Session, Turn, User, iso
from bench.memory_loading import data_files, mark_evidence

_ROLES = {"user": "user", "assistant": "assistant"}
FIRST = timedelta(hours=8)  # a day's first session, UTC
APART = timedelta(minutes=10)  # the sessions of one day


def realmem_files(path: str | Path) -> list[Path]:
    return data_files(path, "*_dialogues_*.json", "RealMem dialogue files")


def category_of(name: str | None) -> str:
    """RealMem's ``category_name`` as a bench category: "Dynamic Incremental" -> "dynamic-incremental"."""
    return "-".join(str(name or "uncategorised").lower().replace("_", " ").split())


def session_times(days: list[str]) -> list[datetime]:
    """Each session's time from its ``current_time`` ("2025-12-17 (Wednesday)"), in the given order: its day at
    ``FIRST``, the n-th session of a day ``n * APART`` later."""
    seen: dict[str, int] = {}
    out = []
    for d in days:
        n = seen.get(d[:10], 0)
        seen[d[:10]] = n + 1
        out.append(datetime.strptime(d[:10], "%Y-%m-%d").replace(tzinfo=UTC) + FIRST + n * APART)
    return out


def _person(data: dict[str, Any], stem: str) -> tuple[User, list[Question], int]:
    """One file's memory, its questions, and how many queries had no evidence session before them."""
    meta = data.get("_metadata") or {}
    uid = f"realmem-{meta.get('person_name') or stem}"
    dialogues = list(data.get("dialogues") or [])
    times = session_times([str(s.get("current_time", "")) for s in dialogues])
    order = sorted(range(len(dialogues)), key=lambda i: (times[i], i))
    at = {str(dialogues[i]["session_uuid"]): times[i] for i in order}
    sessions: list[Session] = []
    questions: list[Question] = []
    dropped = 0
    for i in order:
        s = dialogues[i]
        turns = list(s.get("dialogue_turns") or [])
        kept = [Turn(_ROLES.get(str(t.get("speaker", "")).lower(), "user"), str(t["content"]))
                for t in turns if str(t.get("content") or "").strip()]  # fmt: skip
        if kept:
            sessions.append(Session(f"{uid}-{s['session_uuid']}", uid, iso(times[i]), kept))
        asked = times[i] - timedelta(seconds=1)
        for j, t in enumerate(turns):
            if not t.get("is_query"):
                continue
            reply = turns[j + 1] if j + 1 < len(turns) else {}
            named = [str(e) for e in reply.get("memory_session_uuids") or []]
            evidence = list(dict.fromkeys(f"{uid}-{e}" for e in named if e in at and at[e] < times[i]))
            if not evidence:
                dropped += 1
                continue
            questions.append(Question(f"{uid}-{t.get('query_id') or f'{i}-{j}'}", uid, str(t["content"]),
                                      iso(asked), str(reply.get("content", "")), evidence,
                                      category_of(t.get("category_name")), fact_kind="realmem"))  # fmt: skip
    mark_evidence(sessions, questions)
    now = sessions[-1].occurred_at if sessions else iso(datetime(1970, 1, 1, tzinfo=UTC))
    return User(uid, now, sessions), questions, dropped


def from_realmem(path: str | Path, limit: int | None = None) -> Corpus:
    """RealMem's dialogue file(s) as a ``Corpus`` (the module's protocol); ``path``: one file or the directory of
    them; ``limit``: the first N files by name."""
    users, questions = [], []
    dropped = 0
    for f in realmem_files(path)[:limit]:
        user, asked, none = _person(json.loads(f.read_text(encoding="utf-8")), f.stem)
        users.append(user)
        questions += asked
        dropped += none
    note = f"{len(questions)} queries kept, {dropped} without an evidence session before them"
    return Corpus(0, users, questions, source=f"realmem:{Path(path).name} ({note})")
