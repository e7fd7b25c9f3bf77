"""Structured output from an OpenAI-compatible ``POST /v1/chat/completions`` (vLLM, llama.cpp, Ollama, a model
proxy...): the one client the LLM back-ends share (the KMMS consolidator, the CLAM perceiver, critic and
renderer).

Every call asks for one JSON object in the answer's JSON schema, as structured output: first OpenAI's
``response_format: {type: json_schema}``, then (a server that answers 400/422 to a form is asked in the next
one from then on) ``{type: json_object, schema}`` (llama.cpp's server, Anyscale), plain ``json_object``, and
finally no ``response_format``. The answer is validated with Pydantic, then by the caller's ``check``. The
first JSON object in the message is taken (code fences and chatter around it are tolerated). A malformed or
invalid answer is REFUSED: the request is repeated, up to ``max_retries`` (2) more times, with the model's
answer and the validation error appended to the conversation; after that the back-end's error class is
raised — never a silent accept. Transport failures (connection, timeout, non-2xx) are retried the same way;
when every attempt found the server down or busy (connection refused or not made in time, 502, 503, 504, 408,
429), the back-end's ``UNAVAILABLE`` class is raised instead (a subclass of its ``ERROR``): an outage a
processor may wait out. A 500 or an answer that does not come in time may be the request's own doing (a
prompt too long for the model or its timeout), so they stay errors of the step.

Data goes to the model as JSON and the system prompt says it is data, not instructions. An org's custom
instructions (``prompt_prefix``) are put before the system prompt. Nothing here logs the data or the model's
answers; failures are logged by kind only.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from inference.pii_llm import chat_endpoint

# The model asked for when HIVEMEM_LLM_MODEL is unset (KMMS's consolidator and CLAM's LLM).
DEFAULT_LLM_MODEL = "smollm2"

log = logging.getLogger(__name__)

RETRY_ECHO_CHARS = 1_200  # how much of a refused answer a retry shows the model
RESPONSE_FORMATS = ("json_schema", "json_object_schema", "json_object", "none")  # tried in this order
_FENCE = re.compile(r"```(?:json)?", re.IGNORECASE)
_BOUNDS = frozenset({"maxLength", "minLength", "maxItems", "minItems"})
T = TypeVar("T", bound=BaseModel)


class LlmError(RuntimeError):
    """No valid answer after every attempt (or the server could not be reached)."""


class LlmUnavailable(LlmError):
    """Every attempt found the server down or busy: not the question's fault."""


class _Busy(Exception):
    """The server answered "not now" (``BUSY``)."""


BUSY = frozenset({502, 503, 504, 408, 429})
# Down: refused, or no connection in time (an answer that does not come in time may be the request's doing).
_DOWN = (_Busy, httpx.ConnectError, httpx.ConnectTimeout)


def first_json_object(content: str) -> Any:
    """The first JSON object in a message: the whole message, or one inside fences or chatter."""
    text = _FENCE.sub("", content).strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    decoder = json.JSONDecoder()
    for m in re.finditer(r"\{", text):
        try:
            obj, _ = decoder.raw_decode(text, m.start())
        except ValueError:
            continue
        if isinstance(obj, dict):
            return obj
    raise ValueError("no JSON object in the answer")


def loose_schema(schema: Any) -> Any:
    """The answer's JSON schema without length bounds: a grammar-constrained server (llama.cpp) unrolls
    them into a grammar too big to parse (and crashes); the bounds are checked on the answer anyway."""
    if isinstance(schema, dict):
        return {k: loose_schema(v) for k, v in schema.items() if k not in _BOUNDS}
    if isinstance(schema, list):
        return [loose_schema(x) for x in schema]
    return schema


