"""The embedder: accepted observations in, their vectors out, as derived events on the log.

Vectors are computed once (the model runs at hundreds of sentences per second; a replay must
run at tens of thousands of events per second) and published on ``hivemem.caml.embeddings``
keyed ``<tenant>/observation:<id>|<model>``; the read model folds them like any event.

Its name carries the model id's digest, so a changed model is a new consumer that starts at
the beginning of ``hivemem.caml.events`` and re-embeds every observation in the background;
the read model keeps each model's vectors in its own index and recall reads only the
configured model's (seed 004's switch rule: never two models in one index).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from contracts.caml_records import CamlEmbedding, CamlEvent, decode_caml, encode_caml
from contracts.consumers import embedder_name
from contracts.topics import TopicNames, key_partition
from inference.embeddings import Embedder
from processors.embedder_base import StatelessEmbedder, embed_or_outage
from streams.records import LogRecord, OutRecord


def embedding_text(summary: str, pattern: str) -> str:
    """What is embedded: the summary, then the pattern's values (its keys add nothing)."""
    try:
        parsed = json.loads(pattern)
    except ValueError:
        parsed = pattern
    values: list[str] = []

    def walk(x: object) -> None:
        if isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
        elif x is not None:
            values.append(str(x))

    walk(parsed)
    return summary + ("\n" + "; ".join(values) if values else "")


class EmbedderProcessor(StatelessEmbedder):
    def __init__(self, names: TopicNames, embedder: Embedder) -> None:
        super().__init__(names, embedder, embedder_name(embedder.model_id))

    def input_topics(self) -> list[str]:
        return [self.names.caml_events]

    def process(self, records: Sequence[LogRecord], now_ms: int) -> list[OutRecord]:
        todo: list[tuple[LogRecord, CamlEvent]] = []
        for rec in records:
            ev = decode_caml(rec.value or b"", CamlEvent)
            if ev.kind == "OBSERVATION_ACCEPTED" and ev.observation is not None:
                todo.append((rec, ev))
        if not todo:
            return []
        vectors = embed_or_outage(self.embedder, [embedding_text(ev.observation.summary, ev.observation.pattern)
                                                  for _, ev in todo if ev.observation is not None])  # fmt: skip
        outs = []
        for (rec, ev), vec in zip(todo, vectors, strict=True):
            assert ev.observation is not None
            oid = ev.observation.observation_id
            key = f"{ev.tenant}/observation:{oid}|{self.embedder.model_id}".encode()
            out = CamlEmbedding(observation_id=oid, tenant=ev.tenant, model=self.embedder.model_id,
                                vector=[float(x) for x in vec], source=str(rec.position))  # fmt: skip
            outs.append(OutRecord(self.names.caml_embeddings, key_partition(key), key,
                                  encode_caml(out)))  # fmt: skip
        return outs
