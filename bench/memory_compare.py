"""HiveMem beside the plain baseline (``bench.memory_baseline``): one table per run, per category and overall.

Every system is scored by ``bench.memory_metrics`` over the same questions (those with evidence sessions whose
search answered): session recall@5, recall@10 and NDCG@10 over the first distinct sessions of its hits; and, when
the corpus has knowledge updates whose current session is known, ``cur>sup``: the share of them where a hit of the
current session (or value) ranks before any of the superseded one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rich.table import Table

from bench.memory_metrics import Gold, Retrieval, Scores, score

REFERENCE = "baseline RRF"


@dataclass(frozen=True)
class Row:
    n: int  # questions scored (with evidence, search answered)
    scores: Scores


def _rows(golds: Sequence[Gold], results: Sequence[Retrieval | None],
          categories: Sequence[str]) -> dict[str, Row]:  # fmt: skip
    done = [(g, r) for g, r in zip(golds, results, strict=False) if r is not None and g.evidence]
    out: dict[str, Row] = {}
    for c in (*categories, "overall"):
        group = [(g, r) for g, r in done if c in ("overall", g.category)]
        if group:
            out[c] = Row(len(group), score([g for g, _ in group], [r for _, r in group]))
    return out


def compare(golds: Sequence[Gold], systems: Mapping[str, Sequence[Retrieval | None]],
            categories: Sequence[str]) -> dict[str, dict[str, Row]]:  # fmt: skip
    """System name -> category (and ``overall``) -> its row."""
    return {name: _rows(golds, results, categories) for name, results in systems.items()}


def _pct(x: float) -> str:
    return "-" if x != x else f"{x:.1%}"


def _delta(a: float, b: float, pct: bool = True) -> str:
    if a != a or b != b:
        return "-"
    return f"{(a - b) * 100:+.1f}" if pct else f"{a - b:+.3f}"


def table(rows: Mapping[str, Mapping[str, Row]], k: int, reference: str = REFERENCE) -> Table:
    t = Table(title=f"HiveMem beside the baseline (same units, same embedder): recall over distinct sessions, "
                    f"HiveMem k={k} hits; delta = points (NDCG: absolute) against {reference}",
              title_justify="left")  # fmt: skip
    updates = any(r.scores.current_n for per in rows.values() for r in per.values())
    for col in ("questions", "system", "n", "R@5", "R@10", "NDCG@10", "dR@5", "dR@10", "dNDCG@10",
                *(("cur>sup",) if updates else ())):  # fmt: skip
        t.add_column(col, justify="left" if col in ("questions", "system") else "right")
    categories = list(dict.fromkeys(c for per in rows.values() for c in per))
    categories = [c for c in categories if c != "overall"] + ["overall"]
    ref = rows.get(reference, {})
    for c in categories:
        names = [n for n in rows if c in rows[n]]
        for i, name in enumerate(names):
            r, b = rows[name][c], ref.get(c)
            d = ("", "", "") if b is None or name == reference else (
                _delta(r.scores.recall[5], b.scores.recall[5]), _delta(r.scores.recall[10], b.scores.recall[10]),
                _delta(r.scores.ndcg10, b.scores.ndcg10, pct=False))  # fmt: skip
            cur = (f"{_pct(r.scores.current_wins)} ({r.scores.current_n})" if r.scores.current_n else "-",)
            t.add_row(c if i == 0 else "", name, str(r.n), _pct(r.scores.recall[5]), _pct(r.scores.recall[10]),
                      f"{r.scores.ndcg10:.3f}", *d, *(cur if updates else ()),
                      end_section=i == len(names) - 1)  # fmt: skip
    return t


def verdicts(rows: Mapping[str, Mapping[str, Row]], reference: str = REFERENCE) -> list[str]:
    """One line per HiveMem system: by how much it beats or trails the reference overall."""
    ref = rows.get(reference, {}).get("overall")
    if ref is None:
        return []
    out = []
    for name, per in rows.items():
        if not name.startswith("HiveMem") or "overall" not in per:
            continue
        s, b = per["overall"].scores, ref.scores
        d5 = (s.recall[5] - b.recall[5]) * 100
        word = "beats" if d5 > 0 else "trails" if d5 < 0 else "ties with"
        out.append(f"{name} {word} {reference} on recall@5 by {abs(d5):.1f} points ({_pct(s.recall[5])} vs "
                   f"{_pct(b.recall[5])}), recall@10 {_delta(s.recall[10], b.recall[10])} points "
                   f"({_pct(s.recall[10])} vs {_pct(b.recall[10])}), NDCG@10 {_delta(s.ndcg10, b.ndcg10, False)} "
                   f"({s.ndcg10:.3f} vs {b.ndcg10:.3f}); {per['overall'].n} questions "
                   f"({ref.n} for the baseline)")  # fmt: skip
    return out
