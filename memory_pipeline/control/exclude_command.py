"""`memory-pipeline exclude add|remove|list` (sessions/exclude_list.py: the same file as the browser's Excluded
page) and `memory-pipeline purge-excluded` (control/exclusions.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import click


@click.group(name="exclude")
def exclude_group() -> None:
    """Projects and folders kept out of the memory: MEMORY_EXCLUDE's (settings) and your own
    (<state>/exclusions.json, shared with the browser's Excluded page). Their sessions are never read from the
    next run on; `purge-excluded` removes what was stored of them before."""


def _file() -> Path:
    """The settings' exclusions file."""
    from memory_pipeline.sessions.exclude_list import exclusions_path
    from memory_pipeline.settings import load_settings

    return exclusions_path(load_settings())


@exclude_group.command(name="add")
@click.argument("pattern")
def exclude_add(pattern: str) -> None:
    """Keep PATTERN out: a project folder (and all below: ~/clients/acme) or a glob (/work/secret-*)."""
    from memory_pipeline.sessions.exclude_list import ExclusionsFileError, add_exclusion

    path = _file()
    try:
        added = add_exclusion(path, pattern)
    except (ValueError, ExclusionsFileError) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"{'excluded' if added else 'already excluded'}: {pattern.strip()} (in {path})")
    click.echo("run `memory-pipeline purge-excluded` to remove what was stored of it before")


@exclude_group.command(name="remove")
@click.argument("pattern")
def exclude_remove(pattern: str) -> None:
    """Read PATTERN's projects again from the next run (what was purged does not come back by itself)."""
    from memory_pipeline.sessions.exclude_list import ExclusionsFileError, remove_exclusion
    from memory_pipeline.settings import load_settings

    path = _file()
    try:
        found = remove_exclusion(path, pattern)
    except ExclusionsFileError as exc:
        raise click.ClickException(str(exc)) from None
    if not found:
        where = (
            " (it is in MEMORY_EXCLUDE: change it there)" if pattern.strip() in load_settings().memory_exclude else ""
        )
        raise click.ClickException(f"{pattern.strip()!r} is not in {path}{where}")
    click.echo(f"no longer excluded: {pattern.strip()}")


@exclude_group.command(name="list")
def exclude_list() -> None:
    """Every pattern that keeps a project out, and where it comes from."""
    from memory_pipeline.sessions.exclude_list import ExclusionsFileError, exclusions_path, read_exclusions
    from memory_pipeline.settings import load_settings

    settings = load_settings()
    path = exclusions_path(settings)
    try:
        added = read_exclusions(path)
    except ExclusionsFileError as exc:
        raise click.ClickException(str(exc)) from None
    for pattern in settings.memory_exclude:
        click.echo(f"{pattern}\tMEMORY_EXCLUDE")
    for exclusion in added.exclusions:
        click.echo(f"{exclusion.pattern}\t{path.name} (added {exclusion.added_at[:19]})")
    if not settings.memory_exclude and not added.exclusions:
        click.echo("nothing is excluded")


@click.command(name="purge-excluded")
@click.option("--with-files", is_flag=True, help="Also delete their folders in the memory workspace (MEMORY.md, logs).")
def purge_excluded_command(with_files: bool) -> None:
    """Remove what is stored of the excluded projects (MEMORY_EXCLUDE's and `exclude add`'s): their messages,
    memories, notes and reflections in every index. Their workspace folders (MEMORY.md, daily logs) are listed,
    and deleted with --with-files."""
    from memory_pipeline.control.exclusions import purge_excluded
    from memory_pipeline.reflect.workspace import project_of
    from memory_pipeline.sessions.exclude import excluded
    from memory_pipeline.sessions.exclude_list import ExclusionsFileError, exclusion_patterns
    from memory_pipeline.settings import load_settings

    settings = load_settings()
    try:
        patterns = exclusion_patterns(settings)
    except ExclusionsFileError as exc:
        raise click.ClickException(str(exc)) from None
    if not patterns:
        raise click.ClickException(
            "nothing is excluded: name the projects to keep out first with `memory-pipeline exclude add` or "
            "MEMORY_EXCLUDE (docs/configuration.md)"
        )
    projects, removed = purge_excluded(settings)
    click.echo(f"removed {removed} documents of {len(projects)} excluded projects")
    for project in projects:
        click.echo(f"  {project}")
    workspace = settings.memory_workspace
    folders = [f for f in sorted(workspace.iterdir()) if f.is_dir()] if workspace.is_dir() else []
    for folder in folders:
        if excluded(project_of(folder), patterns):
            if with_files:
                shutil.rmtree(folder)
                click.echo(f"deleted {folder}")
            else:
                click.echo(f"kept {folder} (its MEMORY.md and logs): delete it, or run again with --with-files")
