"""Fixtures shared by the unit tests."""

from tests.chat_server import server

__all__ = ["server"]  # the canned chat server, for the LLM clients' tests
