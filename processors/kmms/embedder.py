"""The KMMS embedder: stored episodes and new L1–L3 nodes in, their vectors out, as derived events
on ``hivemem.kmms.embeddings`` keyed ``<tenant>/<unit id>|<model>`` (the CAML embedder's design:
computed once, replayed as data; the name carries the model's digest, so a changed model is a new
consumer that re-embeds the whole memory in the background while the old vectors keep serving).

Units: an episode's rounds or paragraphs (``governance/kmms/units.py``) and, for a document's or a note's unit
of several sentences, each sentence (``<unit id>~s<n>``: search ranks a unit by its best vector); a round's whole
text with ``round_whole`` (docs/kmms.md); and each L1/L2/L3 node. A unit's own vector carries, when the model gives
them (``TokenStatesEmbedder``: the local MiniLM) and the vector reads the whole unit (a round without replies, one
between named people, a document's paragraph; every round with ``round_replies``), its content pieces' token states
from the same forward pass (``KmmsEmbedding.tokens``, ``governance.token_states``): the search reads a round against
the question word by word with them (``governance.kmms.late``). A round read from its user's lines alone keeps none:
its replies would be missing from the reading (on RealMem's user-assistant chats such a reading cost 1.4 points of
session recall@5; docs/kmms.md), and a memory with such rounds among a search's candidates is ranked without it.
(A vector's ``voice``, the first stage's prior until 2026-12-05, is no longer set: ``KmmsEmbedding.voice`` stays in
the record's schema, empty.)
"""

from __future__ import annotations

from collections.abc import Sequence

from contracts.consumers import kmms_embedder_name
from contracts.kmms_records import KmmsEmbedding, KmmsEvent, decode_kmms, encode_kmms
from contracts.topics import TopicNames, key_partition
from governance.kmms.phrasing import embedding_text, fact_sentence
from governance.kmms.units import sentences_of, units_of, whole_round_id
from inference.embedding_base import TokenStatesEmbedder
from inference.embeddings import Embedder
from processors.embedder_base import StatelessEmbedder, or_outage
from streams.records import LogRecord, OutRecord


def node_text(ev: KmmsEvent) -> str | None:
    n = ev.node
    if n is None:
        return None
    if n.layer == 2 and n.fact_key:  # a fact reads better as a sentence than as key=value
        return fact_sentence(n.entity, n.fact_key, n.fact_value or n.content)
    return n.content


class KmmsEmbedderProcessor(StatelessEmbedder):
    def __init__(self, names: TopicNames, embedder: Embedder, round_replies: bool = False,
                 round_whole: bool = False) -> None:  # fmt: skip
        super().__init__(names, embedder, kmms_embedder_name(embedder.model_id))
        self.round_replies = round_replies
        self.round_whole = round_whole

    def input_topics(self) -> list[str]:
        return [self.names.kmms_events]

    def process(self, records: Sequence[LogRecord], now_ms: int) -> list[OutRecord]:
        todo: list[tuple[LogRecord, KmmsEvent, str, str]] = []  # (record, event, vector id, text)
        own: set[int] = set()  # the entries of todo whose token states are kept (``_reads_all``)
        for rec in records:
            ev = decode_kmms(rec.value or b"", KmmsEvent)
            if ev.kind == "EPISODE_STORED" and ev.episode is not None:
                conversation = bool(ev.episode.turns)
                for u in units_of(ev.episode):
                    said = embedding_text(u.text)
                    user = any(line.startswith("user: ") for line in u.text.split("\n"))
                    whole_text = embedding_text(u.text, replies=True)
                    own_text = whole_text if self.round_replies else said
                    if own_text == whole_text:  # the vector reads the whole round: its states are the round's
                        own.add(len(todo))
                    if self.round_replies:
                        todo.append((rec, ev, u.unit_id, whole_text))
                    else:
                        todo.append((rec, ev, u.unit_id, said))
                        whole = whole_text if user and self.round_whole else said
                        if whole != said:  # a round with replies: its whole text too (``round_whole``)
                            todo.append((rec, ev, whole_round_id(u.unit_id), whole))
                    # A document's or a note's sentences. A conversation's rounds have none: a user's round's
                    # sentences changed no ranking on public conversations (LoCoMo, LongMemEval) and were 70 % of
                    # LoCoMo's vectors, most of its time to searchable (docs/kmms.md); a reply piece's changed
                    # none either.
                    if not conversation:
                        todo += [(rec, ev, x.unit_id, x.text) for x in sentences_of(u.unit_id, said)]
            elif ev.kind == "NODE_CREATED" and ev.node is not None:
                text = node_text(ev)
                if text:
                    todo.append((rec, ev, ev.node.node_id, text))
        if not todo:
            return []
        texts = [t for _, _, _, t in todo]
        e = self.embedder
        if isinstance(e, TokenStatesEmbedder):
            embedded = or_outage(e, lambda: e.embed_with_tokens(texts))
        else:
            embedded = [(v, b"") for v in or_outage(e, lambda: e.embed(texts))]
        outs = []
        model = self.embedder.model_id
        for i, ((rec, ev, unit, _), (vec, tokens)) in enumerate(zip(todo, embedded, strict=True)):
            key = f"{ev.tenant}/{unit}|{model}".encode()
            out = KmmsEmbedding(unit_id=unit, tenant=ev.tenant, claw_id=ev.claw_id, scope=ev.scope, model=model,
                                vector=[float(x) for x in vec], source=str(rec.position),
                                tokens=tokens if i in own else b"")  # fmt: skip
            outs.append(OutRecord(self.names.kmms_embeddings, key_partition(key), key,
                                  encode_kmms(out)))  # fmt: skip
        return outs
