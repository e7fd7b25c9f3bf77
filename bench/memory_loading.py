"""What the public corpora's loaders (``bench.memory_public``, ``bench.memory_realmem``, ``bench.memory_beam``)
share: finding a dataset's files, and marking each session evidence or distractor by the questions kept."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from bench.memory_corpus import Question, Session


def data_files(path: str | Path, pattern: str, what: str) -> list[Path]:
    """``path`` itself when it is a file, else the files in it matching ``pattern``, by name; none is an error
    naming ``what`` they would have been."""
    p = Path(path)
    files = sorted(p.glob(pattern)) if p.is_dir() else [p]
    if not files:
        raise ValueError(f"{p}: no {what} ({pattern}) in it")
    return files


def mark_evidence(sessions: Iterable[Session], questions: Iterable[Question]) -> None:
    """Each session's role: evidence when a question names it, else distractor."""
    cited = {e for q in questions for e in q.evidence_session_ids}
    for s in sessions:
        s.role = "evidence" if s.session_id in cited else "distractor"
