"""What ``hivemem bench memory`` makes of its runs: the gold of a question, the scores per category, the tables and
latency lines it prints and the per-question dump (``--dump``)."""

from __future__ import annotations

import json
from pathlib import Path

from rich.table import Table

from bench.memory_corpus import Corpus, Question, parse_iso
from bench.memory_metrics import Gold, Retrieval, Scores, by_category, score
from bench.memory_public import categories
from bench.memory_run import ModeRun


def gold(q: Question) -> Gold:
    return Gold(q.category, parse_iso(q.question_date), tuple(q.evidence_session_ids), q.answer,
                q.current_session_id, q.superseded_value)  # fmt: skip


def _f(x: float, pct: bool = True) -> str:
    if x != x:  # NaN: nothing to score
        return "-"
    return f"{x:.1%}" if pct else f"{x:.3f}"


def table(mode: str, groups: dict[str, Scores], k: int) -> Table:
    t = Table(title=f"mode {mode}: search k={k}, as_of = question date", title_justify="left")
    for col in ("questions", "n", "R@1", "R@5", "R@10", "any@5", "any@10", "NDCG@10", "KU cur>sup", "leaks (q)",
                "abstain", "false abst."):  # fmt: skip
        t.add_column(col, justify="left" if col == "questions" else "right")
    for name, s in groups.items():
        ku = f"{_f(s.current_wins)} ({s.current_n})" if s.current_n else "-"
        t.add_row(name, str(s.n), _f(s.recall.get(1, float("nan"))), _f(s.recall.get(5, float("nan"))),
                  _f(s.recall.get(10, float("nan"))), _f(s.any_hit.get(5, float("nan"))),
                  _f(s.any_hit.get(10, float("nan"))), _f(s.ndcg10, pct=False), ku,
                  f"{s.leaks} ({s.leaking_questions})", _f(s.abstention), _f(s.false_abstention),
                  end_section=name == "point-in-time")  # fmt: skip
    return t


def score_run(corpus: Corpus, run: ModeRun) -> dict[str, Scores]:
    """Per category, the point-in-time questions, and overall, over the questions whose search answered (the
    failed ones are counted in ``run.errors`` and left out)."""
    done = [(q, r) for q, r in zip(corpus.questions, run.results, strict=False) if r is not None]
    golds = [gold(q) for q, _ in done]
    results = [r for _, r in done]
    groups = dict(by_category(golds, results, categories(corpus)))
    overall = groups.pop("overall")
    pit = [i for i, (q, _) in enumerate(done) if q.point_in_time]
    if pit:
        groups["point-in-time"] = score([golds[i] for i in pit], [results[i] for i in pit])
    groups["overall"] = overall
    return groups


def context_recall(corpus: Corpus, run: ModeRun) -> str:
    """The result's ``context`` (derived nodes) scored as hits are, by the sessions each node cites: how often what
    HiveMem derived points at the evidence. Not part of the tables above, which rank ``hits`` only."""
    done = [(q, r) for q, r in zip(corpus.questions, run.results, strict=False) if r is not None]
    s = score([gold(q) for q, _ in done], [Retrieval(r.context) for _, r in done])
    at = "  ".join(f"R@{k} {100 * s.recall[k]:.1f}%" for k in (5, 10) if k in s.recall)
    return f"context (derived nodes, by the sessions they cite), overall: {at}  (n={s.n})"


def dump(path: Path, corpus: Corpus, run: ModeRun) -> None:
    """Append one JSON line per question: its gold (category, evidence, values) and the hits as ranked."""
    with path.open("a", encoding="utf-8") as f:
        for q, res in zip(corpus.questions, run.results, strict=False):
            hits = [] if res is None else [{"layer": h.layer, "session": h.session_id, "cited": list(h.cited),
                                             "value": h.fact_value, "status": h.status, "similarity": h.similarity,
                                             "text": h.text} for h in res.hits]  # fmt: skip
            f.write(
                json.dumps(
                    {
                        "mode": run.mode,
                        "question": q.question,
                        "category": q.category,
                        "date": str(q.question_date),
                        "evidence": list(q.evidence_session_ids),
                        "answer": q.answer,
                        "current": q.current_session_id,
                        "old": q.superseded_value,
                        "confidence": None if res is None else res.confidence,
                        "hits": hits,
                    }
                )
                + "\n"
            )
