"""`memory-pipeline install | uninstall <agent>`: an agent's hooks, MCP entry or extension, set up in one
command and taken out exactly (control/agents.py plans the edits, control/setup.py applies and restores)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from memory_pipeline.control.agents import AGENTS, Place, SetupError
from memory_pipeline.ports import SERVICE_PORT

CHECKOUT = Path(__file__).resolve().parents[2]


def _place() -> tuple[Place, Path]:
    from memory_pipeline.settings import load_settings

    settings = load_settings()
    pi_dir = os.environ.get("PI_CODING_AGENT_DIR")
    service = os.environ.get("MEMORY_SERVICE_URL", f"http://127.0.0.1:{SERVICE_PORT}")
    place = Place(
        home=Path.home(),
        checkout=CHECKOUT,
        token_file=settings.service_token_path,
        service_url=service,
        pi_dir=Path(pi_dir).expanduser() if pi_dir else None,
    )
    return place, settings.memory_pipeline_state_dir


@click.command(name="install")
@click.argument("agent", type=click.Choice(AGENTS))
def install_command(agent: str) -> None:
    """Set AGENT up to use the memory: Claude Code's hooks and MCP entry, Codex's MCP entry, or pi's extension
    with the service's token file. Prints each file it changed; `uninstall AGENT` puts them back as they were."""
    from memory_pipeline.control.setup import install

    place, state = _place()
    try:
        lines = install(agent, place, state)  # type: ignore[arg-type]
    except SetupError as exc:
        raise click.ClickException(str(exc)) from None
    for line in lines:
        click.echo(line)
    if not lines:
        click.echo(f"{agent} is set up already: nothing changed")
    elif agent == "pi":
        click.echo(f"start the service for pi with: uv run --project {place.checkout} memory-pipeline up")


@click.command(name="uninstall")
@click.argument("agent", type=click.Choice(AGENTS))
def uninstall_command(agent: str) -> None:
    """Undo `install AGENT`: every file it changed as it was before (or, when the agent changed the file since,
    only the memory's entries taken out). Prints each file it restored."""
    from memory_pipeline.control.setup import uninstall

    place, state = _place()
    try:
        lines = uninstall(agent, place, state)  # type: ignore[arg-type]
    except SetupError as exc:
        raise click.ClickException(str(exc)) from None
    for line in lines:
        click.echo(line)
    if not lines:
        click.echo(f"{agent}: nothing of the memory's set-up found, nothing changed")
