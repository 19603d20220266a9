"""The JSON API: the three search layers and the briefing. Plain `def`: the search is synchronous and
FastAPI runs these on its thread pool."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, HTTPException, Query

from memory_pipeline.search.briefing import briefing
from memory_pipeline.service.deps import SearchDep, SettingsDep
from memory_pipeline.service.models import Briefing, FilterParams, Memories, MemoryDetail, MemoryDetails

router = APIRouter(prefix="/api/v1", tags=["memory"])
Filter = Annotated[FilterParams, Query()]


@router.get("/search", response_model=Memories, summary="Layer 1: a ranked list of memories")
def search(
    search: SearchDep,
    filters: Filter,
    q: Annotated[str, Query(min_length=1, description="What to look for.")],
    k: Annotated[int, Query(ge=1, le=100)] = 10,
    mode: Literal["hybrid", "bm25", "knn"] = "hybrid",
) -> Memories:
    return Memories.of(search.index(q, k=k, filters=filters.filters(), mode=mode))


@router.get("/timeline", response_model=Memories, summary="Layer 2: what came before and after a memory")
def timeline(
    search: SearchDep,
    filters: Filter,
    anchor: Annotated[str, Query(min_length=1, description="A memory id, or a query whose best match anchors.")],
    window: Annotated[int, Query(ge=1, le=50)] = 5,
) -> Memories:
    return Memories.of(search.timeline(anchor, window=window, filters=filters.filters()))


@router.get("/memories/{memory_id}", response_model=MemoryDetail, summary="Layer 3: a memory and its turn")
def memory(search: SearchDep, memory_id: str) -> MemoryDetail:
    records = search.detail([memory_id])
    if not records:
        raise HTTPException(status_code=404, detail=f"no memory {memory_id!r}")
    return MemoryDetail.of_record(records[0])


@router.get("/memories", response_model=MemoryDetails, summary="Layer 3 for several ids at once")
def memories(search: SearchDep, ids: Annotated[list[str], Query(min_length=1, max_length=50)]) -> MemoryDetails:
    records = [MemoryDetail.of_record(r) for r in search.detail(ids)]
    return MemoryDetails(data=records, count=len(records))


@router.get("/briefing", response_model=Briefing, summary="What a new session should know first")
def session_briefing(
    search: SearchDep,
    settings: SettingsDep,
    prompt: Annotated[str, Query(min_length=1, description="The session's first prompt.")],
    tokens: Annotated[int, Query(ge=50, le=20000)] = 800,
    project: str | None = None,
) -> Briefing:
    text = briefing(search, prompt, token_budget=tokens, project=project, workspace=settings.memory_workspace)
    return Briefing(markdown=text, project=project)
