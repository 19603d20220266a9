"""Forget a memory and undo the forget, over the API (the browser's forget is a page action, web/routes.py):
both through `curation.actions`, the one function every surface uses."""

from __future__ import annotations

from datetime import datetime, timedelta

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel

from memory_pipeline.curation import actions
from memory_pipeline.curation.corrections import Correction
from memory_pipeline.limits import UNDO_DAYS
from memory_pipeline.service.deps import AuthorDep, SearchDep, SettingsDep, StoreDep
from memory_pipeline.stores.injections import open_ledger

router = APIRouter(prefix="/api/v1/memories", tags=["memory"])


class Forgotten(BaseModel):
    """What a forget or its undo did, and until when a forget can be undone."""

    memory_id: str
    action: str
    at: str
    undo_until: str | None = None

    @classmethod
    def of(cls, correction: Correction) -> Forgotten:
        until = (datetime.fromisoformat(correction.at) + timedelta(days=UNDO_DAYS)).isoformat()
        return cls(
            memory_id=correction.memory_id,
            action=correction.action,
            at=correction.at,
            undo_until=until if correction.action == "forget" else None,
        )


@router.post("/{memory_id}/forget", response_model=Forgotten, summary="Forget a memory (undone within a week)")
def forget(search: SearchDep, store: StoreDep, settings: SettingsDep, author: AuthorDep, memory_id: str) -> Forgotten:
    """Removes the memory from search at once and from every later run; `undo-forget` brings it back within
    `undo_until`. 404 for an unknown memory."""
    try:
        return Forgotten.of(
            actions.forget(
                search, store, settings.memory_workspace, memory_id, who=author, ledger=open_ledger(settings)
            )
        )
    except actions.UnknownMemory:
        raise HTTPException(status_code=404, detail=f"no memory {memory_id!r}") from None


@router.post("/{memory_id}/undo-forget", response_model=Forgotten, summary="Bring back a forgotten memory")
def undo_forget(store: StoreDep, settings: SettingsDep, author: AuthorDep, memory_id: str) -> Forgotten:
    """The memory as it was (id, text, vector), searchable at once; 404 when it was not forgotten within the
    undo's time."""
    try:
        return Forgotten.of(actions.undo_forget(store, settings.memory_workspace, memory_id, who=author))
    except actions.NothingToUndo as exc:
        raise HTTPException(status_code=404, detail=str(exc)) from None
