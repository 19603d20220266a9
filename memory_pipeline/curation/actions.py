"""Edit and forget, as the browser (and any client of the service) does them: the correction goes into the
trail first, then the stored memory changes at once; the pipeline's next runs apply the same trail."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from memory_pipeline.curation.corrections import Correction
from memory_pipeline.curation.trail import record
from memory_pipeline.search.engine import MemorySearch
from memory_pipeline.search.models import KIND_INDEX
from memory_pipeline.stores.elasticsearch import delete_matching
from memory_pipeline.stores.indices import LEDGER_INDEX, RAW_INDEX, SEARCH_INDICES
from memory_pipeline.stores.openai_compat import ServerError
from memory_pipeline.stores.recall_store import embed_hash, vector_fields


class UnknownMemory(KeyError):
    pass


def _correction(search: MemorySearch, memory_id: str, **change: object) -> tuple[Correction, str]:
    rows = search.get([memory_id])
    if not rows:
        raise UnknownMemory(memory_id)
    row = rows[0]
    memory = {
        "doc_id": row.id,
        "session_id": row.session_id,
        "turn_id": row.turn_id,
        "summary": row.summary,
        "kind": row.knowledge,  # rule, decision, …: what the knowledge is, which another model types alike
        "subject": row.subject,
        "evidence": row.evidence,
    }
    correction = Correction.of(memory, **change)
    return correction, KIND_INDEX[row.kind]


def forget(search: MemorySearch, workspace: Path, memory_id: str, who: str = "person") -> Correction:
    """Forget a memory: recorded (ids and hashes, never its text), then removed from its index."""
    correction, index = _correction(search, memory_id, action="forget", who=who)
    record(workspace, correction)
    search.es.delete(index=index, id=memory_id, refresh="wait_for")
    return correction


def forget_turn(search: MemorySearch, workspace: Path, memory_id: str, who: str = "person") -> Correction:
    """Forget a memory and the whole turn it came from: recorded, then the turn's messages, its observation and
    every memory of it removed from every index; the pipeline's next runs neither index nor read it again."""
    correction, _ = _correction(search, memory_id, action="forget_turn", who=who)
    if not correction.session_id or not correction.turn_id:
        raise ValueError(f"{memory_id} cites no turn: forget the memory alone")
    record(workspace, correction)
    turn = {"bool": {"filter": [
        {"term": {"session_id": correction.session_id}}, {"term": {"turn_id": correction.turn_id}}
    ]}}  # fmt: skip
    delete_matching(search.es, [RAW_INDEX, LEDGER_INDEX, *SEARCH_INDICES], turn)
    return correction


def edit(
    search: MemorySearch,
    workspace: Path,
    memory_id: str,
    text: str | None = None,
    priority: Literal["high", "medium", "low"] | None = None,
    who: str = "person",
) -> Correction:
    """Change a memory's text or priority: recorded, then written, with a new vector for a new text when the
    embedding server is up (else the next run embeds it: its text no longer matches its vector's hash)."""
    correction, index = _correction(search, memory_id, action="edit", text=text, priority=priority, who=who)
    record(workspace, correction)
    update: dict[str, object] = {}
    if correction.text:
        update["summary"] = correction.text.strip()
        try:
            [vector] = search.embedder.embed([correction.text.strip()], purpose="document")
            model, prefix = search.embedder.model_id(), search.embedder.prefix("document")
            update |= vector_fields(
                vector, model, embed_hash(correction.text.strip(), model, search.embedder.dims, prefix)
            )
        except ServerError:
            pass
    if correction.priority:
        update["priority"] = correction.priority
    search.es.update(index=index, id=memory_id, doc=update, refresh="wait_for")
    return correction
