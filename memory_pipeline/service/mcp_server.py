"""The MCP server: the memory tools for Claude Code and any other MCP client.

A tool's return type is its schema (structured content); a tool that cannot answer raises `ToolError`,
which the SDK turns into an error result carrying the reason (any other exception stays a crash on this
side, with a generic message to the client).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field, ValidationError

from memory_pipeline.curation.actions import NothingToUndo, undo_forget
from memory_pipeline.limits import MAX_K, MAX_TOKENS, MAX_WINDOW, MIN_TOKENS
from memory_pipeline.search.briefing import build_briefing
from memory_pipeline.search.engine import MemorySearch
from memory_pipeline.search.models import Filters, Memory, MemoryDetail
from memory_pipeline.search.open import briefing_note, unavailable
from memory_pipeline.search.remember import Note, RefusedNote, remember
from memory_pipeline.search.render import missing_ids
from memory_pipeline.service.models import Briefing, Memories, MemoryDetails
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.settings import Settings
from memory_pipeline.stores.memory_store import MemoryStore
from memory_pipeline.stores.outage import quiet_outages

INSTRUCTIONS = (
    "Persistent memory of earlier coding-agent sessions. memory_search finds memories (ids are citations), "
    "memory_timeline shows what happened around one, memory_show gives a memory with the turn it came from, "
    "memory_remember keeps a note on purpose, memory_briefing is what a new session should know first, "
    "memory_undo_forget brings back a memory forgotten by mistake."
)


# Every tool's `project`: the agent's working directory, which scopes the memory to its project.
PROJECT = Field(
    description="The project's path (your working directory). Default: the project this server was started for."
)
AGENT = Field(
    description="Only what this coding agent's sessions hold: pi, claude-code, codex or gemini-cli. Default: all."
)


def _store(get_store: Callable[[], MemoryStore | None]) -> MemoryStore:
    store = get_store()
    if store is None:
        raise ToolError("this server keeps no notes (it was started without a store)")
    return store


def build_mcp(
    get_search: Callable[[], MemorySearch],
    get_redactor: Callable[[], Redactor],
    default_project: str | None = None,
    workspace: Path | None = None,
    settings: Settings | None = None,
    get_store: Callable[[], MemoryStore | None] = lambda: None,
) -> MCPServer:
    """The tools over one search; `default_project` scopes every call that names no project (a stdio server's
    `--project`, else its working directory, which its client starts in the project). With `settings`, a server
    that is down is a tool error naming it and the command that starts it."""
    # WARNING: its logging set-up is the process's root logger; at INFO every Elasticsearch request and every
    # storage migration of a fast-path run would be a line in the service's log.
    server = MCPServer(name="memory-pipeline", instructions=INSTRUCTIONS, log_level="WARNING")
    quiet_outages()  # a server down is one line in the log, not thousands (the service builds this too)
    mcp = _Reasoned(server, settings)

    @mcp.tool()
    def memory_search(
        query: Annotated[str, Field(description="What to look for, in plain words (a question works).")],
        k: Annotated[int, Field(description=f"How many memories at most (1-{MAX_K}).")] = 10,
        project: Annotated[str | None, PROJECT] = None,
        agent: Annotated[str | None, AGENT] = None,
    ) -> Memories:
        """Memories about `query`, best first (hybrid BM25 + embeddings), of your project unless you name
        another. Each has an id to cite and to open with memory_show."""
        if not query.strip():
            raise ToolError("query is empty")
        search = get_search()
        scope = Filters(project=project or default_project, agent=agent or None)
        rows = search.find(query, k=max(1, min(k, MAX_K)), filters=scope)
        return Memories.of(rows, degraded=search.degraded)

    @mcp.tool()
    def memory_timeline(
        anchor: Annotated[str, Field(description="A memory id, or a query whose best match is the anchor.")],
        window: Annotated[int, Field(description=f"How many memories on each side (1-{MAX_WINDOW}).")] = 5,
        project: Annotated[str | None, PROJECT] = None,
        agent: Annotated[str | None, AGENT] = None,
    ) -> Memories:
        """The memories before and after `anchor`, in time order: what happened around it."""
        scope = Filters(project or default_project, agent=agent or None)
        return Memories.of(get_search().timeline(anchor, window=max(1, min(window, MAX_WINDOW)), filters=scope))

    @mcp.tool()
    def memory_show(
        ids: Annotated[list[str], Field(description="Memory ids, as memory_search or a briefing gave them.")],
    ) -> MemoryDetails:
        """The full memories with these ids, each with the messages of the turn it came from."""
        found = get_search().detail(ids)
        if missing := missing_ids(ids, found):
            raise ToolError(missing)
        return MemoryDetails(data=[MemoryDetail.of(r) for r in found], count=len(found))

    @mcp.tool()
    def memory_remember(
        text: Annotated[
            str, Field(description="The note, readable alone: a rule in the user's words, a decision and why.")
        ],
        project: Annotated[str | None, PROJECT] = None,
        priority: Annotated[
            Literal["high", "medium", "low"] | None,
            Field(description="How much it matters; an agent's note is medium at most until a person promotes it."),
        ] = None,
        session_id: Annotated[str | None, Field(description="The session it was said in (its id), to cite.")] = None,
        turn_id: Annotated[str | None, Field(description="The turn in that session (its first entry id).")] = None,
    ) -> Memory:
        """Keep a note on purpose (a rule the user stated, a decision and why), cited to a session and turn.
        An agent's note is medium at most until a person promotes it; a rule must be the user's words."""
        where = project or default_project
        if not where:
            raise ToolError("name the project (its working directory) the note belongs to")
        try:
            note = Note(
                text=text,
                project=where,
                priority=priority,
                session_id=session_id,
                turn_id=turn_id,
                agent="mcp",
                author="agent",  # an MCP client is a model: never a person's note, whatever it is told
            )
            return Memory.of(remember(get_search(), _store(get_store), note, get_redactor()))
        except ValidationError as exc:
            raise ToolError("; ".join(e["msg"] for e in exc.errors())) from None
        except RefusedNote as exc:
            raise ToolError(str(exc)) from None

    @mcp.tool()
    def memory_briefing(
        prompt: Annotated[str, Field(description="The session's first prompt (what you are about to do).")],
        project: Annotated[str | None, PROJECT] = None,
        tokens: Annotated[
            int, Field(description=f"Budget of the briefing in tokens ({MIN_TOKENS}-{MAX_TOKENS}).")
        ] = 800,
        agent: Annotated[str | None, AGENT] = None,
    ) -> Briefing:
        """What a session of `project` starting with `prompt` should know first: rules, then important
        memories, then matches, within `tokens`."""
        where = project or default_project
        budget = max(MIN_TOKENS, min(tokens, MAX_TOKENS))
        search = get_search()
        made = build_briefing(
            search, prompt, token_budget=budget, project=where, workspace=workspace, agent=agent or None
        )
        degraded = briefing_note(made, settings) if settings else made.degraded or None
        return Briefing(markdown=made.markdown, project=where, ids=made.ids, degraded=degraded)

    @mcp.tool()
    def memory_undo_forget(
        id: Annotated[str, Field(description="The id of the memory that was forgotten (the 'Forgotten:' notice's).")],
    ) -> Memory:
        """Bring back a memory forgotten by mistake, as it was, within a week of the forget."""
        if workspace is None:
            raise ToolError("this server has no memory workspace: undo the forget from the CLI or the service")
        try:
            undo_forget(_store(get_store), workspace, id, who="agent")
        except NothingToUndo as exc:
            raise ToolError(str(exc)) from None
        [row] = get_search().get([id])
        return Memory.of(row)

    return server


class _Reasoned:
    """`MCPServer.tool()` whose tools turn a server being down into a `ToolError` with the reason and the fix
    (any other exception stays the SDK's generic error)."""

    def __init__(self, server: MCPServer, settings: Settings | None) -> None:
        self.server, self.settings = server, settings

    def tool(self) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        register = self.server.tool()

        def wrap(function: Callable[..., Any]) -> Callable[..., Any]:
            @functools.wraps(function)
            def reasoned(*args: Any, **kwargs: Any) -> Any:
                try:
                    return function(*args, **kwargs)
                except ToolError:
                    raise
                except Exception as exc:
                    reason = unavailable(exc, self.settings) if self.settings else None
                    if reason is None:
                        raise
                    raise ToolError(reason) from None

            return register(reasoned)

        return wrap
