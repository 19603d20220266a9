"""The needs benchmark's ceiling: every labelled piece of knowledge written as a perfect memory (bench/needs.py).

A perfect memory is what extraction would hold if it made no mistake: the piece's statement, its kind, the
files it concerns, rules and decisions high, established the day the session that said it ran; a replaced
decision marked superseded by its successor once the successor is said, as reflection marks it.
"""

from __future__ import annotations

from elasticsearch import Elasticsearch

from memory_pipeline.stores.elasticsearch import sync_documents
from memory_pipeline.stores.indices import SUMMARY_INDEX
from memory_pipeline.stores.summary_store import SummaryDoc, ensure_summary_indices, summary_doc_id


def _perfect_id(piece: dict, key: str) -> str:
    return summary_doc_id(piece["planted_in"], f"perfect-{key}", piece["statement"])


def perfect_memories(es: Elasticsearch, truth: dict, projects: set[str], days: list[str]) -> int:
    """Each piece planted on one of `days` written as a perfect memory of the session that planted it: what
    extraction would hold if it made no mistake (its vector comes from the next run of the recall assets)."""
    ensure_summary_indices(es)
    written = 0
    for project in projects:
        for day in days:
            docs = []
            for key, piece in truth["projects"][project].items():
                if piece["planted_day"] != day:
                    continue
                turn = f"perfect-{key}"
                doc = SummaryDoc(
                    doc_id=_perfect_id(piece, key),
                    summary=piece["statement"],
                    tags=[piece["component"]],
                    priority="high" if piece["kind"] in ("rule", "decision") else "medium",
                    kind=piece["kind"],
                    subject=piece["component"],
                    files=piece["files"],
                    evidence=piece["statement"],
                    evidence_role="user",
                    source_refs=[{"session_id": piece["planted_in"], "turn_id": turn}],
                    session_id=piece["planted_in"],
                    turn_id=turn,
                    project=project,
                    partition=day,
                    established_at=f"{day}T12:00:00.000Z",
                    summarized_at=f"{day}T12:00:00.000Z",
                    model="perfect",
                    prompt_version="perfect",
                    turn_content_hash=key,
                )
                docs.append((doc.doc_id, doc.model_dump()))
            if docs:
                owned = {"bool": {"filter": [{"term": {"partition": day}}, {"term": {"project": project}}]}}
                sync_documents(es, SUMMARY_INDEX, owned, docs, partial=True)
                written += len(docs)
    es.indices.refresh(index=SUMMARY_INDEX)
    return written


def mark_replaced(es: Elasticsearch, truth: dict, projects: set[str], day: str, marked: set[str]) -> None:
    """A perfect memory replaced by a piece planted before `day` marked superseded by it, as reflection marks
    a replaced decision (once each: `marked` holds the successors done)."""
    changed = False
    for project in projects:
        pieces = truth["projects"][project]
        for key, piece in pieces.items():
            if piece["replaces"] and piece["planted_day"] < day and key not in marked:
                old = piece["replaces"]
                es.update(
                    index=SUMMARY_INDEX,
                    id=_perfect_id(pieces[old], old),
                    doc={"superseded_by": _perfect_id(piece, key)},
                )
                marked.add(key)
                changed = True
    if changed:
        es.indices.refresh(index=SUMMARY_INDEX)
