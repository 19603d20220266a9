"""Recall at the moment it is needed, for every agent (`POST /api/v1/recall`), the rules alone for a client
whose recall is slow (`GET /api/v1/rules`), and what each session was given (`GET /api/v1/injected`, the
`/injected` page)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from memory_pipeline.search.briefing import Parts, memory_rules, render, rule_line
from memory_pipeline.search.moment import Moment, Recalled, recall
from memory_pipeline.search.open import briefing_note
from memory_pipeline.service.deps import LedgerDep, SearchDep, SettingsDep
from memory_pipeline.service.models import Briefing
from memory_pipeline.stores.injections import SessionLedger, SessionSummary

router = APIRouter(prefix="/api/v1", tags=["memory"])
pages = APIRouter(include_in_schema=False)


@router.post("/recall", response_model=Recalled, summary="What a session is given now, never twice")
def recall_moment(search: SearchDep, settings: SettingsDep, ledger: LedgerDep, moment: Moment) -> Recalled:
    """The memory for a session's moment (`start`, a `prompt`, a `file` read, a failing command's `error`):
    lines it was not given yet, within the event's budget, recorded in the injection ledger. Empty markdown:
    nothing new fits or matches."""
    answer, made = recall(search, ledger, moment, settings.memory_workspace)
    return answer.model_copy(update={"degraded": briefing_note(made, settings)})


@router.get("/rules", response_model=Briefing, summary="The project's rules (MEMORY.md) alone, without a search")
def rules(settings: SettingsDep, project: Annotated[str, Query(min_length=1)]) -> Briefing:
    """What a client gives its session when recall is slow or down: MEMORY.md read from disk, no search."""
    found = memory_rules(settings.memory_workspace, project)
    made = render(Parts([("rules", [(rule_line(r), r.id) for r in found])]), 20_000)
    return Briefing(markdown=made.markdown, project=project, ids=made.ids)


@router.get("/injected", response_model=SessionLedger, summary="What a session was given from memory, and when")
def injected(ledger: LedgerDep, session_id: Annotated[str, Query(min_length=1)]) -> SessionLedger:
    return ledger.read(session_id)


@router.get("/injected/sessions", response_model=list[SessionSummary], summary="Sessions recently given memory")
def injected_sessions(ledger: LedgerDep) -> list[SessionSummary]:
    return ledger.sessions()


@pages.get("/injected", response_class=HTMLResponse)
def injected_page(request: Request, ledger: LedgerDep, session_id: str = "") -> HTMLResponse:
    from memory_pipeline.service.web.routes import TEMPLATES

    context = {"session_id": session_id, "sessions": [] if session_id else ledger.sessions()}
    if session_id:
        context["ledger"] = ledger.read(session_id)
    return TEMPLATES.TemplateResponse(request, "injected.html", context)
