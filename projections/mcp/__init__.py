"""HiveMem over MCP: every tool is an HTTP API operation (``tools.py``; KSTAR's ``kstar_tools.py``), a
call is that request (``bridge.py``), served by the SDK's server (``server.py``) over stdio (``stdio.py``,
``hivemem mcp [--server kstar]``) or streamable HTTP (``http_mount.py``, ``/mcp`` and ``/mcp/kstar`` on the
API). See docs/mcp.md."""
