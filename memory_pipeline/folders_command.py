"""`memory-pipeline folders`: the session folders the memory holds, and `--forget FOLDER` to remove one's.

A folder that is no longer configured keeps its memories, searchable, and is listed here as such; nothing but
this command removes them."""

from __future__ import annotations

import json

import click


@click.command(name="folders")
@click.option("--forget", "forget", metavar="FOLDER", help="Remove every memory of the sessions of FOLDER.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def folders(forget: str | None, as_json: bool) -> None:
    """The session folders the memory holds memories of: the ones configured, and the ones no longer configured
    (kept, searchable). `--forget FOLDER` removes the memories of a folder no longer configured."""
    # Imported here: the CLI loads every command's module at start, and `--help` must stay quick.
    from memory_pipeline.settings import load_settings
    from memory_pipeline.stores.elasticsearch import make_client
    from memory_pipeline.stores.folders import configured_folders, forget_folder, recorded_folders

    settings = load_settings()
    configured = configured_folders(settings)
    with make_client(settings) as es:
        if forget is not None:
            if forget in configured:
                raise click.ClickException(f"{forget} is configured: its memories would come back on the next run")
            sessions, documents = forget_folder(es, forget)
            click.echo(json.dumps({"folder": forget, "sessions": sessions, "documents": documents}) if as_json
                       else f"{forget}: {sessions} session(s), {documents} document(s) removed")  # fmt: skip
            return
        rows = recorded_folders(es, configured)
    if as_json:
        click.echo(json.dumps([r.model_dump() for r in rows], indent=2))
        return
    for row in rows:
        state = "configured" if row.configured else "no longer configured (kept; --forget to remove)"
        click.echo(f"{row.folder}  {row.sessions} session(s)  {state}")
