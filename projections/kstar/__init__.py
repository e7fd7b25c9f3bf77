"""KSTAR's read side: its read model (``read_model``), migrations, queries, export and import
(``io``) and sync (``sync``)."""
