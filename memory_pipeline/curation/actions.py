"""Edit and forget, as the browser (and any client of the service) does them: the correction goes into the
trail first, then the stored memory changes at once; the pipeline's next runs apply the same trail."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

from memory_pipeline.curation.corrections import Correction
from memory_pipeline.curation.trail import record
from memory_pipeline.limits import UNDO_DAYS
from memory_pipeline.reflect.proposals import follow_memory
from memory_pipeline.reflect.workspace import project_dir
from memory_pipeline.search.engine import MemorySearch
from memory_pipeline.search.models import KIND_INDEX
from memory_pipeline.stores.injections import InjectionLedger
from memory_pipeline.stores.memory_store import HeldMemory, MemoryStore


class UnknownMemory(KeyError):
    pass


def _correction(search: MemorySearch, memory_id: str, **change: object) -> tuple[Correction, str, str]:
    """The correction of the memory `memory_id`, its index and its project."""
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
    index = KIND_INDEX[row.kind]
    # The index too: a re-run that words an edited memory anew gives it back the id the person edited.
    correction = Correction.of(memory, index=index, **change)
    return correction, index, row.project


def forget(
    search: MemorySearch,
    store: MemoryStore,
    workspace: Path,
    memory_id: str,
    who: str = "person",
    ledger: InjectionLedger | None = None,
) -> Correction:
    """Forget a memory: recorded (ids and hashes, never its text), then removed from its index and its text from
    the injection `ledger`. The memory is kept whole out of every search for `UNDO_DAYS` so the forget can be
    undone (`undo_forget`), then purged; the ledger keeps only that it was given."""
    correction, index, project = _correction(search, memory_id, action="forget", who=who)
    record(workspace, correction)
    now = datetime.now(UTC)
    store.purge_held(now - timedelta(days=UNDO_DAYS))
    store.hold(index, memory_id, now)
    store.delete(index, memory_id)
    _follow(workspace, project, memory_id, None)
    if ledger is not None:
        ledger.forget(memory_id)
    return correction


class NothingToUndo(ValueError):
    pass


def undo_forget(store: MemoryStore, workspace: Path, memory_id: str, who: str = "person") -> Correction:
    """Bring back a memory forgotten less than `UNDO_DAYS` ago: as it was (id, text, vector), searchable at once,
    and the forget no longer applied by the pipeline's runs (an `undo` in the trail). Proposals the forget
    withdrew are not restored: the next reflection proposes what still holds. A turn forgotten whole cannot be
    brought back (its messages left every index), nor a memory forgotten longer ago (purged)."""
    now = datetime.now(UTC)
    store.purge_held(now - timedelta(days=UNDO_DAYS))
    if store.restore(memory_id, since=now - timedelta(days=UNDO_DAYS)) is None:
        raise NothingToUndo(
            f"{memory_id} was not forgotten in the last {UNDO_DAYS} days (a forget is undone within {UNDO_DAYS} days;"
            " a turn forgotten whole cannot be)"
        )
    correction = Correction(memory_id=memory_id, action="undo", who=who)
    record(workspace, correction)
    return correction


def recently_forgotten(store: MemoryStore) -> list[HeldMemory]:
    """The memories whose forget can still be undone (forgotten less than `UNDO_DAYS` ago), latest first; the
    ones held longer are purged first, as every forget and undo does."""
    now = datetime.now(UTC)
    store.purge_held(now - timedelta(days=UNDO_DAYS))
    return store.held(since=now - timedelta(days=UNDO_DAYS))


def forget_turn(
    search: MemorySearch,
    store: MemoryStore,
    workspace: Path,
    memory_id: str,
    who: str = "person",
    ledger: InjectionLedger | None = None,
) -> Correction:
    """Forget a memory and the whole turn it came from: recorded, then the turn's messages, its observation and
    every memory of it removed from every index; the pipeline's next runs neither index nor read it again."""
    correction, _, project = _correction(search, memory_id, action="forget_turn", who=who)
    if not correction.session_id or not correction.turn_id:
        raise ValueError(f"{memory_id} cites no turn: forget the memory alone")
    record(workspace, correction)
    gone = store.delete_turn(correction.session_id, correction.turn_id)
    _follow(workspace, project, memory_id, None)
    if ledger is not None:
        ledger.forget(memory_id, *gone)  # every memory of the turn left search: its text leaves the ledger too
    return correction


def edit(
    search: MemorySearch,
    store: MemoryStore,
    workspace: Path,
    memory_id: str,
    text: str | None = None,
    priority: Literal["high", "medium", "low"] | None = None,
    who: str = "person",
    ledger: InjectionLedger | None = None,
) -> Correction:
    """Change a memory's text or priority: recorded, then written, with a new vector for a new text when the
    embedding server is up (else the next run embeds it: its text no longer matches its vector's hash); the
    injection `ledger`'s lines of it say the new text."""
    correction, index, project = _correction(search, memory_id, action="edit", text=text, priority=priority, who=who)
    record(workspace, correction)
    new_text = (correction.text or "").strip() or None
    store.update(index, memory_id, new_text, correction.priority)
    if new_text:
        _follow(workspace, project, memory_id, new_text)
        if ledger is not None:
            ledger.edited(memory_id, new_text)
    return correction


def _follow(workspace: Path, project: str, memory_id: str, text: str | None) -> None:
    """The project's proposals follow the change (`follow_memory`): a forgotten rule is never promoted, an
    edited one is promoted as the person wrote it. Here, so every surface that edits or forgets gets it."""
    folder = project_dir(workspace, project)
    if folder.is_dir():
        follow_memory(folder, project, memory_id, text)
