"""The messages an episode is told in (``POST /api/v1/memory/episodes``): OpenAI's chat message, as an agent has it.

A message is ``{role, content, name}``. ``content`` is a string or, as in OpenAI's chat format, a list of parts: the
``text`` parts are the message's text (joined by line breaks); an image, audio or file part is not text and is not
kept. An assistant's message that only calls tools (``content`` null, ``tool_calls``) and OpenAI's other fields of a
message (``tool_call_id``, ``function_call``, ``refusal``, ``audio``) are accepted and not kept: memory keeps what was
said. A message with no text is left out of the episode; one with nothing at all (no text, no other part, no call)
is refused, as is any key OpenAI's format does not have. ``developer`` is kept as a ``system`` message and
``function`` (OpenAI's older tool role) as a ``tool`` one.
"""

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from contracts.models import SpeakerName
from projections.http.limits import Clean

# The episode's roles for the roles a message may have.
ROLES = {"user": "user", "assistant": "assistant", "system": "system", "tool": "tool", "developer": "system",
         "function": "tool"}  # fmt: skip


class _Body(BaseModel):
    # strict: JSON types as declared, like the other routes' bodies; unknown keys refused.
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", strict=True)


class TextPart(_Body):
    type: Literal["text"]
    text: Annotated[str, Clean]


def _not_text(kind: str) -> str:
    if kind == "text":
        raise ValueError("a text part needs its 'text'")
    return kind


class OtherPart(BaseModel):
    """An image, audio or file part (``image_url``, ``input_audio``, ``file``, ...): not text, not kept."""

    model_config = ConfigDict(extra="allow", strict=True)
    type: Annotated[str, Field(min_length=1, max_length=64), AfterValidator(_not_text)]


class Message(_Body):
    role: Literal["user", "assistant", "system", "tool", "developer", "function"]
    content: Annotated[str, Clean] | list[TextPart | OtherPart] | None = None
    name: SpeakerName | None = Field(default=None, description=(
        "the speaker (a conversation between people): one line, at most 256 characters; the turn reads "
        "'role: name: content', so the name is embedded and indexed with its words"))  # fmt: skip
    # OpenAI's other fields of a message: accepted, not kept.
    tool_calls: list[Any] | None = None
    tool_call_id: str | None = None
    function_call: Any = None
    refusal: str | None = None
    audio: Any = None

    @model_validator(mode="after")
    def _says_something(self) -> "Message":
        parts = self.content if isinstance(self.content, list) else []
        others = any(isinstance(p, OtherPart) for p in parts) or self.tool_calls or self.refusal
        if not self.text() and not others and self.function_call is None and self.audio is None:
            raise ValueError("content: the message says nothing (give text, or OpenAI's tool_calls with null content)")
        return self

    def text(self) -> str:
        """What the message says: its content, or its text parts joined by line breaks ("" when it has none)."""
        if isinstance(self.content, list):
            return "\n".join(p.text for p in self.content if isinstance(p, TextPart) and p.text)
        return self.content or ""

    def turn(self) -> dict[str, str] | None:
        """The episode's turn (role, content, name) for the message; None for a message without text."""
        text = self.text()
        return {"role": ROLES[self.role], "content": text, "name": self.name or ""} if text else None
