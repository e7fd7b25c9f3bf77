"""The KMMS embedder: stored episodes and new L1–L3 nodes in, their vectors out, as derived events
on ``hivemem.kmms.embeddings`` keyed ``<tenant>/<unit id>|<model>`` (the CAML embedder's design:
computed once, replayed as data; the name carries the model's digest, so a changed model is a new
consumer that re-embeds the whole memory in the background while the old vectors keep serving).

Units: an episode's rounds or paragraphs (``governance/kmms/units.py``) and, for a document's or a note's unit
of several sentences, each sentence (``<unit id>~s<n>``: search ranks a unit by its best vector); a user's round
of a conversation has its sentences embedded only with ``round_sentences`` (``HIVEMEM_KMMS_ROUND_SENTENCES``,
docs/kmms.md); and each L1/L2/L3 node.
Each vector carries the voice of its text (``governance/kmms/voice.py``: a user's question or statement, a
reply), the first stage's prior.
"""

from __future__ import annotations

from collections.abc import Sequence

from contracts.consumers import kmms_embedder_name
from contracts.kmms_records import KmmsEmbedding, KmmsEvent, decode_kmms, encode_kmms
from contracts.topics import TopicNames, key_partition
from governance.kmms.phrasing import embedding_text, fact_sentence
from governance.kmms.units import sentences_of, units_of, whole_round_id
from governance.kmms.voice import Voice, sentence_voice, unit_voice
from inference.embeddings import Embedder
from processors.embedder_base import StatelessEmbedder, embed_or_outage
from streams.records import LogRecord, OutRecord


def node_text(ev: KmmsEvent) -> str | None:
    n = ev.node
    if n is None:
        return None
    if n.layer == 2 and n.fact_key:  # a fact reads better as a sentence than as key=value
        return fact_sentence(n.entity, n.fact_key, n.fact_value or n.content)
    return n.content


class KmmsEmbedderProcessor(StatelessEmbedder):
    def __init__(self, names: TopicNames, embedder: Embedder, round_sentences: bool = False,
                 round_replies: bool = False, round_whole: bool = False) -> None:  # fmt: skip
        super().__init__(names, embedder, kmms_embedder_name(embedder.model_id))
        self.round_sentences = round_sentences
        self.round_replies = round_replies
        self.round_whole = round_whole

    def input_topics(self) -> list[str]:
        return [self.names.kmms_events]

    def process(self, records: Sequence[LogRecord], now_ms: int) -> list[OutRecord]:
        todo: list[tuple[LogRecord, KmmsEvent, str, str, Voice]] = []  # (record, event, unit id, text, voice)
        for rec in records:
            ev = decode_kmms(rec.value or b"", KmmsEvent)
            if ev.kind == "EPISODE_STORED" and ev.episode is not None:
                conversation = bool(ev.episode.turns)
                for u in units_of(ev.episode):
                    said = embedding_text(u.text)
                    user = any(line.startswith("user: ") for line in u.text.split("\n"))
                    voice = unit_voice(said, conversation=conversation, user_lines=user)
                    if self.round_replies:
                        todo.append((rec, ev, u.unit_id, embedding_text(u.text, replies=True), voice))
                    else:
                        todo.append((rec, ev, u.unit_id, said, voice))
                        whole = embedding_text(u.text, replies=True) if user and self.round_whole else said
                        if whole != said:  # a round with replies: its whole text too (``round_whole``)
                            todo.append((rec, ev, whole_round_id(u.unit_id), whole, voice))
                    # A document's sentences, and a user's (each with its own voice) if ``round_sentences``: on
                    # public conversations (LoCoMo, LongMemEval) they changed no ranking and were 70 % of the
                    # vectors, most of the time to searchable. A reply piece has its own vector only: its
                    # sentences changed no ranking on bench memory --shape long.
                    if (user and self.round_sentences) or not conversation:
                        todo += [(rec, ev, x.unit_id, x.text, sentence_voice(x.text) if user else "")
                                 for x in sentences_of(u.unit_id, said)]  # fmt: skip
            elif ev.kind == "NODE_CREATED" and ev.node is not None:
                text = node_text(ev)
                if text:
                    todo.append((rec, ev, ev.node.node_id, text, ""))
        if not todo:
            return []
        vectors = embed_or_outage(self.embedder, [t for _, _, _, t, _ in todo])
        outs = []
        model = self.embedder.model_id
        for (rec, ev, unit, _, voice), vec in zip(todo, vectors, strict=True):
            key = f"{ev.tenant}/{unit}|{model}".encode()
            out = KmmsEmbedding(unit_id=unit, tenant=ev.tenant, claw_id=ev.claw_id, scope=ev.scope, model=model,
                                vector=[float(x) for x in vec], source=str(rec.position), voice=voice)  # fmt: skip
            outs.append(OutRecord(self.names.kmms_embeddings, key_partition(key), key,
                                  encode_kmms(out)))  # fmt: skip
        return outs
