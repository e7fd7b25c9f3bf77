"""Read models: Postgres schema and migrations, projectors, queries, the HTTP API."""
