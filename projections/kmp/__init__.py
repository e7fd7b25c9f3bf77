"""KMP's read side: its read model (``read_model``), migrations, queries and views."""
