"""The local, deterministic KMMS consolidator (``model_id`` "local-v1"): no model, the default back-end.

- summarize (L4 -> L3): extractive. The owner's sentences (assistant/system/tool turns are left out; between
  named people, each person's, as extract_facts below reads them) are scored: 3 if they state an extractable
  fact about the entity, 2 if they mention it (for ``user``: first-person words), 1 per keyword of the topic,
  plus 1/(1+i) for the i-th sentence of its episode. Fact sentences are always kept; the others are added
  best-first while the summary stays within ``max_chars`` (600). They are written in time order, each prefixed
  with its episode's date: "[2026-03-04] I moved to Porto.". A merge with the previous version keeps every
  previous sentence, adds the new ones (duplicates dropped) and reports facts of the new sentences at odds with
  the previous ones as contradictions ("residence: Lisbon -> Porto (temporal)").
- extract_facts (L3 -> L2): the patterns of ``inference.kmms.patterns`` over the episodes' sentences; for
  ``user`` first-person statements, for any other entity third-person ones about it ("John thinks ...", and
  "He ..." right after a sentence naming him). In a conversation between named people
  (``phrasing.people``: two names or more) a person's first-person statements are that person's, whatever
  their turns' role ("Melanie: I moved to Lisbon." is a fact of Melanie's), not the owner's; the owner keeps
  the unnamed user lines. Their sentences are shown with the name ("Melanie: I moved to Lisbon."). A fact
  whose key already has another value (in ``existing`` or earlier in the batch) is a contradiction; it also
  ``updates_existing`` when its sentence carries a change cue (moved, switched, now, new, ...). A change that
  names the value left ("I switched from Python to Go") updates whichever fact holds it. The quote is the verbatim
  sentence.
- classify: single-valued keys (residence, employer, job_title, favourite_*, a partner/manager/parent) are
  temporal when the new quote has a change cue or a date, contextual when the values' qualifiers differ ("for
  data pipelines", "at work", "on weekends"), else direct. Other keys: differing qualifiers -> contextual
  first (both hold), then a change cue -> temporal, else direct.
- abstract (L2 -> L1): a template over the facts sorted by (key, value), at most three sentences: where the
  entity lives/works and what it prefers; its relationships and pets; its skills, events, opinions and the rest.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from governance.kmms.phrasing import is_owner, named_lines, people_in, speaker_lines
from governance.kmms.values import USER_ENTITY, ContradictionClass, EpisodeText, ExtractedFact, Summary
from governance.sentences import split_sentences
from inference.kmms.dates import episode_date, has_date
from inference.kmms.enrich import TOPIC_KEYWORDS
from inference.kmms.patterns import CHANGE, Hit, Subject, facts_in, qualifiers

MODEL_ID = "local-v1"
MAX_CHARS = 600
SINGLE_VALUED = frozenset({"residence", "employer", "job_title", "partner", "wife", "husband", "spouse", "boyfriend",
                           "girlfriend", "fiance", "manager", "mentor", "mother", "father"})  # fmt: skip
_CONTEXT = re.compile(r"\b(?:at work|at home|at the office|in the office|on (?:the )?weekends?|on weekdays|"
                      r"on holiday|on vacation|in the (?:morning|evening)s?|at night|for work|for fun)\b",
                      re.IGNORECASE)  # fmt: skip
_ITEM = re.compile(r"\[(\d{4}-\d{2}-\d{2})\] ")
_FIRST_PERSON = re.compile(r"(?-i:\bI\b)|\b(?:my|me|mine|myself|we|our|us)\b", re.IGNORECASE)
_PRONOUN_START = re.compile(r"^(?:He|She)\b")


def owner_lines(text: str) -> list[str]:
    """The lines the owner (or a document) said: role prefixes stripped, assistant/system/tool turns left out,
    each with its later lines (``phrasing.speaker_lines``: a long reply's paragraphs are the assistant's)."""
    return [body.strip() for role, body in speaker_lines(text) if is_owner(role) and body.strip()]


def sentences(text: str) -> list[str]:
    return [s.strip() for line in owner_lines(text) for s in split_sentences(line) if s.strip()]


def sentences_for(entity: str, text: str) -> list[tuple[str, str, bool]]:
    """(sentence as shown, sentence as read, said by ``entity`` itself) for each sentence of ``text`` that may
    tell of ``entity``. Outside a conversation between people: the owner's sentences (``sentences``), the
    owner's own for ``user``. Between people (``phrasing.people``): a person's turns, whatever their role, are
    read without their label and shown with it; they are their speaker's own words, never the owner's, and
    another entity's third-person mentions; the unnamed user lines stay the owner's."""
    lines = named_lines(text)
    names = people_in(lines)
    if not names:  # a summary's items keep a person's label: "Melanie: I moved to Lisbon." is Melanie's own
        label = f"{entity}: "
        return [(s, s[len(label) :], True) if entity != USER_ENTITY and s.startswith(label)
                else (s, s, entity == USER_ENTITY) for s in sentences(text)]  # fmt: skip
    out: list[tuple[str, str, bool]] = []
    for role, name, words in lines:
        if name in names:
            if entity == USER_ENTITY:
                continue  # a person's words in the owner's memory, not the owner's
            out += [(f"{name}: {x.strip()}", x.strip(), name == entity) for x in split_sentences(words) if x.strip()]
        elif is_owner(role) and words.strip():
            out += [(x.strip(), x.strip(), entity == USER_ENTITY) for x in split_sentences(words) if x.strip()]
    return out


def norm(text: str) -> str:
    return " ".join(text.lower().split()).strip(" .")


def subject_of(entity: str) -> Subject:
    return Subject.user() if entity == USER_ENTITY else Subject.entity(entity)


def _mentions(entity: str, sentence: str) -> bool:
    if entity == USER_ENTITY:
        return _FIRST_PERSON.search(sentence) is not None
    return re.search(r"\b" + re.escape(entity) + r"\b", sentence, re.IGNORECASE) is not None


def sentence_facts(entity: str, text: str, ref_ms: int) -> list[tuple[str, list[Hit]]]:
    """(sentence, its facts about ``entity``) for each of the owner's sentences of ``text``, in order."""
    if not entity.strip():
        return []
    subject, out, prev_named = subject_of(entity), [], False
    for shown, s, own in sentences_for(entity, text):
        probe = s
        if not own and entity != USER_ENTITY and prev_named and _PRONOUN_START.match(s):
            probe = _PRONOUN_START.sub(entity, s, count=1)  # "He works at Acme." right after "John ..."
        out.append((shown, facts_in(probe, Subject.user() if own else subject, ref_ms)))
        prev_named = not own and entity != USER_ENTITY and (_mentions(entity, s) or (prev_named and probe != s))
    return out


