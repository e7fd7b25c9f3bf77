"""CAML's read side: its read model (``read_model``), migrations, queries, metrics and the
audit log's Merkle roots (``audit_roots``)."""
