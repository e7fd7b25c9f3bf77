"""Helpers for the KMMS integration tests: one memory client per (tenant, claw, user)."""

from __future__ import annotations

import uuid

from hivemem.stack import Stack
from producers.memory_client import MemoryClient
from projections.auth import mint_token


def memory(stack: Stack, tenant: str, claw: str | None = None, user_id: str = "") -> MemoryClient:
    token = mint_token(stack.settings.load_config().token_secret, tenant, "test", claw or f"m-{uuid.uuid4().hex[:6]}")
    return MemoryClient(stack.api_url, token, user_id=user_id, timeout_s=60)


def chat(user: str, reply: str = "Noted, thanks for telling me.") -> list[dict[str, str]]:
    return [{"role": "user", "content": user}, {"role": "assistant", "content": reply}]


def tell(mem: MemoryClient, history: list[tuple[str, str]]) -> list[str]:
    """Each (day, what the user said) of ``history`` as a session of its own, ``s-<i>`` at 09:00 that day; the
    episode ids."""
    return [mem.add(chat(text), session_id=f"s-{i}", occurred_at=f"{day}T09:00:00Z").episode_id
            for i, (day, text) in enumerate(history)]  # fmt: skip