def replaced_key(hit: Hit, current: Mapping[str, str]) -> str:
    """The key of the fact a change replaces: "I switched from Python to Go" updates whichever fact holds "Python"
    (``preferred_language``), whatever key the new value alone would get; else the hit's own key."""
    if hit.replaces:
        old = norm(hit.replaces)
        for key, value in sorted(current.items()):
            if norm(value) == old or norm(value.split(" for ")[0]) == old:
                return key
    return hit.key


def _ms_of(day: str) -> int:
    return int(datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp() * 1000)


def _items(text: str) -> list[tuple[str, str]]:
    """A summary's "[date] sentence" items as (date, sentence)."""
    parts = _ITEM.split(text)
    return [(parts[i], parts[i + 1].strip()) for i in range(1, len(parts) - 1, 2) if parts[i + 1].strip()]


def _join(clauses: Sequence[str]) -> str:
    if len(clauses) <= 2:
        return " and ".join(clauses)
    return ", ".join(clauses[:-1]) + ", and " + clauses[-1]


class LocalConsolidator:
    """Deterministic, model-free consolidation (see the module doc). Stateless and thread-safe."""

    model_id = MODEL_ID

    def __init__(self, max_chars: int = MAX_CHARS) -> None:
        self.max_chars = max_chars

    # --- L4 -> L3 ------------------------------------------------------------------------------------------
    def summarize(self, entity: str, topic: str, window: str, episodes: Sequence[EpisodeText],
                  previous: Summary | None) -> Summary:  # fmt: skip
        keywords = TOPIC_KEYWORDS.get(topic, frozenset())
        candidates: list[tuple[float, int, str, str, bool]] = []  # score, order, date, sentence, has_fact
        order = 0
        for ep in sorted(episodes, key=lambda e: (e.occurred_at_ms, e.episode_id)):
            day = episode_date(ep.occurred_at_ms)
            for i, (s, hits) in enumerate(sentence_facts(entity, ep.text, ep.occurred_at_ms)):
                words = re.findall(r"[a-z]+", s.lower())
                score = 3.0 * bool(hits) + 2.0 * _mentions(entity, s) + sum(w in keywords for w in words)
                candidates.append((score and score + 1.0 / (1 + i), order, day, s, bool(hits)))
                order += 1
        kept_prev = _items(previous.text) if previous else []
        seen = {norm(s) for _, s in kept_prev}
        chosen: list[tuple[int, str, str]] = []
        used = 0
        for score, o, day, s, has_fact in sorted(candidates, key=lambda c: (not c[4], -c[0], c[1])):
            if norm(s) in seen:
                continue
            item_len = len(day) + len(s) + 4
            if not has_fact and (score == 0 or used + item_len > self.max_chars):
                continue  # unrelated, or over budget; fact sentences are always kept
            seen.add(norm(s))
            chosen.append((o, day, s))
            used += item_len
        if not chosen and not kept_prev and candidates:  # nothing relevant: keep the first sentence
            _, o, day, s, _ = min(candidates, key=lambda c: c[1])
            chosen.append((o, day, s[: self.max_chars]))
        new_items = [(day, s) for _, day, s in sorted(chosen)]
        items = sorted(kept_prev + new_items, key=lambda it: it[0])  # stable: previous first within a day
        text = " ".join(f"[{day}] {s}" for day, s in items)
        contradictions = self._contradictions(entity, kept_prev, new_items)
        ids = sorted({*(previous.source_episode_ids if previous else ()), *(e.episode_id for e in episodes)})
        return Summary(text=text, source_episode_ids=tuple(ids), contradictions=contradictions)

    def _contradictions(self, entity: str, old: list[tuple[str, str]], new: list[tuple[str, str]]) -> tuple[str, ...]:
        def facts(items: list[tuple[str, str]]) -> dict[str, tuple[str, str]]:
            out: dict[str, tuple[str, str]] = {}
            for day, s in items:
                for sent, hits in sentence_facts(entity, s, _ms_of(day)):
                    for h in hits:
                        out[h.key] = (h.value, sent)
            return out

        before, after = facts(old), facts(new)
        found = []
        for key in sorted(before.keys() & after.keys()):
            (v0, q0), (v1, q1) = before[key], after[key]
            if norm(v0) != norm(v1):
                found.append(f"{key}: {v0} -> {v1} ({self.classify(key, v0, v1, q0, q1)})")
        return tuple(found)

    # --- L3 -> L2 ------------------------------------------------------------------------------------------
    def extract_facts(self, entity: str, summary: Summary, episodes: Sequence[EpisodeText],
                      existing: Mapping[str, str]) -> list[ExtractedFact]:  # fmt: skip
        sources = [(e.occurred_at_ms, e.episode_id, e.text) for e in episodes]
        if not sources:  # no episodes at hand: read the summary's own dated sentences
            sources = [(_ms_of(day), f"summary:{i}", s) for i, (day, s) in enumerate(_items(summary.text))]
        current = dict(existing)
        out: list[ExtractedFact] = []
        seen: set[tuple[str, str, str]] = set()
        for ref_ms, source_id, text in sorted(sources):
            for sentence, hits in sentence_facts(entity, text, ref_ms):
                for h in hits:
                    key = replaced_key(h, current)
                    if (key, norm(h.value), source_id) in seen:
                        continue
                    seen.add((key, norm(h.value), source_id))
                    prior = current.get(key)
                    differs = prior is not None and norm(prior) != norm(h.value)
                    out.append(ExtractedFact(key=key, value=h.value, fact_type=h.fact_type,
                                             confidence=h.confidence, updates_existing=key if differs and h.change
                                             else None, is_contradiction=differs,
                                             source_quote=sentence[:1000]))  # fmt: skip
                    current[key] = h.value
        return out

    # --- contradictions ------------------------------------------------------------------------------------
    def classify(self, key: str, old_value: str, new_value: str, old_quote: str,
                 new_quote: str) -> ContradictionClass:  # fmt: skip
        def quals(value: str, quote: str) -> frozenset[str]:
            return qualifiers(value) | frozenset(m.lower() for m in _CONTEXT.findall(quote))

        scoped = quals(old_value, old_quote) != quals(new_value, new_quote)
        changed = CHANGE.search(new_quote) is not None
        if key in SINGLE_VALUED or key.startswith("favourite_"):
            if changed or has_date(new_quote):
                return "temporal"
            return "contextual" if scoped else "direct"
        if scoped:
            return "contextual"
        return "temporal" if changed else "direct"

    # --- L2 -> L1 ------------------------------------------------------------------------------------------
    def abstract(self, entity: str, facts: Sequence[tuple[str, str]]) -> str:
        by_key: dict[str, list[str]] = {}
        for key, value in sorted(set(facts)):
            by_key.setdefault(key, []).append(value)
        if not by_key:
            return f"Nothing is known about {entity} yet."
        groups: list[list[tuple[int, str, str]]] = [[], [], []]
        for key, values in by_key.items():
            group, rank, clause = _clause(key, " and ".join(values), by_key)
            if clause:
                groups[group].append((rank, key, clause))
        sentences_out = [f"{entity} {_join([c for *_, c in sorted(g)[:6]])}." for g in groups if g]
        return " ".join(sentences_out)


