"""HiveMem over MCP: every tool is an HTTP API operation (``tools.py``), a call is that request
(``bridge.py``), served by the SDK's server (``server.py``) over stdio (``stdio.py``, ``hivemem mcp``)
or streamable HTTP (``http_mount.py``, ``/mcp`` on the API). See docs/mcp.md."""
