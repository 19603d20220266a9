"""`memory-pipeline export` and `memory-pipeline import` (the formats: control/portable.py)."""

from __future__ import annotations

from pathlib import Path

import click


@click.command(name="export")
@click.option(
    "--format",
    "form",
    type=click.Choice(["jsonl", "markdown"]),
    default="jsonl",
    show_default=True,
    help="jsonl: everything, for `import`; markdown: to read.",
)
@click.option("--vectors", is_flag=True, help="Include each memory's vector (else the importing home embeds again).")
@click.option("--project", help="Only this project's memories (its path, as in the sessions).")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), help="Write here (default: stdout).")
@click.option(
    "--rules-to",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Instead: write --project's promoted rules (MEMORY.md) into this AGENTS.md or CLAUDE.md, in a marked block.",
)
def export_command(form: str, vectors: bool, project: str | None, output: Path | None, rules_to: Path | None) -> None:
    """Export the memory: memories with their ids, kinds, evidence and citations, people's edits and forgets,
    and each project's MEMORY.md."""
    from memory_pipeline.control.portable import export_lines, markdown, parse_lines, promoted_rules, with_rules
    from memory_pipeline.reflect.workspace import project_dir
    from memory_pipeline.settings import load_settings
    from memory_pipeline.stores.memory_store import open_store

    settings = load_settings()
    if rules_to is not None:
        if not project:
            raise click.ClickException("--rules-to needs --project: whose rules to write")
        memory = project_dir(settings.memory_workspace, project) / "MEMORY.md"
        rules = promoted_rules(memory.read_text(encoding="utf-8")) if memory.exists() else []
        if not rules:
            raise click.ClickException(f"{project} has no promoted rules yet ({memory}): nothing written")
        before = rules_to.read_text(encoding="utf-8") if rules_to.exists() else ""
        rules_to.write_text(with_rules(before, rules, project), encoding="utf-8")
        click.echo(f"{rules_to}: {len(rules)} rules of {project}", err=True)
        return
    with open_store(settings) as store:
        lines = list(export_lines(store, settings.memory_workspace, vectors=vectors, project=project))
    text = markdown(parse_lines(lines, "export")) if form == "markdown" else "\n".join(lines) + "\n"
    if output is None:
        click.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
    memories = sum(1 for line in lines if line.startswith('{"type":"memory"'))
    click.echo(f"exported {memories} memories{' to ' + str(output) if output else ''}", err=True)


@click.command(name="import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def import_command(file: Path) -> None:
    """Import FILE (written by `export`, JSON Lines) into this memory: memories by their ids (importing twice
    stores once), embedded again when the vectors are not this home's model's; corrections and MEMORY.md files
    it lacks. A bad line is named and nothing is written."""
    from memory_pipeline.control.portable import BadExport, import_lines
    from memory_pipeline.settings import load_settings
    from memory_pipeline.stores.memory_store import open_store

    settings = load_settings()
    try:
        with open_store(settings) as store, file.open(encoding="utf-8") as lines:
            report = import_lines(store, settings.memory_workspace, lines, str(file))
    except BadExport as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(
        f"imported {report.memories} memories ({report.embedded} embedded), {report.corrections} corrections, "
        f"{report.files} MEMORY.md files"
    )
    for path in report.kept_files:
        click.echo(f"kept {path}: it differs from the imported one (the imported one was not written)")
