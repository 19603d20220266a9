"""The session folders the index holds memories of, and removing one's on request.

A folder no longer configured (SESSIONS_DIR pointed elsewhere) keeps its memories: every run leaves them as they
are (they are not "gone" files). Only `forget_folder`, asked for by a person, removes them, from every index.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Set

from elasticsearch import Elasticsearch
from pydantic import BaseModel

from memory_pipeline.stores.elasticsearch import delete_matching, stored_sources
from memory_pipeline.stores.indices import PIPELINE_INDICES, RAW_FILES_INDEX


class RecordedFolder(BaseModel):
    """A folder whose session files were indexed: how many, and whether it is still read."""

    folder: str
    sessions: int
    configured: bool


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
