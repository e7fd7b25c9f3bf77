"""KMP's processor (``core``): process-memory ingest."""
