"""The one stream runtime every processor, projector and replay runs on.

A plain confluent-kafka batch loop whose input offsets, effects and outputs (an outbox)
are stored in Postgres in one transaction; see ``streams.runtime`` for the commit protocol.
Imports nothing of ours but ``contracts``.
"""
