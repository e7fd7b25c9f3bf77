"""How long an episode may be: its characters decide, not one message's length nor the count of its messages.

Over 65,536 characters (the turns' lines joined, or the content) is 422 ``INVALID_FIELD``, whether one message, many
or a content is too long; a long chat of many short messages is one episode, as the wire contract allows."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from contracts.models import MAX_TEXT, MAX_TURNS, EpisodePayload
from contracts.topics import TopicNames
from governance.identity import TenantPolicy
from projections.api import create_app
from projections.auth import mint_token
from projections.http.context import ApiDeps
from projections.http.kmms import AddIn


@pytest.fixture(scope="module")
def client() -> TestClient:
    deps = ApiDeps(app_db_url="postgresql://unused@127.0.0.1:1/none", token_secret=b"x" * 32,
                   tenants={"acme": TenantPolicy("acme", {})}, names=TopicNames(), publisher=None,  # type: ignore[arg-type]
                   kafka_ok=lambda: False, projection_lag=dict, watermarks=lambda _: {},
                   projection_topics={})  # fmt: skip
    return TestClient(create_app(deps))


def add(client: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    token = mint_token(b"x" * 32, "acme", "s", "claw-1")
    answer = client.post("/api/v1/memory/episodes", json=body, headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 422
    return dict(answer.json())


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


@pytest.mark.parametrize("body", [
    {"messages": [user("x" * (MAX_TEXT + 1))]},  # one message (a pasted document) too long
    {"messages": [user("a"), user("y" * (MAX_TEXT - 10))]},  # the lines joined too long: "user: " counts
    {"messages": [user("word " * 20)] * 700},  # many short messages
    {"content": "z" * (MAX_TEXT + 1)},  # a note
], ids=["one-message", "joined", "many-messages", "content"])  # fmt: skip
def test_an_episode_over_its_characters_is_refused_with_one_code(client: TestClient, body: dict[str, Any]) -> None:
    refusal = add(client, body)
    assert refusal["code"] == "INVALID_FIELD"
    assert f"longer than {MAX_TEXT} characters" in refusal["detail"]
    assert "xxxx" not in refusal["detail"] and "word" not in refusal["detail"]  # the value is never echoed


def test_an_empty_conversation_is_refused_with_a_reason(client: TestClient) -> None:
    assert add(client, {"messages": []}) == {"code": "INVALID_FIELD",
                                             "detail": "messages is empty: give at least one message"}  # fmt: skip


def test_a_long_chat_of_short_messages_is_one_episode() -> None:
    turns = [{"role": "user" if i % 2 else "assistant", "content": f"message {i}"} for i in range(300)]
    body = AddIn.model_validate({"messages": turns})
    assert body.messages is not None and len(body.messages) == 300
    wire = {"episodeId": "ep-1", "about": "memory:c/u", "content": "-", "occurredAt": 1, "turns": turns}
    payload = EpisodePayload.model_validate({**wire, "contentType": "CONVERSATION"})
    assert len(payload.turns) == 300


def test_the_turn_count_never_refuses_what_the_characters_allow() -> None:
    shortest = "user: x"  # a turn's line; lines are joined by a line break
    assert MAX_TURNS * (len(shortest) + 1) - 1 <= MAX_TEXT < (MAX_TURNS + 1) * (len(shortest) + 1) - 1
