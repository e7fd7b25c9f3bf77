"""``hivemem bench memory --ask``: what ``ask`` says (``POST /api/v1/memory/ask``, the defaults a user gets: k = 5),
scored against each question's gold answer, beside the plain baseline's answer from the same run.

* **gold-word share** of an answer: the share of the gold answer's words that the answer holds, words lower-cased
  runs of letters and digits, English function words left out (``STOP``), an ISO date also read as its day, month
  and year ("2023-05-08" holds "8", "may" and "2023"); averaged over the questions that have a gold answer. **all
  gold words**: the share of questions whose answer holds every gold word. Neither judges what else an answer
  says: a longer answer holds more words, so each figure is read beside the others of the same run.
* Three answers per question: HiveMem's ``ask`` as a user gets it (hedging prefix, the answering hit: an L4 round
  after its day and, when it is one turn of a conversation sent turn by turn, with the turns around it, when it is
  a piece of a round cut into pieces, with its round's pieces around it; then the best hit of another session
  about the question too, read the same way; an L2 fact's value; ``governance/kmms/answer.py``); the answering hit
  alone, its text without role prefixes (or the fact's value), which is what ``ask`` said before 2026-12-06; and the
  baseline's, the text of its first unit by the RRF of its vector and BM25 ranks
  (``bench.memory_baseline.MemoryIndex.answer``).
"""

from __future__ import annotations

import re
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from bench.figures import dist
from bench.memory_corpus import Corpus
from bench.memory_run import COLUMNS
from governance.kmms.answer import plain_answer

K = 5  # ask's default
STOP = frozenset(("a", "an", "the", "of", "to", "in", "on", "at", "for", "and", "or", "is", "was", "were", "be",
                  "been", "by", "with", "from", "as", "it", "its", "that", "this", "i", "my", "me", "you", "your",
                  "he", "she", "his", "her", "they", "their", "we", "our", "what", "when", "where", "who", "how",
                  "why", "did", "do", "does"))  # fmt: skip
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")  # fmt: skip
_ISO_DAY = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


def answer_words(text: str) -> set[str]:
    """The words an answer is scored by (module docstring)."""
    low = _ISO_DAY.sub(lambda m: f"{m[0]} {int(m[3])} {_MONTHS[int(m[2]) - 1]} {m[1]}"
                       if 1 <= int(m[2]) <= 12 else m[0], text.lower())  # fmt: skip
    return {w for w in re.findall(r"[a-z0-9]+", low) if w not in STOP}


def answer_share(answer: str | None, gold: str) -> float:
    """The share of ``gold``'s words that ``answer`` holds (0 for no answer; questions without gold words are not
    scored: the caller leaves them out)."""
    want = answer_words(gold)
    return len(want & answer_words(answer or "")) / len(want) if want else 0.0


@dataclass
class AskRun:
    questions: list[int] = field(default_factory=list)  # indexes into the corpus' questions: those with gold words
    answers: list[str | None] = field(default_factory=list)  # ``ask``'s, as the user gets it
    alone: list[str | None] = field(default_factory=list)  # the answering hit alone
    client_ms: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)


def _alone(res: Any) -> str | None:
    """The answering hit's text without role prefixes, or an L2 fact's value (None when the search abstained)."""
    top = res.answering_hit()
    return None if top is None else plain_answer(top.layer, top.fact_value, top.text)


def run_ask(corpus: Corpus, mems: dict[str, Any], console: Console) -> AskRun:
    """Every question with gold words asked through the SDK (``MemoryClient.ask``, k = ``K``, at its date)."""
    run = AskRun()
    scored = [i for i, q in enumerate(corpus.questions) if answer_words(q.answer)]
    with Progress(*COLUMNS, console=console) as bar:
        task = bar.add_task("questions (ask)", total=len(scored), rate="")
        t0 = time.perf_counter()
        for done, i in enumerate(scored, start=1):
            q = corpus.questions[i]
            t = time.perf_counter()
            try:
                got = mems[q.user_id].ask(q.question, k=K, as_of=q.question_date)
            except Exception as exc:
                run.errors[str(getattr(exc, "code", type(exc).__name__))] += 1
                continue
            run.client_ms.append((time.perf_counter() - t) * 1000)
            run.questions.append(i)
            run.answers.append(got.answer)
            run.alone.append(_alone(got.result))
            bar.update(task, completed=done, rate=f"{done / (time.perf_counter() - t0):6.1f}/s")
    return run


def _row(answers: Sequence[str | None], golds: Sequence[str]) -> tuple[str, str, str]:
    shares = [answer_share(a, g) for a, g in zip(answers, golds, strict=True)]
    words = sorted(len((a or "").split()) for a in answers)
    return (f"{statistics.fmean(shares):.3f}", f"{sum(s == 1.0 for s in shares) / len(shares):.1%}",
            str(words[len(words) // 2]))  # fmt: skip


def ask_section(corpus: Corpus, mems: dict[str, Any], baseline_answers: Sequence[str] | None, console: Console,
                out: Console, n: int) -> None:  # fmt: skip
    """The section of ``--ask``: every question with gold words asked, its answers scored per category."""
    run = run_ask(corpus, mems, console)
    out.print(f"\n{n}. what ask says (k={K}, the default), scored by the gold answer's words"
              + (f"  errors: {dict(run.errors)}" if run.errors else ""))  # fmt: skip
    out.print(f"   ask latency, client (HTTP)   {dist(run.client_ms)}")
    table = Table("questions", "answer", "n", "gold-word share", "all gold words", "words p50")
    by: dict[str, list[int]] = {}
    for j, i in enumerate(run.questions):
        by.setdefault(corpus.questions[i].category, []).append(j)
    for category, js in [*sorted(by.items()), ("overall", list(range(len(run.questions))))]:
        golds = [corpus.questions[run.questions[j]].answer for j in js]
        systems = [("HiveMem ask", [run.answers[j] for j in js]),
                   ("its answering hit alone", [run.alone[j] for j in js])]  # fmt: skip
        if baseline_answers is not None:
            systems.append(("baseline: first unit", [baseline_answers[run.questions[j]] for j in js]))
        for s, (name, answers) in enumerate(systems):
            table.add_row(category if s == 0 else "", name, str(len(js)), *_row(answers, golds))
    out.print(table)
