"""The pages: search (with a feed of the newest memories when nothing is asked), a memory with its turn and its
neighbours, review, at a glance, the recently forgotten, and the page a server outage shows; plus the write
actions (edit, forget and its undo, promote, reject), each confirmed in the page before it is sent (an undo
needs no asking) and reported once done; the service lets no write through without its local token.

Every page is rendered with autoescaping: session content is untrusted, and a message holding `<script>`
shows as text. No page holds a credential: a write from a page carries the browser's HTTP-only session cookie
(set by the one-time login link), which no script and no other site can read.
"""

from __future__ import annotations

import getpass
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlencode

from fastapi import APIRouter, Form, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, Response
from fastapi.templating import Jinja2Templates

from memory_pipeline.curation import actions
from memory_pipeline.curation.trail import read_corrections
from memory_pipeline.limits import UNDO_DAYS
from memory_pipeline.reflect.review import apply_decisions, read_review
from memory_pipeline.reflect.workspace import project_dir, project_of
from memory_pipeline.service.deps import SearchDep, SettingsDep, StoreDep
from memory_pipeline.service.models import FilterParams
from memory_pipeline.service.web.glance import bar_chart
from memory_pipeline.service.web.present import commands_in, memory_lines, project_name, readable, short_id
from memory_pipeline.sessions.sources import AGENTS
from memory_pipeline.sessions.tool_text import call_line
from memory_pipeline.settings import Settings
from memory_pipeline.stores.injections import open_ledger

TEMPLATES = Jinja2Templates(directory=Path(__file__).with_name("templates"))
TEMPLATES.env.filters.update(
    short_id=short_id, project_name=project_name, readable=readable, memory_lines=memory_lines, call_line=call_line
)
router = APIRouter(include_in_schema=False)
# How often the search page's feed asks for the newest memories, and how many it shows.
RECENT_SECONDS, RECENT_SHOWN = 10, 12
# The service runs as the person on this machine (bound to 127.0.0.1, writes need their login): the trail names them.
BROWSER_USER = f"{getpass.getuser()} (browser)"


def _page(request: Request, template: str, settings: Settings, **context: object) -> HTMLResponse:
    return TEMPLATES.TemplateResponse(request, template, context)


def known_projects(settings: Settings) -> list[str]:
    workspace = settings.memory_workspace
    return sorted(project_of(p.parent) for p in workspace.glob("*/.project")) if workspace.exists() else []


@router.get("/", response_class=HTMLResponse)
def search_page(
    request: Request,
    search: SearchDep,
    settings: SettingsDep,
    asked: Annotated[FilterParams, Query()],
    q: str = "",
    forgotten: str = "",
    whole_turn: bool = False,
) -> HTMLResponse:
    filters = asked.filters()
    rows = search.find(q, k=20, filters=filters) if q.strip() else []
    return _page(
        request,
        "search.html",
        settings,
        q=q,
        rows=rows,
        strong=[r for r in rows if r.strong],
        filters=filters,
        projects=known_projects(settings),
        agents=AGENTS,
        forgotten=forgotten,
        whole_turn=whole_turn,  # a turn forgotten whole cannot be brought back: no Undo
        undo_days=UNDO_DAYS,
        degraded=search.degraded,
        # Before the first run the page says why it is empty, rather than that nothing matched.
        no_history=not rows and not search.has_history(),
        recent_seconds=RECENT_SECONDS,
    )


@router.get("/recent", response_class=HTMLResponse)
def recent_feed(
    request: Request, search: SearchDep, settings: SettingsDep, asked: Annotated[FilterParams, Query()]
) -> HTMLResponse:
    """The newest memories that pass the filters, as the part of the search page that the page polls."""
    rows = search.recent(asked.filters(), k=RECENT_SHOWN)
    now = datetime.now(UTC).strftime("%H:%M:%S")
    return _page(request, "parts/recent.html", settings, rows=rows, now=now, recent_seconds=RECENT_SECONDS)


@router.get("/m/{memory_id}", response_class=HTMLResponse)
def memory_page(
    request: Request, search: SearchDep, settings: SettingsDep, memory_id: str, done: str = ""
) -> HTMLResponse:
    records = search.detail([memory_id])
    if not records:
        raise HTTPException(status_code=404, detail=f"no memory {memory_id!r}")
    return _page(
        request,
        "memory.html",
        settings,
        memory=records[0],
        around=search.timeline(memory_id, window=4),
        trail=read_corrections(settings.memory_workspace, memory_id),
        done=done,
    )


@router.post("/m/{memory_id}/edit")
def edit_memory(
    search: SearchDep,
    store: StoreDep,
    settings: SettingsDep,
    memory_id: str,
    text: Annotated[str, Form()] = "",
    priority: Annotated[Literal["", "high", "medium", "low"], Form()] = "",
) -> Response:
    change = {"text": text.strip() or None, "priority": priority or None}
    return _changed(
        memory_id,
        f"/m/{memory_id}?done=edited",
        lambda: actions.edit(
            search,
            store,
            settings.memory_workspace,
            memory_id,
            **change,
            who=BROWSER_USER,
            ledger=open_ledger(settings),
        ),
    )


