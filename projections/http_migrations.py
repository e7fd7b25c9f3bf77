"""SQL the HTTP edge needs, registered by ``projections/migrations.py`` as migration 10.

``hivemem.token_audited(topic, partition, offset)``: whether the inbound record at that
position has been audited, and for whom, as the API may learn it. The API's role reads
``audit.events`` under row-level security and so cannot tell "not audited yet" (wait) from
"audited for another tenant" (refuse: the token is not the caller's); this function can,
and says only: NULL (no audit row yet), true (the row is the transaction's tenant's, the
``hivemem.tenant`` setting RLS uses too), false (it is someone else's). It never says whose.
"""

from __future__ import annotations

from projections.read_models import APP_ROLE

HTTP_MIGRATION_10: list[str] = [
    """CREATE FUNCTION hivemem.token_audited(p_topic text, p_partition int, p_offset bigint) RETURNS boolean
       LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog AS
       $$ SELECT coalesce(e.tenant = current_setting('hivemem.tenant', true), false) FROM audit.events e
          WHERE e.source_topic = p_topic AND e.source_partition = p_partition AND e.source_offset = p_offset $$""",
    "REVOKE ALL ON FUNCTION hivemem.token_audited(text, int, bigint) FROM PUBLIC",
    f"GRANT EXECUTE ON FUNCTION hivemem.token_audited(text, int, bigint) TO {APP_ROLE}",
]
