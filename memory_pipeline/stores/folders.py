"""The session folders the index holds memories of, and removing one's on request.

A folder no longer configured (SESSIONS_DIR pointed elsewhere) keeps its memories: every run leaves them as they
are (they are not "gone" files). Only `forget_folder`, asked for by a person, removes them, from every index.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Set

from elasticsearch import Elasticsearch
from pydantic import BaseModel

from memory_pipeline.sessions.discovery import agent_roots
from memory_pipeline.settings import Settings
from memory_pipeline.stores.elasticsearch import delete_matching, stored_sources
from memory_pipeline.stores.indices import PIPELINE_INDICES, RAW_FILES_INDEX


class RecordedFolder(BaseModel):
    """A folder whose session files were indexed: how many, and whether it is still read."""

    folder: str
    sessions: int
    configured: bool


def configured_folders(settings: Settings) -> frozenset[str]:
    """The session folders `settings` read (pi's, Claude Code's, Codex's, Gemini CLI's), as the manifest names them."""
    return frozenset(str(root.path) for root in agent_roots(*settings.agent_folders))


def unconfigured_sessions(client: Elasticsearch, configured: Set[str], sessions: Collection[str]) -> dict[str, str]:
    """session id -> its folder, for each of `sessions` the manifest records only under folders not in
    `configured` (a session also read from a configured folder is that folder's); one query, for the sessions a
    page of search rows cites."""
    if not sessions or not client.indices.exists(index=RAW_FILES_INDEX):
        return {}
    query = {"bool": {"filter": [{"terms": {"session_id": sorted(sessions)}}, {"exists": {"field": "folder"}}]}}
    found = stored_sources(client, RAW_FILES_INDEX, query, fields=["session_id", "folder"])
    folders: dict[str, set[str]] = {}
    for doc in found.values():
        folders.setdefault(doc["session_id"], set()).add(doc["folder"])
    return {sid: min(where) for sid, where in folders.items() if not where & configured}


def recorded_folders(client: Elasticsearch, configured: Set[str]) -> list[RecordedFolder]:
    """Every folder the manifest records files of (files recorded before it kept folders are not counted)."""
    if not client.indices.exists(index=RAW_FILES_INDEX):
        return []
    sources = stored_sources(client, RAW_FILES_INDEX, {"exists": {"field": "folder"}}, fields=["folder"])
    counts = Counter(doc["folder"] for doc in sources.values())
    return [RecordedFolder(folder=f, sessions=n, configured=f in configured) for f, n in sorted(counts.items())]


def forget_folder(client: Elasticsearch, folder: str) -> tuple[int, int]:
    """(sessions, documents) removed: every document of the sessions recorded under `folder`, in every index,
    then their manifest entries."""
    if not client.indices.exists(index=RAW_FILES_INDEX):
        return 0, 0
    recorded = stored_sources(client, RAW_FILES_INDEX, {"term": {"folder": folder}}, fields=["session_id"])
    sessions = sorted({doc["session_id"] for doc in recorded.values()})
    if not sessions:
        return 0, 0
    others = [index for index in PIPELINE_INDICES if index != RAW_FILES_INDEX]
    documents = delete_matching(client, others, {"terms": {"session_id": sessions}})
    delete_matching(client, [RAW_FILES_INDEX], {"term": {"folder": folder}})
    return len(sessions), documents
