"""CAML (collective agent memory) rules, pure: the observation taxonomy and its Table-4 gates, typed
patterns, author reputation, the recall composite score, per-tenant rate limits and the RFC 6962
Merkle tree over the audit log. No I/O and no clock: every time is a broker log time passed in (ms)."""
