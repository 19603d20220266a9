"""The Excluded page: the projects and folders kept out of the memory (MEMORY_EXCLUDE's, read-only, and the
person's, each removable), a form to add one, and the removal of what was stored of them (the same purge as
`memory-pipeline purge-excluded`). Its writes go through the app's checks like the others (the browser's session
cookie or the token, a local origin), are sent by htmx, confirmed in the page first and reported once done.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Form, HTTPException, Request
from fastapi.responses import HTMLResponse, Response

from memory_pipeline.control.exclusions import purge_excluded
from memory_pipeline.service.deps import SettingsDep
from memory_pipeline.service.web.routes import TEMPLATES, known_projects
from memory_pipeline.sessions.exclude import excluded
from memory_pipeline.sessions.exclude_list import (
    ExclusionsFileError,
    add_exclusion,
    exclusions_path,
    read_exclusions,
    remove_exclusion,
)
from memory_pipeline.settings import Settings

router = APIRouter(include_in_schema=False)
Purge = Callable[[Settings], tuple[list[str], int]]


def get_purge() -> Purge:
    """The purge the page runs (a test gives another through the app's dependency overrides)."""
    return purge_excluded


PurgeDep = Annotated[Purge, Depends(get_purge)]


def _done(added: str, removed: str, already: str, purged: str, projects: str) -> str:
    if added:
        return (
            f"Excluded {added}: its sessions are not read from the next run on. What was stored of it before stays "
            "until you remove it below."
        )
    if already:
        return f"{already} was excluded already."
    if removed:
        return f"No longer excluded: {removed}. Its sessions are read again from the next run on."
    if purged:
        return (
            f"Removed {purged} documents of {projects or 0} excluded projects from every index. Their MEMORY.md and "
            "daily logs stay in the memory folder: memory-pipeline purge-excluded --with-files deletes them."
        )
    return ""


@router.get("/excluded", response_class=HTMLResponse)
def excluded_page(
    request: Request,
    settings: SettingsDep,
    added: str = "",
    removed: str = "",
    already: str = "",
    purged: str = "",
    projects: str = "",
) -> HTMLResponse:
    path = exclusions_path(settings)
    try:
        own, problem = read_exclusions(path).exclusions, ""
    except ExclusionsFileError as exc:
        own, problem = [], str(exc)
    patterns = [*settings.memory_exclude, *(e.pattern for e in own)]
    known = known_projects(settings)
    return TEMPLATES.TemplateResponse(
        request,
        "excluded.html",
        {
            "configured": settings.memory_exclude,
            "own": own,
            "problem": problem,
            "path": path,
            # The projects the memory knows, offered to pick from; those already kept out are marked.
            "known": [(p, excluded(p, patterns)) for p in known],
            "done": _done(added, removed, already, purged, projects),
        },
    )


def _refused(exc: ExclusionsFileError) -> HTTPException:
    # The file is left as it is (its patterns are the person's): the reason names it.
    return HTTPException(status_code=409, detail=str(exc))


@router.post("/excluded/add")
def exclude_add(settings: SettingsDep, pattern: Annotated[str, Form()] = "") -> Response:
    try:
        added = add_exclusion(exclusions_path(settings), pattern)
    except ExclusionsFileError as exc:
        raise _refused(exc) from None
    except ValueError as exc:
        raise HTTPException(status_code=422, detail=str(exc)) from None
    if pattern.strip() in settings.memory_exclude:
        added = False  # kept out already by the settings: the file's copy changes nothing
    done = {"added" if added else "already": pattern.strip()}
    return Response(status_code=204, headers={"HX-Redirect": f"/excluded?{urlencode(done)}"})


@router.post("/excluded/remove")
def exclude_remove(settings: SettingsDep, pattern: Annotated[str, Form()]) -> Response:
    if pattern.strip() in settings.memory_exclude and pattern.strip() not in _own(settings):
        raise HTTPException(status_code=422, detail=f"{pattern.strip()!r} is in MEMORY_EXCLUDE: change it there")
    try:
        found = remove_exclusion(exclusions_path(settings), pattern)
    except ExclusionsFileError as exc:
        raise _refused(exc) from None
    if not found:
        raise HTTPException(status_code=404, detail=f"{pattern.strip()!r} is not excluded here")
    return Response(status_code=204, headers={"HX-Redirect": f"/excluded?{urlencode({'removed': pattern.strip()})}"})


def _own(settings: Settings) -> list[str]:
    try:
        return read_exclusions(exclusions_path(settings)).patterns
    except ExclusionsFileError:
        return []


@router.post("/excluded/purge")
def purge_stored(settings: SettingsDep, purge: PurgeDep) -> Response:
    """What was stored of every excluded project, removed from every index: how many documents, on the page."""
    try:
        projects, removed = purge(settings)
    except ExclusionsFileError as exc:
        raise _refused(exc) from None
    done = {"purged": str(removed), "projects": str(len(projects))}
    return Response(status_code=204, headers={"HX-Redirect": f"/excluded?{urlencode(done)}"})
