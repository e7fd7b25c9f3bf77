"""CAML's processors: observations through CAML's rules (``core``, state in ``store``) and
their embeddings (``embedder``)."""
