"""The HTTP API, one module per area: ``app`` (assembly), ``context`` (shared dependencies),
``errors`` (the one error shape), ``limits`` (body cap, parameter bounds), ``server`` (the
HTTP/1.1 protocol's own errors), and the routers ``health``, ``envelopes``, ``claws``,
``votes``, and one per feature (``caml``, ``kmms``, ``kmp``, ``kstar``, ``clam``)."""
