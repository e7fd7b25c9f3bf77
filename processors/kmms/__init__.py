"""KMMS's processors: episodes into memory (``core``), their vectors (``embedder``), enrichment
(``enricher``) and consolidation (``consolidator``)."""
