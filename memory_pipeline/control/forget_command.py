"""`memory-pipeline forget ID` and `memory-pipeline undo-forget ID`: what the browser's Forget does, and its undo
(both through `curation.actions`, as the API and MCP)."""

from __future__ import annotations

import click

from memory_pipeline.limits import UNDO_DAYS


@click.command(name="forget")
@click.argument("memory_id")
def forget_command(memory_id: str) -> None:
    """Forget the memory MEMORY_ID: gone from search now and from every later run (a person's choice, in the
    corrections trail). `undo-forget MEMORY_ID` brings it back within the undo's days."""
    from memory_pipeline.curation.actions import UnknownMemory, forget
    from memory_pipeline.search.open import open_search
    from memory_pipeline.settings import load_settings
    from memory_pipeline.stores.injections import open_ledger
    from memory_pipeline.stores.memory_store import open_store

    settings = load_settings()
    with open_search(settings) as search, open_store(settings) as store:
        try:
            forget(search, store, settings.memory_workspace, memory_id, ledger=open_ledger(settings))
        except UnknownMemory:
            raise click.ClickException(f"no memory {memory_id!r}") from None
    click.echo(f"Forgotten: {memory_id} (undo within {UNDO_DAYS} days: memory-pipeline undo-forget {memory_id})")


@click.command(name="undo-forget")
@click.argument("memory_id")
def undo_forget_command(memory_id: str) -> None:
    """Bring back MEMORY_ID, forgotten by mistake: as it was, searchable at once, and the forget no longer
    applied by later runs."""
    from memory_pipeline.curation.actions import NothingToUndo, undo_forget
    from memory_pipeline.settings import load_settings
    from memory_pipeline.stores.memory_store import open_store

    settings = load_settings()
    with open_store(settings) as store:
        try:
            undo_forget(store, settings.memory_workspace, memory_id)
        except NothingToUndo as exc:
            raise click.ClickException(str(exc)) from None
    click.echo(f"Back: {memory_id}")
