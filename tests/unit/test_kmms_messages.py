"""An episode's messages as OpenAI's chat format has them (``projections.http.kmms_messages``): text kept, tool calls,
images and audio accepted and not kept, a message that says nothing and any unknown key refused."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from contracts.kmms_views import MESSAGE_KEYS
from projections.http.kmms import AddIn
from projections.http.kmms_messages import Message

CALL = [{"id": "call_1", "type": "function", "function": {"name": "book", "arguments": '{"city": "Lisbon"}'}}]


def turn(m: dict[str, Any]) -> dict[str, str] | None:
    return Message.model_validate(m).turn()


def test_a_string_content_is_the_turn() -> None:
    assert turn({"role": "user", "content": "I moved to Porto.", "name": "Ana"}) == {
        "role": "user", "content": "I moved to Porto.", "name": "Ana"}  # fmt: skip


def test_text_parts_are_the_text_and_other_parts_are_not_kept() -> None:
    parts = [{"type": "text", "text": "Look at my cat."}, {"type": "image_url", "image_url": {"url": "https://x/c.png"}},
             {"type": "text", "text": "She is called Miso."}]  # fmt: skip
    said = "Look at my cat.\nShe is called Miso."
    assert turn({"role": "user", "content": parts}) == {"role": "user", "content": said, "name": ""}
    assert turn({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x/c.png"}}]}) is None


def test_a_tool_call_is_accepted_and_not_kept_and_its_result_is_a_tool_turn() -> None:
    assert turn({"role": "assistant", "content": None, "tool_calls": CALL}) is None
    assert turn({"role": "tool", "tool_call_id": "call_1", "content": "Booked: Lisbon, 3 nights."}) == {
        "role": "tool", "content": "Booked: Lisbon, 3 nights.", "name": ""}  # fmt: skip
    assert turn({"role": "function", "name": "book", "content": "ok"}) == {"role": "tool", "content": "ok",
                                                                          "name": "book"}  # fmt: skip
    assert turn({"role": "developer", "content": "Be brief."}) == {"role": "system", "content": "Be brief.", "name": ""}


@pytest.mark.parametrize("bad", [
    {"role": "user"},  # no content and no call: says nothing
    {"role": "user", "content": ""},
    {"role": "user", "content": []},
    {"role": "user", "content": [{"type": "text"}]},  # a text part without its text
    {"role": "user", "content": [{"text": "hi"}]},  # a part without a type
    {"role": "user", "content": "hi", "reasoning": "..."},  # not a key of OpenAI's message
    {"role": "robot", "content": "hi"},
    {"role": "user", "content": 5},
])  # fmt: skip
def test_a_message_that_says_nothing_or_is_not_openais_is_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Message.model_validate(bad)


def test_a_chat_history_as_an_agent_has_it_is_a_valid_body() -> None:
    body = AddIn.model_validate({"messages": [
        {"role": "system", "content": "You are a travel agent."},
        {"role": "user", "content": [{"type": "text", "text": "Book me Lisbon for May."}]},
        {"role": "assistant", "content": None, "tool_calls": CALL, "refusal": None},
        {"role": "tool", "tool_call_id": "call_1", "content": "Booked: Lisbon, 3 nights."},
        {"role": "assistant", "content": "Done: three nights in Lisbon."},
    ], "userId": "u-1"})  # fmt: skip
    assert body.messages is not None
    assert [t["role"] for m in body.messages if (t := m.turn())] == ["system", "user", "tool", "assistant"]


def test_the_keys_the_sdk_sends_are_the_messages_fields() -> None:
    # contracts.kmms_views.MESSAGE_KEYS is what the SDK sends of a message; a field added to Message and not there
    # would never reach the API from the SDK, and a key there that Message lacks would be refused.
    assert set(MESSAGE_KEYS) == set(Message.model_fields)