_RANK = {"residence": 0, "employer": 1, "job_title": 1, "preferred": 2, "favourite": 3, "likes": 4}


def _clause(key: str, v: str, by_key: Mapping[str, list[str]]) -> tuple[int, int, str | None]:
    """(sentence group, rank in it, clause) for one key: group 0 where the entity lives and works and what it
    prefers, 1 its people and pets, 2 the rest."""
    group, clause = _clause_text(key, v, by_key)
    return group, _RANK.get(key, _RANK.get(key.split("_")[0], 5)), clause


def _clause_text(key: str, v: str, by_key: Mapping[str, list[str]]) -> tuple[int, str | None]:
    words = key.replace("_", " ")
    if key == "residence":
        return 0, f"lives in {v}"
    if key == "employer":
        title = by_key.get("job_title")
        return 0, f"works at {v}" + (f" as {' and '.join(title)}" if title else "")
    if key == "job_title":
        return 0, None if "employer" in by_key else f"works as {v}"
    if key.startswith("preferred_"):
        return 0, f"prefers {v}"
    if key.startswith("favourite_"):
        return 0, f"has {v} as favourite {words[len('favourite ') :]}"
    if key.startswith("likes_"):
        return 0, v
    if key.startswith("pet_"):
        return 1, f"has a {words[len('pet ') :]} named {v}"
    if key in SINGLE_VALUED or key.split("_")[0] in {"sister", "brother", "son", "daughter", "friend", "colleague",
                                                     "cousin", "aunt", "uncle", "roommate", "grandmother",
                                                     "grandfather", "niece", "nephew"}:  # fmt: skip
        return 1, f"has a {key.split('_')[0]} named {v}"
    if key.startswith("learning_"):
        return 2, f"is learning {v}"
    if key.startswith("skill_"):
        return 2, f"knows {v}"
    if key.startswith("event_"):
        return 2, v
    if key.startswith("opinion_"):
        return 2, f"thinks {words[len('opinion ') :]} is {v}"
    return 2, f"has {words} {v}"
