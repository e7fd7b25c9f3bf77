"""``hivemem bench memory --scale N``: search latency when one memory holds N episodes.

Ingesting 100,000 episodes through the pipeline takes hours on two cores (spaCy and the embedder run at
~15 episodes/s), so this phase builds the large memory in the read model directly, from what the pipeline
stored for the corpus: every stored episode is copied into the first user's memory, again and again under
new ids, at a random event time within the corpus's span, until that memory holds N episodes. The copies
keep their rounds' text (so full text search meets realistic term frequencies) and their vectors (units'
and sentences'), each moved by a little Gaussian noise (cosine ~0.98 to the original) so that the HNSW
index does not hold thousands of identical points. The vector index is dropped for the load and built
again (what pgvector does fastest) and the tables are vacuumed; then every question of the corpus is
asked of that one memory at its own date, through the HTTP API as in the other phases, and the
server-reported latency is what counts.

Only for the temporary stack: it writes straight into the read model's tables, which a live system's
projector owns.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from bench.memory_corpus import Corpus

NOISE = 0.011  # per-dimension Gaussian noise on a unit vector of 384 dimensions: cosine ~0.98 to the original


@dataclass
class Scaled:
    episodes: int = 0  # in the big memory, after the load
    units: int = 0
    vectors: int = 0
    load_s: float = 0.0
    index_s: float = 0.0  # the HNSW build and the vacuum
    server_ms: list[float] = field(default_factory=list)  # the second pass: the memory's pages in Postgres's cache
    cold_ms: list[float] = field(default_factory=list)  # the first pass, right after the index build and vacuum
    errors: int = 0


def _copy_rows(cur: psycopg.Cursor[Any], sql: str, rows: list[tuple[Any, ...]]) -> None:
    with cur.copy(sql) as copy:
        for row in rows:
            copy.write_row(row)


def build(db_url: str, tenant: str, claw: str, scope: str, target: int, seed: int = 7,
          only_own: bool = False) -> Scaled:  # fmt: skip
    """Fill the memory (tenant, claw, scope) up to ``target`` episodes with moved copies of the tenant's
    episodes (``only_own``: of the memory's own)."""
    from projections.kmms.read_model import index_name

    rnd = random.Random(seed)
    rng = np.random.default_rng(seed)
    out = Scaled()
    with psycopg.connect(db_url, autocommit=True) as conn:
        register_vector(conn)
        mine = "AND claw_id = %(c)s AND scope = %(s)s" if only_own else ""
        p = {"t": tenant, "c": claw, "s": scope}
        have = conn.execute("SELECT count(*) FROM kmms.kmms_episodes WHERE tenant = %(t)s AND claw_id = %(c)s "
                            "AND scope = %(s)s", p).fetchone()  # fmt: skip
        episodes = conn.execute(
            "SELECT episode_id, session_id, thread_id, content_type, occurred_at, content, content_hash, redacted, "
            f"envelope_event_id, event_id, logged_at FROM kmms.kmms_episodes WHERE tenant = %(t)s {mine} "
            "ORDER BY episode_id", p).fetchall()  # fmt: skip
        units = conn.execute("SELECT episode_id, unit_id, ordinal, text FROM kmms.kmms_units "
                             f"WHERE tenant = %(t)s {mine}", p).fetchall()  # fmt: skip
        # The model most of the vectors are in (during a model switch, the old one's are also there).
        models = conn.execute(f"SELECT model FROM kmms.kmms_vectors v WHERE tenant = %(t)s {mine} GROUP BY model "
                              "ORDER BY count(*) DESC, model", p).fetchall()  # fmt: skip
        if not episodes or not models:
            raise SystemExit("--scale needs the ingested corpus: no stored episodes or vectors")
        model = str(models[0][0])
        vecs = conn.execute("SELECT unit_id, kind, voice, embedding FROM kmms.kmms_vectors WHERE tenant = %(t)s AND "
                            f"model = %(m)s AND kind IN ('unit', 'sentence') {mine}",
                            {**p, "m": model}).fetchall()  # fmt: skip
        by_episode: dict[str, list[tuple[str, int, str]]] = {}
        for eid, uid, ordinal, text in units:
            by_episode.setdefault(str(eid), []).append((str(uid), int(str(ordinal)), str(text)))
        vec_of: dict[str, list[tuple[str, str, str, np.ndarray]]] = {}  # episode -> (vector id, kind, voice, vector)
        for vid, kind, voice, emb in vecs:
            eid = str(vid).split("#", 1)[0]
            vector = emb.to_numpy() if hasattr(emb, "to_numpy") else emb  # pgvector >= 0.3 loads a Vector
            vec_of.setdefault(eid, []).append((str(vid), str(kind), str(voice), np.asarray(vector, dtype=np.float32)))
        lo = min(int(str(e[4])) for e in episodes)
        hi = max(int(str(e[4])) for e in episodes)
        need = target - int(str(have[0] if have else 0))
        t0 = time.perf_counter()
        conn.execute(f"DROP INDEX IF EXISTS kmms.{index_name(model)}")
        with conn.cursor() as cur:
            copy_no = 0
            while need > 0:
                copy_no += 1
                ep_rows, unit_rows, vec_rows = [], [], []
                for e in episodes[:need]:
                    eid, sid = str(e[0]), str(e[1])
                    new_eid, when = f"{eid}-x{copy_no}", rnd.randint(lo, hi)
                    ep_rows.append((tenant, claw, scope, new_eid, f"{sid}-x{copy_no}", e[2], e[3], when, e[5],
                                    f"{e[6]}-x{copy_no}", e[7], None, f"{e[9]}-x{copy_no}", e[10]))  # fmt: skip
                    for uid, ordinal, text in by_episode.get(eid, []):
                        unit_rows.append((tenant, claw, scope, uid.replace(eid, new_eid, 1), new_eid,
                                          f"{sid}-x{copy_no}", e[2], ordinal, text, when, e[10]))  # fmt: skip
                    for vid, kind, voice, v in vec_of.get(eid, []):
                        moved = v + rng.normal(0.0, NOISE, v.shape).astype(np.float32)
                        vec_rows.append((vid.replace(eid, new_eid, 1), model, tenant, claw, scope, kind, voice,
                                         moved / np.linalg.norm(moved), when))  # fmt: skip
                _copy_rows(cur, "COPY kmms.kmms_episodes (tenant, claw_id, scope, episode_id, session_id, thread_id, "
                           "content_type, occurred_at, content, content_hash, redacted, envelope_event_id, event_id, "
                           "logged_at) FROM STDIN", ep_rows)  # fmt: skip
                _copy_rows(cur, "COPY kmms.kmms_units (tenant, claw_id, scope, unit_id, episode_id, session_id, "
                           "thread_id, ordinal, text, occurred_at, logged_at) FROM STDIN", unit_rows)  # fmt: skip
                with cur.copy("COPY kmms.kmms_vectors (unit_id, model, tenant, claw_id, scope, kind, voice, embedding, "
                              "occurred_at) FROM STDIN WITH (FORMAT BINARY)") as copy:  # fmt: skip
                    copy.set_types(["text", "text", "text", "text", "text", "text", "text", "vector", "int8"])
                    for row in vec_rows:
                        copy.write_row(row)
                need -= len(ep_rows)
                out.units += len(unit_rows)
                out.vectors += len(vec_rows)
        out.load_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        conn.execute("SET maintenance_work_mem = '1GB'")
        # The projector's own DDL (projections/kmms/read_model.py), so its cache of built indexes stays right.
        conn.execute(f"CREATE INDEX IF NOT EXISTS {index_name(model)} ON kmms.kmms_vectors USING hnsw "
                     f"(embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64) "
                     f"WHERE model = '{model.replace(chr(39), chr(39) * 2)}'")  # fmt: skip
        # A memory that grew to this size over months has been vacuumed along the way; a freshly copied one
        # has not, and the first read of each row would set its hint bits (a write) during the measurement.
        for table in ("kmms_units", "kmms_vectors", "kmms_episodes"):
            conn.execute(f"VACUUM (ANALYZE) kmms.{table}")
        out.index_s = time.perf_counter() - t1
        final = conn.execute("SELECT count(*) FROM kmms.kmms_episodes WHERE tenant = %(t)s AND claw_id = %(c)s "
                             "AND scope = %(s)s", p).fetchone()  # fmt: skip
        out.episodes = int(str(final[0])) if final else 0
    return out


def ask_all(mem: Any, corpus: Corpus, k: int, out: Scaled) -> None:
    """Every question of the corpus, asked of the big memory at its own date, twice: right after the load the
    memory's index and vectors are not in Postgres's cache yet (``cold_ms``); a memory in use is (``server_ms``,
    the second pass). Server-reported latency."""
    for ms in (out.cold_ms, out.server_ms):
        for q in corpus.questions:
            try:
                res = mem.search(q.question, k=k, as_of=q.question_date, mode="hybrid")
            except Exception:
                out.errors += 1
                continue
            if res.latency_ms is not None:
                ms.append(float(res.latency_ms))
