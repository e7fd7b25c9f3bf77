"""The clam processor run by its driver (no broker, no database): seed only into an empty graph, a fact
dual-written, a claim promoted after two critiques that it withstands, an unconfirmed claim forgotten
after the decay time of the log's clock, and one event at least for every operation."""

from __future__ import annotations

import json
from typing import Any

from contracts.avro import encode_envelope
from contracts.clam_records import decode_clam
from contracts.topics import TopicNames
from governance.clam.config import ClamConfig
from processors.clam.core import ClamDriver
from tests.helpers import offline_client

T0 = 1_795_000_000_000


class Mind:
    def __init__(self) -> None:
        self.driver = ClamDriver(TopicNames(), ClamConfig(decay_time_ms=3_000))
        self.client = offline_client("acme", "c1")
        self.n = 0

    def op(self, at: int, op: str, **kw: Any) -> list[tuple[str, dict[str, Any]]]:
        self.n += 1
        env = self.client.build("clam", {"opId": f"o{self.n}", "op": op, **kw})
        outs = self.driver.pipe(encode_envelope(env), T0 + at)
        assert outs and all(o.topic == TopicNames().clam_events for o in outs)
        return [(e.kind, json.loads(e.data)) for e in (decode_clam(o.value) for o in outs)]


def kinds(events: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [k for k, _ in events]


def test_the_learning_loop_on_the_logs_clock() -> None:
    m = Mind()
    truths = [{"subject": "User", "predicate": "is_named", "object": "Marcello"}]
    seeded = m.op(0, "SEED", truths=truths)
    assert kinds(seeded) == ["SEEDED"] and seeded[0][1]["triples"][0]["predicate"] == "has_name"
    assert kinds(m.op(1, "SEED", truths=truths)) == ["NOTHING"]
    assert kinds(m.op(2, "PERCEIVE", prompt="I use an ESP32 for the sensors.", response="")) == ["FACT_STORED"]
    assert kinds(m.op(3, "PERCEIVE", prompt="The server IP is 192.168.1.10.", response="")) == ["NODE_CREATED"]
    first = m.op(4, "PERCEIVE", prompt="Can you ping the server at 192.168.1.10?", response="")
    assert kinds(first) == ["CRITIQUED"] and first[0][1]["confidence_score"] == 2
    second = m.op(5, "PERCEIVE", prompt="Is the server IP still 192.168.1.10?", response="")
    assert kinds(second) == ["CRITIQUED", "PROMOTED"] and second[1][1]["collection"] == "semantic"
    assert kinds(m.op(6, "PERCEIVE", prompt="My favourite editor might be vim.", response="")) == ["NODE_CREATED"]
    assert kinds(m.op(6 + 3_000, "TICK")) == ["NOTHING"]  # idle exactly the decay time: kept
    assert kinds(m.op(6 + 3_001, "TICK")) == ["DECAYED"]


def test_a_disabled_critic_leaves_scores_alone() -> None:
    m = Mind()
    m.driver.processor.config = ClamConfig(critic_enabled=False)
    m.op(0, "PERCEIVE", prompt="The server IP is 192.168.1.10.", response="")
    assert kinds(m.op(1, "PERCEIVE", prompt="Is the server IP 192.168.1.10?", response="")) == ["NOTHING"]
