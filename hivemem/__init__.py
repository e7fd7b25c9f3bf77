"""Composition root: the ``hivemem`` CLI, settings and the wiring of processes. No domain logic."""
