"""How long an episode may be: its characters decide, not one message's length nor the count of its messages.

Over 262,144 characters (the turns' lines joined, or the content) is 422 ``INVALID_FIELD``, whether one message,
many or a content is too long; a long chat of many short messages is one episode, and one message may run past the
65,536 characters of other texts (a pasted document), as the wire contract allows."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from contracts.models import MAX_EPISODE, MAX_TEXT, MAX_TURNS, EpisodePayload, ProposalPayload
from contracts.topics import TopicNames
from governance.identity import TenantPolicy
from projections.api import create_app
from projections.auth import mint_token
from projections.http.context import ApiDeps
from projections.http.kmms import AddIn


def app_client(secrets: dict[str, bytes]) -> TestClient:
    """The API with no database nor publisher: what these tests check is refused before either is reached."""
    deps = ApiDeps(app_db_url="postgresql://unused@127.0.0.1:1/none", token_secret=b"x" * 32,
                   tenants={"acme": TenantPolicy("acme", secrets)}, names=TopicNames(), publisher=None,  # type: ignore[arg-type]
                   kafka_ok=lambda: False, projection_lag=dict, watermarks=lambda _: {},
                   projection_topics={})  # fmt: skip
    return TestClient(create_app(deps))


@pytest.fixture(scope="module")
def client() -> TestClient:
    return app_client({})


def add(client: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    token = mint_token(b"x" * 32, "acme", "s", "claw-1")
    answer = client.post("/api/v1/memory/episodes", json=body, headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 422
    return dict(answer.json())


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


@pytest.mark.parametrize("body", [
    {"messages": [user("x" * (MAX_EPISODE + 1))]},  # one message (a pasted document) too long
    {"messages": [user("a"), user("y" * (MAX_EPISODE - 10))]},  # the lines joined too long: "user: " counts
    {"messages": [user("word " * 20)] * 2_700},  # many short messages
    {"content": "z" * (MAX_EPISODE + 1)},  # a note
], ids=["one-message", "joined", "many-messages", "content"])  # fmt: skip
def test_an_episode_over_its_characters_is_refused_with_one_code(client: TestClient, body: dict[str, Any]) -> None:
    refusal = add(client, body)
    assert refusal["code"] == "INVALID_FIELD"
    assert f"longer than {MAX_EPISODE} characters" in refusal["detail"]
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
    assert MAX_TURNS * (len(shortest) + 1) - 1 <= MAX_EPISODE < (MAX_TURNS + 1) * (len(shortest) + 1) - 1


def test_a_pasted_document_past_other_texts_limit_is_one_valid_episode() -> None:
    paste = "log line 42: request served in 12 ms\n" * 2_200  # 81,400 characters: over MAX_TEXT, under MAX_EPISODE
    assert MAX_TEXT < len(paste) < MAX_EPISODE
    body = AddIn.model_validate({"messages": [user(paste), user("That was the outage log.")]})
    assert body.messages is not None and body.messages[0].content == paste
    wire = {"episodeId": "ep-1", "about": "memory:c/u", "content": f"user: {paste}", "occurredAt": 1,
            "contentType": "CONVERSATION", "turns": [{"role": "user", "content": paste}]}  # fmt: skip
    assert EpisodePayload.model_validate(wire).turns[0].content == paste
    with pytest.raises(ValueError, match="at most 262144 characters"):
        EpisodePayload.model_validate({**wire, "content": "x" * (MAX_EPISODE + 1)})


def test_other_texts_keep_their_own_bound() -> None:
    with pytest.raises(ValueError, match="at most 65536 characters"):
        ProposalPayload.model_validate({"proposalId": "p-1", "statement": "x" * (MAX_TEXT + 1)})


def test_an_episode_whose_envelope_outgrows_a_kafka_record_is_413_with_its_size() -> None:
    # Under MAX_EPISODE characters, but 3 bytes each and carried twice (the turns and their lines joined): the
    # gateway measures the signed envelope (so the tenant needs a key) before anything is published.
    token = mint_token(b"x" * 32, "acme", "s", "claw-1")
    body = {"messages": [user("记忆" * 80_000)]}
    answer = app_client({"op": b"k" * 32}).post("/api/v1/memory/episodes", json=body,
                                                headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    assert (answer.status_code, answer.json()["code"]) == (413, "PAYLOAD_TOO_LARGE")
    assert "at most 900000" in answer.json()["detail"]
