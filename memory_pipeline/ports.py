"""The default ports on 127.0.0.1: the memory service (which the pi extension, MCP clients and the CLI ask) and
the Dagster UI. One place, read by the CLI's options, the supervisor and the service client."""

SERVICE_PORT = 8765
UI_PORT = 3000
