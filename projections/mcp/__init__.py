"""HiveMem over MCP: every tool is an HTTP API operation (``tools.py``), served over stdio or
streamable HTTP (``server.py``). See docs/mcp.md."""
