"""Removing what was stored of the projects now kept out, by `MEMORY_EXCLUDE` or by the person's exclusions
(`sessions/exclude_list.py`; their sessions are no longer read from the moment they are excluded:
`sessions/exclude.py`). `purge-excluded` and the browser's Excluded page both run `purge_excluded`."""

from __future__ import annotations

from pathlib import Path

from elasticsearch import Elasticsearch

from memory_pipeline.sessions.exclude import excluded
from memory_pipeline.sessions.exclude_list import exclusion_patterns
from memory_pipeline.settings import Settings
from memory_pipeline.stores.elasticsearch import delete_matching, make_client, stored_sources
from memory_pipeline.stores.indices import (
    FORGOTTEN_INDEX,
    LEDGER_INDEX,
    NOTES_INDEX,
    OBSERVATION_INDEX,
    RAW_FILES_INDEX,
    RAW_INDEX,
    REFLECTION_INDEX,
    SUMMARY_INDEX,
)

# The indices whose documents name their project, and those that only name their session.
BY_PROJECT = (RAW_INDEX, SUMMARY_INDEX, OBSERVATION_INDEX, REFLECTION_INDEX, NOTES_INDEX)
BY_SESSION = (RAW_FILES_INDEX, LEDGER_INDEX)


def _projects(es: Elasticsearch) -> set[str]:
    found: set[str] = set()
    for index in BY_PROJECT:
        if es.indices.exists(index=index):
            answer = es.search(index=index, size=0, aggs={"p": {"terms": {"field": "project", "size": 10_000}}})
            found |= {b["key"] for b in answer["aggregations"]["p"]["buckets"]}
    return found


def _sessions(es: Elasticsearch, projects: list[str]) -> set[str]:
    if not es.indices.exists(index=RAW_INDEX):
        return set()
    hits = stored_sources(es, RAW_INDEX, {"terms": {"project": projects}}, fields=["session_id"])
    return {str(h.get("session_id")) for h in hits.values()}


def purge(es: Elasticsearch, patterns: list[str], parsed_cache: Path) -> tuple[list[str], int]:
    """Removes every document of the excluded projects from every index (and the parse cache's frames of
    their sessions); (the projects, documents removed)."""
    projects = sorted(p for p in _projects(es) if excluded(p, patterns))
    if not projects:
        return [], 0
    sessions = sorted(_sessions(es, projects))
    removed = delete_matching(es, BY_SESSION, {"terms": {"session_id": sessions}}) if sessions else 0
    removed += delete_matching(es, BY_PROJECT, {"terms": {"project": projects}})
    if es.indices.exists(index=FORGOTTEN_INDEX):  # held for an undo: the project is inside the kept document
        held = stored_sources(es, FORGOTTEN_INDEX, {"match_all": {}})
        gone = [i for i, h in held.items() if excluded(str(h.get("document", {}).get("project") or ""), patterns)]
        removed += delete_matching(es, [FORGOTTEN_INDEX], {"ids": {"values": gone}}) if gone else 0
    for session_id in sessions:
        for frame in parsed_cache.glob(f"{session_id}-*"):
            frame.unlink(missing_ok=True)
    return projects, removed


def purge_excluded(settings: Settings) -> tuple[list[str], int]:
    """`purge` of every pattern that keeps a project out now (MEMORY_EXCLUDE's and the person's), in the memory of
    `settings`; (the projects, documents removed)."""
    patterns = exclusion_patterns(settings)
    if not patterns:
        return [], 0
    with make_client(settings) as es:
        return purge(es, patterns, settings.memory_pipeline_state_dir / "parsed")
