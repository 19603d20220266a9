"""The MCP server: the same three layers as tools, for Claude Code and any other MCP client.

A tool's return type is its schema (structured content); a tool that cannot answer raises `ToolError`,
which the SDK turns into an error result carrying the reason (any other exception stays a crash on this
side, with a generic message to the client).
"""

from __future__ import annotations

from collections.abc import Callable

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from memory_pipeline.search.engine import Filters, MemorySearch
from memory_pipeline.service.models import Memories, MemoryDetail, MemoryDetails

INSTRUCTIONS = (
    "Persistent memory of earlier coding-agent sessions. memory_search finds memories (ids are citations), "
    "memory_timeline shows what happened around one, memory_show gives a memory with the turn it came from."
)


def build_mcp(get_search: Callable[[], MemorySearch]) -> MCPServer:
    mcp = MCPServer(name="memory-pipeline", instructions=INSTRUCTIONS)

    @mcp.tool()
    def memory_search(query: str, k: int = 10, project: str | None = None) -> Memories:
        """Memories about `query`, best first (hybrid BM25 + embeddings); `project` narrows to one project."""
        if not query.strip():
            raise ToolError("query is empty")
        return Memories.of(get_search().index(query, k=max(1, min(k, 50)), filters=Filters(project=project)))

    @mcp.tool()
    def memory_timeline(anchor: str, window: int = 5, project: str | None = None) -> Memories:
        """The memories before and after `anchor` (a memory id, or a query whose best match anchors)."""
        return Memories.of(get_search().timeline(anchor, window=max(1, min(window, 20)), filters=Filters(project)))

    @mcp.tool()
    def memory_show(ids: list[str]) -> MemoryDetails:
        """The full memories with these ids, each with the messages of the turn it came from."""
        records = [MemoryDetail.of_record(r) for r in get_search().detail(ids)]
        missing = sorted(set(ids) - {r.id for r in records})
        if missing:
            raise ToolError(f"no memory with id {', '.join(missing)}")
        return MemoryDetails(data=records, count=len(records))

    return mcp