class StructuredChat:
    """Validated JSON answers from a chat-completions server. Thread-safe. Subclasses set ``SYSTEM`` (the
    system prompt), ``LABEL`` (for logs), ``ERROR`` (what ``ask`` raises when every attempt failed) and
    ``UNAVAILABLE`` (what it raises when every attempt found the server down or busy)."""

    SYSTEM: ClassVar[str] = "Answer with exactly one JSON object in the shape asked for, and nothing else."
    LABEL: ClassVar[str] = "llm"
    ERROR: ClassVar[type[Exception]] = LlmError
    UNAVAILABLE: ClassVar[type[Exception]] = LlmUnavailable

    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout_s: float = 30.0,
                 prompt_prefix: str | None = None, max_retries: int = 2,
                 client: httpx.Client | None = None) -> None:  # fmt: skip
        if timeout_s <= 0:
            raise ValueError("timeout_s must be > 0")
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.model = model
        self.model_id = f"llm:{model}"
        self.endpoint = chat_endpoint(base_url)
        self.timeout_s = timeout_s
        self.prompt_prefix = prompt_prefix
        self.max_retries = max_retries
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = client or httpx.Client(timeout=timeout_s, headers=headers)
        self._owns_client = client is None
        self._format = 0  # index in RESPONSE_FORMATS; moves on for good once the server refuses a form
        self._lock = threading.Lock()
        self.refusals = 0  # answers refused (malformed, invalid, transport failure), for metrics

    def __repr__(self) -> str:  # never show the key
        return f"{type(self).__name__}(endpoint={self.endpoint!r}, model={self.model!r})"

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    def _system(self) -> str:
        return f"{self.prompt_prefix.strip()}\n\n{self.SYSTEM}" if self.prompt_prefix else self.SYSTEM

    def _post(self, messages: list[dict[str, str]], shape: type[BaseModel]) -> str:
        schema = loose_schema(shape.model_json_schema())
        while True:  # a form the server refuses (400/422) is not an attempt: ask again in the next form
            level = self._format
            form = RESPONSE_FORMATS[level]
            body: dict[str, Any] = {"model": self.model, "temperature": 0, "messages": messages}
            if form == "json_schema":
                body["response_format"] = {"type": "json_schema",
                                           "json_schema": {"name": shape.__name__, "schema": schema}}  # fmt: skip
            elif form == "json_object_schema":
                body["response_format"] = {"type": "json_object", "schema": schema}
            elif form == "json_object":
                body["response_format"] = {"type": "json_object"}
            resp = self._client.post(self.endpoint, json=body, timeout=self.timeout_s)
            # llama-cpp-python answers an unknown form with a 500 that names the field.
            refused = resp.status_code in (400, 422) or (resp.status_code == 500 and "response_format" in resp.text)
            if refused and form != "none":
                log.info("%s: HTTP %d with response_format %s; asking in the next form", self.LABEL,
                         resp.status_code, form)  # fmt: skip
                with self._lock:
                    self._format = max(self._format, level + 1)
                continue
            if resp.status_code in BUSY:
                raise _Busy(f"HTTP {resp.status_code}: {resp.text[:200]}")
            if resp.status_code != 200:
                raise ValueError(f"HTTP {resp.status_code}: {resp.text[:200]}")
            content = resp.json()["choices"][0]["message"]["content"]
            if not isinstance(content, str):
                raise ValueError("the message content is not a string")
            return content

    def ask(self, task: str, instructions: str, data: Mapping[str, Any], shape: type[T],
            check: Callable[[T], None] | None = None) -> T:  # fmt: skip
        """One validated answer of ``shape`` (and passing ``check``, which raises ValueError to refuse it)."""
        prompt = instructions + "\n\nDATA (JSON):\n" + json.dumps(data, ensure_ascii=False)
        first = [{"role": "system", "content": self._system()}, {"role": "user", "content": prompt}]
        messages = first
        error = "no attempt"
        down = True  # every attempt so far found the server down or busy
        for _ in range(1 + self.max_retries):
            try:
                content = self._post(messages, shape)
            except (httpx.HTTPError, _Busy, ValueError, KeyError, IndexError, TypeError) as e:
                down = down and isinstance(e, _DOWN)
                error = f"transport: {type(e).__name__}: {e}"[:300]
                log.warning("%s %s: %s", self.LABEL, task, type(e).__name__)
                with self._lock:
                    self.refusals += 1
                continue
            down = False
            try:
                answer = shape.model_validate(first_json_object(content))
                if check is not None:
                    check(answer)
                return answer
            except (ValueError, ValidationError) as e:
                error = str(e)[:1500]
                log.warning("%s %s: refused a malformed answer", self.LABEL, task)
                with self._lock:
                    self.refusals += 1
                retry = (
                    f"Your answer was refused: {error[:400]}\n"
                    "Answer again with only the JSON object, in exactly the shape."
                )
                # Only the last refused answer, cut short: a growing transcript would overflow a small context.
                messages = [*first, {"role": "assistant", "content": content[:RETRY_ECHO_CHARS]},
                            {"role": "user", "content": retry}]  # fmt: skip
        if down:
            raise self.UNAVAILABLE(f"{task}: the server was down or busy on {1 + self.max_retries} attempts ({error})")
        raise self.ERROR(f"{task}: no valid answer after {1 + self.max_retries} attempts ({error})")
