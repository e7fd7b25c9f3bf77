"""Composition root: the ``hivemem`` CLI, settings and the wiring of processes. No domain logic; never imports
``bench`` (``hivemem bench`` finds the benchmarks by name)."""
