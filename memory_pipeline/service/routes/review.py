"""The review actions: the proposals of a project's REVIEW.md, and decisions on them, which change the same
files in the same way as `memory-pipeline review apply` after ticking the boxes by hand. Writes take a JSON
body only, so a web page cannot post one with a plain form."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query

from memory_pipeline.reflect.review import ContraryDecisions, apply_decisions, read_review
from memory_pipeline.reflect.workspace import project_dir
from memory_pipeline.service.deps import SettingsDep
from memory_pipeline.service.models import ApplyOut, Decisions, ProposalOut, ReviewOut

router = APIRouter(prefix="/api/v1/review", tags=["review"])


@router.get("", response_model=ReviewOut, summary="The proposals waiting in a project's REVIEW.md")
def review(settings: SettingsDep, project: Annotated[str, Query(min_length=1)]) -> ReviewOut:
    folder = project_dir(settings.memory_workspace, project)
    proposals, memory = read_review(folder)
    return ReviewOut(
        project=project,
        proposals=[ProposalOut(id=p.id, section=p.section, text=p.text, mark=p.mark) for p in proposals],
        memory=memory,
    )


@router.post("", response_model=ApplyOut, summary="Promote or reject proposals (as `review apply` does)")
def decide_proposals(settings: SettingsDep, decisions: Decisions) -> ApplyOut:
    today = datetime.now(UTC).date().isoformat()
    try:
        report = apply_decisions(
            settings.memory_workspace, decisions.project, decisions.promote, decisions.reject, today
        )
    except ContraryDecisions as exc:
        raise HTTPException(status_code=422, detail=str(exc)) from None
    except KeyError as exc:
        raise HTTPException(status_code=404, detail=exc.args[0]) from None
    return ApplyOut(promoted=report.promoted, rejected=report.rejected, untouched=report.untouched)
