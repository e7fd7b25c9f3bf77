"""The gate on the stream runtime (``core``) and its state in Postgres: replay and idempotency
claims (``claim_store``), claw keys (``key_store``), run-time suspensions (``suspension_store``)."""
