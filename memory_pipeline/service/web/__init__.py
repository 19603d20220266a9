"""The memory browser: server-rendered pages (Jinja2 + htmx, vendored; no build step) over the same search,
review and correction code as the CLI and the API, mounted by the memory service."""
