"""`memory-pipeline purge-excluded` (control/exclusions.py)."""

from __future__ import annotations

import shutil

import click


@click.command(name="purge-excluded")
@click.option("--with-files", is_flag=True, help="Also delete their folders in the memory workspace (MEMORY.md, logs).")
def purge_excluded_command(with_files: bool) -> None:
    """Remove what is stored of the projects MEMORY_EXCLUDE names: their messages, memories, notes and
    reflections in every index. Their workspace folders (MEMORY.md, daily logs) are listed, and deleted with
    --with-files."""
    from memory_pipeline.control.exclusions import purge
    from memory_pipeline.reflect.workspace import project_of
    from memory_pipeline.sessions.exclude import excluded
    from memory_pipeline.settings import load_settings
    from memory_pipeline.stores.elasticsearch import make_client

    settings = load_settings()
    if not settings.memory_exclude:
        raise click.ClickException(
            "MEMORY_EXCLUDE is empty: name the projects to keep out first (docs/configuration.md)"
        )
    with make_client(settings) as es:
        projects, removed = purge(es, settings.memory_exclude, settings.memory_pipeline_state_dir / "parsed")
    click.echo(f"removed {removed} documents of {len(projects)} excluded projects")
    for project in projects:
        click.echo(f"  {project}")
    workspace = settings.memory_workspace
    folders = [f for f in sorted(workspace.iterdir()) if f.is_dir()] if workspace.is_dir() else []
    for folder in folders:
        if excluded(project_of(folder), settings.memory_exclude):
            if with_files:
                shutil.rmtree(folder)
                click.echo(f"deleted {folder}")
            else:
                click.echo(f"kept {folder} (its MEMORY.md and logs): delete it, or run again with --with-files")
