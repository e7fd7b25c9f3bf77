"""Public long-conversation benchmarks as a bench ``Corpus`` (``hivemem bench memory --dataset locomo|longmemeval``).

**LoCoMo** (snap-research/LoCoMo, ``data/locomo10.json``: a list of 10 samples, each a ``conversation`` between
``speaker_a`` and ``speaker_b`` in numbered sessions, ``session_N_date_time`` like "1:56 pm on 8 May, 2023" and
``session_N`` a list of turns ``{speaker, dia_id "D1:3", text, (img_url, blip_caption)}``, and ``qa``, a list of
``{question, answer, evidence ["D1:3", ...], category 1..5}``), read by this protocol:

* each conversation is its own memory (one bench user, ``locomo-<sample_id>``);
* each session is one episode, occurring at its ``date_time`` (read as UTC), in session order;
* every turn is a ``user`` message whose content is ``"<speaker>: <text>"`` (with ``photos=True``, a turn that
  shares an image gets `` [shares a photo of <blip_caption>]`` appended; off by default); with ``roles="pair"``
  (``--roles pair``), ``speaker_a``'s turns are ``user`` messages and ``speaker_b``'s ``assistant`` ones, their
  content the same: a chat between two people as an assistant's memory sees it, where HiveMem embeds a round
  from its ``user`` lines and reads the other side's words by full text (docs/kmms.md);
* every question is asked at one day after the conversation's last session;
* questions of categories 1-4 are kept when at least one of their evidence ids is a well-formed turn id
  (``D<session>:<turn>``, nothing else in the string) of a session the conversation has; the evidence sessions
  are the sessions of those ids. On ``locomo10.json`` that keeps 1,532 of the 1,540 questions of categories 1-4
  (the 446 adversarial questions of category 5 have no answer in the conversation and are left out);
* categories, LoCoMo's own numbering (its repository; category-2 questions ask "When did ..."):
  1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop.

**REALTALK** (danny911kr/REALTALK, ``data/Chat_*.json``: 10 conversations between real people over 21 days, in
LoCoMo's shape per file: ``name`` {speaker_1, speaker_2}, ``session_N`` a list of messages ``{speaker, dia_id,
clean_text, date_time}``, ``session_N_date_time`` like "29.12.2023, 22:42:04", and ``qa`` as LoCoMo's with
categories 1-3), read by LoCoMo's protocol above, with three differences the data asks for:

* ``--file`` is one chat's file or a directory of them (every ``*.json`` in it, by name); ``roles="pair"`` makes
  ``name.speaker_1``'s messages ``user`` ones and the other's ``assistant`` ones;
* a message's ``dia_id`` does not name its session ("D3:30" opens ``session_4``), so an evidence id's session is
  the session that holds the message with that id; an id no message has (mostly photos, which the files leave
  out) is not evidence;
* evidence ids are read out of hand-typed strings: "D20:17.", "D 2:18", "23:29", "D11:17; D16:1", and a range
  "D18:2-D18:8" stands for every id in it.

**LongMemEval** (the ``_s`` / ``_m`` / ``_oracle`` JSON): ``bench.memory_corpus.from_longmemeval``.

**RealMem** (zhiyuan5986/RealMemBench, ``dataset/*_dialogues_256k.json``): ``bench.memory_realmem.from_realmem``.

**BEAM** (mohammadtavakoli78/BEAM, ``chats/<scale>/``): ``bench.memory_beam.from_beam``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.memory_beam import from_beam
from bench.memory_corpus import CATEGORIES, Corpus, Question, Session, Turn, User, from_longmemeval, generate, iso
from bench.memory_loading import data_files, mark_evidence
from bench.memory_realmem import from_realmem

DATASETS = ("synthetic", "locomo", "longmemeval", "realtalk", "realmem", "beam")
# Whose turns are ``user`` messages in LoCoMo and REALTALK: everyone's ("user", the protocol), or the first
# speaker's, the other's ``assistant`` ones ("pair").
ROLES = ("user", "pair")
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
LOCOMO_ADVERSARIAL = 5
_SESSION_KEY = re.compile(r"session_([0-9]+)")
_TURN_ID = re.compile(r"D([0-9]+):([0-9]+)")
_DATE_FORMAT = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"


def locomo_date(s: str) -> datetime:
    return datetime.strptime(s.strip(), _DATE_FORMAT).replace(tzinfo=UTC)


def evidence_sessions(evidence: list[str], sessions: set[int]) -> list[int]:
    """The sessions (numbers, first-seen order) of the well-formed evidence turn ids that map to a session."""
    out: list[int] = []
    for e in evidence:
        m = _TURN_ID.fullmatch(str(e).strip())
        if m and int(m.group(1)) in sessions and int(m.group(1)) not in out:
            out.append(int(m.group(1)))
    return out


def role_of(speaker: str, first: str, roles: str) -> str:
    """The message role of a turn by ``speaker``: ``user`` for everyone (``roles`` "user"), or for ``first`` only
    and ``assistant`` for the other speaker ("pair")."""
    if roles not in ROLES:
        raise ValueError(f"roles must be one of {', '.join(ROLES)}, not {roles!r}")
    return "user" if roles == "user" or speaker.strip() == first.strip() else "assistant"


def _roles_note(roles: str) -> str:
    return " (the second speaker as assistant)" if roles == "pair" else ""


def _content(turn: dict[str, Any], photos: bool) -> str:
    text = f"{turn['speaker']}: {turn.get('text') or ''}".rstrip()
    if photos and turn.get("blip_caption"):
        text += f" [shares a photo of {turn['blip_caption']}]"
    return text


def locomo_counts(data: list[dict[str, Any]]) -> Counter[str]:
    """What the protocol keeps and leaves out of ``data`` (a parsed LoCoMo file): ``kept``, ``adversarial``,
    ``no evidence`` (categories 1-4 without a usable evidence id), ``other category``."""
    out: Counter[str] = Counter()
    for sample in data:
        numbers = {int(m.group(1)) for k in sample["conversation"] if (m := _SESSION_KEY.fullmatch(k))}
        for qa in sample["qa"]:
            cat = qa.get("category")
            if cat == LOCOMO_ADVERSARIAL:
                out["adversarial"] += 1
            elif cat not in LOCOMO_CATEGORIES:
                out["other category"] += 1
            elif evidence_sessions(qa.get("evidence") or [], numbers):
                out["kept"] += 1
            else:
                out["no evidence"] += 1
    return out


def locomo_note(path: str | Path, limit: int | None = None) -> str:
    """What the protocol kept of the file's (first ``limit``) conversations, for the report."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))[:limit]
    c = locomo_counts(data)
    return (f"LoCoMo protocol: {len(data)} conversations, {c['kept']:,} questions of categories 1-4 with evidence "
            f"kept; left out: {c['adversarial']} adversarial (category 5), {c['no evidence']} of categories 1-4 "
            f"without a usable evidence turn id" + (f", {c['other category']} of other categories"
                                                    if c["other category"] else ""))  # fmt: skip


