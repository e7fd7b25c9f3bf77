"""The KMMS enricher (seed 000 §2.4): stored episodes in, ``EPISODE_ENRICHED`` out — entities,
topics and the primary (entity, topic) the L4 node is tagged with. Asynchronous, after the write;
its output is data on the log, so a replay never runs the NER model again. The read model adds the
new entities and topics to the L0 availability index; the consolidator groups episodes by them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from contracts.kmms_records import KmmsEnrichment, KmmsEntity, KmmsEpisode, KmmsEvent, decode_kmms
from contracts.topics import TopicNames
from governance.kmms.values import Enrichment
from processors.kmms.core import kmms_event_id, kmms_out
from streams.offsets import Conn
from streams.processor import Failure
from streams.records import LogRecord, OutRecord

NAME = "kmms-enricher"


class Enricher(Protocol):
    def enrich_many(self, texts: Sequence[str]) -> list[Enrichment]: ...


def owner_text(episode: KmmsEpisode) -> str:
    """What an episode's entities and topics are read from: the user's turns of a conversation (what the memory's
    owner told of their life; the assistant's long replies name everything a topic holds, and cost most of the
    NER's time), a document's or a note's whole content."""
    said = [t.content for t in episode.turns if t.role == "user"]
    return "\n".join(said) if said else episode.content


def enricher_model(enricher: Enricher) -> str:
    return str(getattr(enricher, "model_id", type(enricher).__name__))


class KmmsEnricherProcessor:
    # No state: a record's outputs depend on it alone, so its partitions may be split over instances
    # (streams.group, HIVEMEM_INSTANCE), and with them the model's work.
    parallel = True
    name = NAME

    def __init__(self, names: TopicNames, enricher: Enricher) -> None:
        self.names = names
        self.enricher = enricher

    def input_topics(self) -> list[str]:
        return [self.names.kmms_events]

    def open(self, conn: Conn) -> None:
        pass  # stateless

    def process(self, records: Sequence[LogRecord], now_ms: int) -> list[OutRecord]:
        events = [(rec, decode_kmms(rec.value or b"", KmmsEvent)) for rec in records]
        todo = [(rec, ev) for rec, ev in events if ev.kind == "EPISODE_STORED" and ev.episode]
        if not todo:
            return []
        found = self.enricher.enrich_many([owner_text(ev.episode) for _, ev in todo if ev.episode])
        model = enricher_model(self.enricher)
        outs = []
        for (rec, ev), e in zip(todo, found, strict=True):
            assert ev.episode is not None
            enrichment = KmmsEnrichment(
                episode_id=ev.episode.episode_id, primary_entity=e.primary_entity, primary_topic=e.primary_topic,
                entities=[KmmsEntity(name=x.name, kind=x.kind, score=round(x.score, 4)) for x in e.entities],
                topics=list(e.topics), model=model)  # fmt: skip
            source = str(rec.position)
            out = KmmsEvent(event_id=kmms_event_id(source, "enriched"), kind="EPISODE_ENRICHED", tenant=ev.tenant,
                            claw_id=ev.claw_id, scope=ev.scope, at=ev.at, source=source, trace_id=ev.trace_id,
                            enrichment=enrichment)  # fmt: skip
            outs.append(kmms_out(self.names, out))
        return outs

    def refuse(self, failure: Failure) -> list[OutRecord]:
        return []  # in processing_failures; the episode stays searchable, only unconsolidated
