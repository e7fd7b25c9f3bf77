"""Row-level security: a request for tenant X reads only X's rows, whatever the SQL says."""

import uuid

import psycopg
import pytest

from hivemem.stack import Stack
from tests.helpers import episode
from tests.integration.support import client, http

pytestmark = pytest.mark.integration


def test_cross_tenant_reads_return_nothing(stack: Stack) -> None:
    trace = f"t-{uuid.uuid4()}"
    client(stack, tenant="acme").publish("episode", episode(), trace_id=trace)
    tok = client(stack, tenant="globex").publish("episode", episode(), trace_id=trace)
    with http(stack, "globex") as h:
        rows = h.get("/api/v1/audit", params={"traceId": trace, "consistency": str(tok)}).json()
        assert [r["type"] for r in rows] == ["episode"]  # globex sees its own row only
    with http(stack, "acme") as h:
        # acme cannot use globex's write as a consistency token: refused like a malformed one.
        r = h.get("/api/v1/audit", params={"traceId": trace, "consistency": str(tok), "wait_ms": 300})
        assert (r.status_code, r.json()["code"]) == (422, "INVALID_CONSISTENCY_TOKEN")
        assert len(h.get("/api/v1/audit", params={"traceId": trace}).json()) == 1

    settings = stack.settings
    app_url = settings.app_database_url(settings.load_config())
    with psycopg.connect(app_url, autocommit=True) as conn:
        with conn.transaction():
            conn.execute("SELECT set_config('hivemem.tenant', 'acme', true)")
            # No WHERE on tenant at all: the database still filters.
            tenants = {r[0] for r in conn.execute("SELECT tenant FROM audit.events").fetchall()}
            assert tenants == {"acme"}
            assert {r[0] for r in conn.execute("SELECT tenant FROM claws.claws").fetchall()} <= {"acme"}
        with conn.transaction():  # no tenant set: no rows
            assert conn.execute("SELECT count(*) FROM audit.events").fetchone() == (0,)
        role = conn.execute("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user").fetchone()
        assert role == (False, False)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("INSERT INTO audit.events (tenant) VALUES ('acme')")
