"""CLAM's read side: its read model (``read_model``), migrations and queries."""
