"""The JSON API: the three search layers, the briefing, and notes stored on purpose. Plain `def`: the search
is synchronous and FastAPI runs these on its thread pool."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from fastapi import APIRouter, HTTPException, Query
from fastapi.responses import PlainTextResponse

from memory_pipeline.fresh.target import NotASession, session_day
from memory_pipeline.limits import MAX_IDS, MAX_K, MAX_TOKENS, MAX_WINDOW, MIN_TOKENS
from memory_pipeline.search.briefing import build_briefing
from memory_pipeline.search.compaction import build_compaction
from memory_pipeline.search.files import FILE_RECALL_K, FILE_RECALL_MAX, file_names
from memory_pipeline.search.models import Filters, Memory, MemoryDetail
from memory_pipeline.search.open import briefing_note
from memory_pipeline.search.remember import Note, RefusedNote, remember
from memory_pipeline.search.render import details_text, file_text, missing_ids, rows_text
from memory_pipeline.service.client import DEGRADED_HEADER
from memory_pipeline.service.deps import AuthorDep, FreshDep, RedactorDep, SearchDep, SettingsDep, StoreDep
from memory_pipeline.service.models import (
    Briefing,
    CompactionSummary,
    DayIngestState,
    FilterParams,
    IngestNotice,
    Memories,
    MemoryDetails,
)

router = APIRouter(prefix="/api/v1", tags=["memory"])
Filter = Annotated[FilterParams, Query()]
# `text` gives what the CLI prints: compact lines with ids and scores, for a model's context (the pi tools).
Format = Annotated[Literal["json", "text"], Query(description="json, or text as the CLI prints it.")]


@router.get("/search", response_model=Memories, summary="Layer 1: a ranked list of memories")
def search(
    search: SearchDep,
    filters: Filter,
    q: Annotated[str, Query(min_length=1, description="What to look for.")],
    k: Annotated[int, Query(ge=1, le=MAX_K)] = 10,
    mode: Literal["hybrid", "bm25", "knn"] = "hybrid",
    format: Format = "json",
) -> Memories | PlainTextResponse:
    rows = search.find(q, k=k, filters=filters.filters(), mode=mode)
    if format == "text":
        # Why the ranking fell back (the embedding server down): in the text itself, for a model reads only that
        # (the pi tools), and in a header for a client that shows it apart (the CLI).
        headers = {DEGRADED_HEADER: search.degraded} if search.degraded else None
        text = rows_text(rows, query=q)
        return PlainTextResponse(f"note: {search.degraded}\n{text}" if search.degraded else text, headers=headers)
    return Memories.of(rows, degraded=search.degraded)


@router.get("/timeline", response_model=Memories, summary="Layer 2: what came before and after a memory")
def timeline(
    search: SearchDep,
    filters: Filter,
    anchor: Annotated[str, Query(min_length=1, description="A memory id, or a query whose best match anchors.")],
    window: Annotated[int, Query(ge=1, le=MAX_WINDOW)] = 5,
    format: Format = "json",
) -> Memories | PlainTextResponse:
    rows = search.timeline(anchor, window=window, filters=filters.filters())
    if format == "text":
        return PlainTextResponse(rows_text(rows, scores=False) if rows else f"no memory {anchor!r}")
    return Memories.of(rows)


@router.get("/about-file", response_model=Memories, summary="What earlier sessions recorded about a file")
def about_file(
    search: SearchDep,
    path: Annotated[str, Query(min_length=1, description="The file, absolute or relative to the project.")],
    project: Annotated[str | None, Query(description="The project (its folder); the path is read within it.")] = None,
    k: Annotated[int, Query(ge=1, le=FILE_RECALL_MAX)] = FILE_RECALL_K,
    format: Format = "json",
) -> Memories | PlainTextResponse:
    """The gotchas, rules, decisions, notes and failures that name the file: what the pi extension adds to a
    read or an edit of it. Text: empty when nothing concerns it."""
    rows = search.about_file(path, filters=Filters(project=project), k=k)
    if format == "text":
        names = file_names(path, project)
        return PlainTextResponse(file_text(rows, names[0] if names else path))
    return Memories.of(rows)


@router.get("/memories/{memory_id}", response_model=MemoryDetail, summary="Layer 3: a memory and its turn")
def memory(search: SearchDep, memory_id: str) -> MemoryDetail:
    records = search.detail([memory_id])
    if not records:
        raise HTTPException(status_code=404, detail=f"no memory {memory_id!r}")
    return MemoryDetail.of(records[0])


@router.get("/memories", response_model=MemoryDetails, summary="Layer 3 for several ids at once")
def memories(
    search: SearchDep,
    ids: Annotated[list[str], Query(min_length=1, max_length=MAX_IDS)],
    format: Format = "json",
    full: Annotated[bool, Query(description="Text: every message whole, not trimmed.")] = False,
) -> MemoryDetails | PlainTextResponse:
    found = search.detail(ids)
    if format == "text":
        missing = missing_ids(ids, found)
        return PlainTextResponse(details_text(found, full=full) + (f"\n\n{missing}" if missing else ""))
    records = [MemoryDetail.of(r) for r in found]
    return MemoryDetails(data=records, count=len(records))


@router.get("/briefing", response_model=Briefing, summary="What a new session should know first")
def session_briefing(
    search: SearchDep,
    settings: SettingsDep,
    prompt: Annotated[str, Query(min_length=1, description="The session's first prompt.")],
    tokens: Annotated[int, Query(ge=MIN_TOKENS, le=MAX_TOKENS)] = 800,
    project: str | None = None,
    agent: Annotated[str | None, Query(description="Only this coding agent's memories (rules: all).")] = None,
) -> Briefing:
    made = build_briefing(
        search, prompt, token_budget=tokens, project=project, workspace=settings.memory_workspace, agent=agent or None
    )
    return Briefing(markdown=made.markdown, project=project, ids=made.ids, degraded=briefing_note(made, settings))


@router.get("/compaction", response_model=CompactionSummary, summary="A long session's summary, from its memory")
def compaction(
    search: SearchDep,
    settings: SettingsDep,
    session_id: Annotated[str, Query(min_length=1, description="The session being compacted.")],
    project: str | None = None,
    until: Annotated[str | None, Query(description="The time of the first entry the compaction keeps.")] = None,
    tokens: Annotated[int, Query(ge=MIN_TOKENS, le=MAX_TOKENS)] = 2000,
) -> CompactionSummary:
    """What pi keeps of the session's earlier part when it compacts: the session's knowledge, the project's
    rules and its turns from memory, within `tokens`. Empty markdown when the memory holds nothing of it yet."""
    made = build_compaction(search, session_id, project, until, tokens, workspace=settings.memory_workspace)
    return CompactionSummary(markdown=made.markdown, ids=made.ids, turns=made.turns, left_out=made.left_out)


@router.post("/memories", response_model=Memory, status_code=201, summary="Store a note on purpose")
def remember_note(search: SearchDep, store: StoreDep, redactor: RedactorDep, author: AuthorDep, note: Note) -> Memory:
    """Keep `note` (redacted, vetted), cited to its session and turn; storing the same note again returns the
    first. A note sent with the service's token is an agent's, whatever its `author` says (a person's only
    from their logged-in browser): medium at most; a rule found only in the turn's tool output is refused (422)."""
    try:
        return Memory.of(remember(search, store, note.model_copy(update={"author": author}), redactor))
    except RefusedNote as exc:
        raise HTTPException(status_code=422, detail=str(exc)) from None


@router.post("/ingest", response_model=DayIngestState, status_code=202, summary="A session file changed: ingest it")
def ingest(fresh: FreshDep, settings: SettingsDep, notice: IngestNotice) -> DayIngestState:
    """Runs the file's day through the LLM-free assets at once (raw messages, turns, observations, embeddings),
    so search and the next briefing see its new turns; the day's normal runs add the LLM's memories. Notices
    for a day already queued join it. 422 for a path that is not a session file under the sessions folder."""
    try:
        day = session_day(Path(notice.session_file), [f for f in settings.agent_folders if f])
    except NotASession as exc:
        raise HTTPException(status_code=422, detail=str(exc)) from None
    return DayIngestState.model_validate(fresh.notify(day, notice.session_file))


@router.get("/ingest", response_model=list[DayIngestState], summary="What the fast path did with each day")
def ingest_status(fresh: FreshDep) -> list[DayIngestState]:
    return [DayIngestState.model_validate(d) for d in fresh.status()]