@router.post("/m/{memory_id}/forget")
def forget_memory(
    search: SearchDep,
    store: StoreDep,
    settings: SettingsDep,
    memory_id: str,
) -> Response:
    return _changed(
        memory_id,
        f"/?forgotten={memory_id}",
        lambda: actions.forget(
            search, store, settings.memory_workspace, memory_id, who=BROWSER_USER, ledger=open_ledger(settings)
        ),
    )


@router.post("/m/{memory_id}/forget-turn")
def forget_memory_and_turn(
    search: SearchDep,
    store: StoreDep,
    settings: SettingsDep,
    memory_id: str,
) -> Response:
    return _changed(
        memory_id,
        f"/?forgotten={memory_id}&whole_turn=true",
        lambda: actions.forget_turn(
            search, store, settings.memory_workspace, memory_id, who=BROWSER_USER, ledger=open_ledger(settings)
        ),
    )


@router.post("/m/{memory_id}/undo-forget")
def undo_forget(store: StoreDep, settings: SettingsDep, memory_id: str) -> Response:
    """The memory back as it was, then its page saying so; 404 when it was not forgotten within the undo's time."""
    try:
        actions.undo_forget(store, settings.memory_workspace, memory_id, who=BROWSER_USER)
    except actions.NothingToUndo as exc:
        raise HTTPException(status_code=404, detail=str(exc)) from None
    return Response(status_code=204, headers={"HX-Redirect": f"/m/{memory_id}?done=restored"})


@router.get("/forgotten", response_class=HTMLResponse)
def forgotten_page(request: Request, store: StoreDep, settings: SettingsDep) -> HTMLResponse:
    """The memories forgotten in the last `UNDO_DAYS` days, each with an Undo button and the day its undo ends."""
    held = [
        (memory, (datetime.fromisoformat(memory.forgotten_at) + timedelta(days=UNDO_DAYS)).isoformat())
        for memory in actions.recently_forgotten(store)
    ]
    return _page(request, "forgotten.html", settings, held=held, undo_days=UNDO_DAYS)


def _changed(memory_id: str, then: str, change: Callable[[], object]) -> Response:
    """A person's change to a memory, made: 204 and the page to show next; 404 for an unknown memory, 422 for
    a change that cannot be made (an empty edit, a turn to forget that the memory does not cite)."""
    try:
        change()
    except actions.UnknownMemory:
        raise HTTPException(status_code=404, detail=f"no memory {memory_id!r}") from None
    except ValueError as exc:
        raise HTTPException(status_code=422, detail=str(exc)) from None
    return Response(status_code=204, headers={"HX-Redirect": then})


@router.get("/review", response_class=HTMLResponse)
def review_page(request: Request, settings: SettingsDep, promoted: str = "", rejected: str = "") -> HTMLResponse:
    projects = []
    for project in known_projects(settings):
        # A page read writes nothing: a project without a folder yet has no proposals.
        proposals, memory = read_review(project_dir(settings.memory_workspace, project))
        waiting = [p for p in proposals if p.mark == " "]
        projects.append({"name": project, "proposals": waiting, "memory": memory})
    done = (
        f"Promoted {promoted}: it is in MEMORY.md below, and every new session of its project is briefed with it."
        if promoted
        else f"Rejected {rejected}: archived in today's daily log, and gone from the list."
        if rejected
        else ""
    )
    return _page(request, "review.html", settings, projects=projects, done=done)


@router.post("/review/decide")
def decide_proposal(
    settings: SettingsDep,
    project: Annotated[str, Form()],
    proposal: Annotated[str, Form()],
    decision: Annotated[Literal["promote", "reject"], Form()],
) -> Response:
    promote, reject = ([proposal], []) if decision == "promote" else ([], [proposal])
    try:
        apply_decisions(settings.memory_workspace, project, promote, reject, datetime.now(UTC).date().isoformat())
    except KeyError as exc:
        raise HTTPException(status_code=404, detail=exc.args[0]) from None
    done = "promoted" if decision == "promote" else "rejected"
    return Response(status_code=204, headers={"HX-Redirect": f"/review?{urlencode({done: proposal})}"})


@router.get("/glance", response_class=HTMLResponse)
def glance_page(request: Request, store: StoreDep, settings: SettingsDep, project: str = "") -> HTMLResponse:
    charts = [bar_chart(s) for s in store.activity(project or None)]
    return _page(request, "glance.html", settings, charts=charts, project=project, projects=known_projects(settings))


def down_page(request: Request, settings: Settings, reason: str) -> HTMLResponse:
    """The page a browser gets while a server the memory needs is down: the page's navigation, the server, why,
    and the command that starts it (503)."""
    server = reason.split(" at ", 1)[0] if reason.startswith("Elasticsearch") else "A local llama-server"
    response = _page(request, "down.html", settings, server=server, reason=reason, commands=commands_in(reason))
    response.status_code = 503
    return response
