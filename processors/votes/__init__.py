"""The votes processor on the stream runtime (``core``): proposals, votes, decisions and
facts, its state in Postgres (``store``)."""