def _asked(prefix: str, uid: str, kind: str, qas: list[dict[str, Any]], evidence: list[list[str]], as_of: str,
           sessions: list[Session]) -> list[Question]:  # fmt: skip
    """One conversation's questions by LoCoMo's protocol: those of categories 1-4 whose evidence names a session
    (``evidence``: each question's evidence session ids, distinct, first-seen order), each asked at ``as_of``; a
    session is marked evidence when a kept question names it, else distractor."""
    out = [Question(f"{prefix}-q{i}", uid, str(qa["question"]), as_of, str(qa.get("answer", "")), ev,
                    LOCOMO_CATEGORIES[qa["category"]], fact_kind=f"{kind}-{qa['category']}")
           for i, (qa, ev) in enumerate(zip(qas, evidence, strict=True))
           if qa.get("category") in LOCOMO_CATEGORIES and ev]  # fmt: skip
    mark_evidence(sessions, out)
    return out


def from_locomo(path: str | Path, limit: int | None = None, photos: bool = False, roles: str = "user") -> Corpus:
    """The LoCoMo JSON as a ``Corpus`` (the module's protocol); ``limit``: its first N conversations; ``roles``:
    ``ROLES``."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))[:limit]
    users, questions = [], []
    for sample in data:
        sid = str(sample["sample_id"])
        uid = f"locomo-{sid}"
        conv = sample["conversation"]
        numbers = sorted(int(m.group(1)) for k in conv if (m := _SESSION_KEY.fullmatch(k)))
        sessions: dict[int, Session] = {}
        for n in numbers:
            said = [t for t in conv[f"session_{n}"] if t.get("text") or (photos and t.get("blip_caption"))]
            turns = [Turn(role_of(str(t["speaker"]), str(conv["speaker_a"]), roles), _content(t, photos)) for t in said]
            if turns:
                when = iso(locomo_date(conv[f"session_{n}_date_time"]))
                sessions[n] = Session(f"{sid}-s{n}", uid, when, turns, topic="conversation")
        ordered = [s for _, s in sorted(sessions.items(), key=lambda kv: (kv[1].occurred_at, kv[0]))]
        as_of = iso(max(locomo_date(conv[f"session_{n}_date_time"]) for n in sessions) + timedelta(days=1))
        numbered = set(sessions)
        evidence = [[sessions[n].session_id for n in evidence_sessions(qa.get("evidence") or [], numbered)]
                    for qa in sample["qa"]]  # fmt: skip
        questions += _asked(sid, uid, "locomo", sample["qa"], evidence, as_of, ordered)
        users.append(User(uid, as_of, ordered))
    return Corpus(
        0, users, questions, source=f"locomo:{Path(path).name}" + (" (photos)" if photos else "") + _roles_note(roles)
    )


_REALTALK_DATE = "%d.%m.%Y, %H:%M:%S"  # "29.12.2023, 22:42:04"
_LOOSE_ID = re.compile(r"D?\s*([0-9]+)\s*:\s*([0-9]+)(?:\s*-\s*D?\s*([0-9]+)\s*:\s*([0-9]+))?")


def realtalk_ids(evidence: list[str]) -> list[str]:
    """The message ids hand-typed evidence strings name, in order ("D5:3." -> D5:3; "D11:17; D16:1" -> both;
    "D18:2-D18:4" -> D18:2, D18:3, D18:4; a range across days names its two ends)."""
    out: list[str] = []
    for e in evidence:
        for m in _LOOSE_ID.finditer(str(e)):
            day, first = int(m.group(1)), int(m.group(2))
            if m.group(3) is not None and int(m.group(3)) == day and int(m.group(4)) >= first:
                out.extend(f"D{day}:{n}" for n in range(first, int(m.group(4)) + 1))
            else:
                out.append(f"D{day}:{first}")
                if m.group(3) is not None:
                    out.append(f"D{m.group(3)}:{m.group(4)}")
    return list(dict.fromkeys(out))


def realtalk_files(path: str | Path) -> list[Path]:
    return data_files(path, "*.json", "REALTALK chat files")


def from_realtalk(path: str | Path, limit: int | None = None, roles: str = "user") -> Corpus:
    """REALTALK's chat file(s) as a ``Corpus`` (the module's protocol); ``limit``: the first N chats by name;
    ``roles``: ``ROLES``."""
    users, questions = [], []
    kept = skipped = 0
    for f in realtalk_files(path)[:limit]:
        chat = json.loads(f.read_text(encoding="utf-8"))
        uid = f"realtalk-{f.stem}"
        numbers = sorted(int(m.group(1)) for k in chat if (m := _SESSION_KEY.fullmatch(k)))
        sessions: list[Session] = []
        where: dict[str, str] = {}  # message id -> its session's id
        for n in numbers:
            said = [t for t in chat[f"session_{n}"] if str(t.get("clean_text") or "").strip()]
            if not said:
                continue
            s = Session(f"{f.stem}-s{n}", uid, iso(datetime.strptime(chat[f"session_{n}_date_time"].strip(),
                        _REALTALK_DATE).replace(tzinfo=UTC)),
                        [Turn(role_of(str(t["speaker"]), str(chat["name"]["speaker_1"]), roles),
                              f"{t['speaker']}: {str(t['clean_text']).strip()}") for t in said],
                        topic="conversation")  # fmt: skip
            sessions.append(s)
            where.update((str(t.get("dia_id", "")).strip(), s.session_id) for t in said)
        sessions.sort(key=lambda s: s.occurred_at)
        as_of = iso(datetime.fromisoformat(sessions[-1].occurred_at.replace("Z", "+00:00")) + timedelta(days=1))
        qas = chat.get("qa") or []
        evidence = [list(dict.fromkeys(where[d] for d in realtalk_ids(qa.get("evidence") or []) if d in where))
                    for qa in qas]  # fmt: skip
        asked = _asked(f.stem, uid, "realtalk", qas, evidence, as_of, sessions)
        kept, skipped = kept + len(asked), skipped + len(qas) - len(asked)
        questions += asked
        users.append(User(uid, as_of, sessions))
    name = Path(path).name
    note = f"{kept} questions kept, {skipped} without a category 1-4 or an evidence message in the files"
    return Corpus(0, users, questions, source=f"realtalk:{name} ({note}){_roles_note(roles)}")


def categories(corpus: Corpus) -> tuple[str, ...]:
    """The corpus' categories in report order: the synthetic/LongMemEval ones, LoCoMo's, then any other."""
    known = (*CATEGORIES, *LOCOMO_CATEGORIES.values())
    present = list(dict.fromkeys(q.category for q in corpus.questions))
    return tuple(c for c in known if c in present) + tuple(c for c in present if c not in known)


def load_corpus(dataset: str, path: Path | None, *, limit: int | None = None, photos: bool = False, seed: int = 7,
         users: int = 30, sessions: int = 40, shape: str = "short", roles: str = "user", sample: int | None = None,
         sample_skip: int = 0) -> Corpus:  # fmt: skip
    """The corpus of ``--dataset``: generated (``synthetic``) or read from ``path``; ``sample`` (LongMemEval only):
    that many of its questions drawn by a fixed hash, after ``sample_skip`` (``bench.memory_corpus.lme_draw``)."""
    if sample is not None and dataset != "longmemeval":
        raise ValueError(f"--sample applies to --dataset longmemeval (one haystack per question), not {dataset}")
    if roles != "user" and dataset not in ("locomo", "realtalk"):
        raise ValueError(f"--roles {roles} applies to --dataset locomo or realtalk (conversations between two named "
                         f"people), not {dataset}")  # fmt: skip
    if dataset == "synthetic":
        return generate(seed=seed, users=users, sessions_per_user=sessions, shape=shape)
    if path is None:
        raise ValueError(f"--dataset {dataset} needs --file PATH")
    try:
        return _read_public(dataset, path, limit, photos, roles, sample, sample_skip)
    except (KeyError, TypeError, IndexError, AttributeError) as e:  # JSON, but not this dataset's
        raise ValueError(f"{path} does not read as --dataset {dataset}'s format ({type(e).__name__}: {e})") from e


def _read_public(dataset: str, path: Path, limit: int | None, photos: bool, roles: str, sample: int | None,
                 sample_skip: int) -> Corpus:  # fmt: skip
    if dataset == "locomo":
        return from_locomo(path, limit, photos, roles)
    if dataset == "longmemeval":
        return from_longmemeval(path, limit, sample, sample_skip)
    if dataset == "realtalk":
        return from_realtalk(path, limit, roles)
    if dataset == "realmem":
        return from_realmem(path, limit)
    if dataset == "beam":
        return from_beam(path, limit)
    raise ValueError(f"unknown dataset {dataset!r}; choose {', '.join(DATASETS)}")
