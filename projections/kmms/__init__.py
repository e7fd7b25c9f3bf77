"""KMMS's read side: its read model (``read_model``, ``events``), migrations, queries, the
search (``search``, ``sql``, ``rerank``, ``drill``, ``context``, ``own_similarity``), its settings
(``config``), erasures and the embedding model switch (``model_switch``)."""
