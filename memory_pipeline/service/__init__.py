"""The local memory service: one process on 127.0.0.1 that the pi extension, MCP clients and the browser use.

`app.create_app(settings)` gives a FastAPI app: the JSON API under `/api/v1`, the MCP server (streamable HTTP)
at `/mcp`, OpenAPI docs at `/docs`. The search clients are opened once, in the lifespan, so a call costs a
query, not a process start. `client` is how the CLI asks it (nothing else imported: the CLI stays fast).
"""
