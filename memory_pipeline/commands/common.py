"""What every command shares: the settings as a command reads them, a runtime problem as one line, progress
on stderr. Only click at the top (see `memory_pipeline.cli`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

if TYPE_CHECKING:
    from memory_pipeline.local.runtime import LocalRuntime
    from memory_pipeline.settings import Settings

PROJECT_DIR = Path(__file__).resolve().parents[2]
SAMPLE_SESSIONS = PROJECT_DIR / "data" / "sessions"
T = TypeVar("T")


def load(**overrides: object) -> Settings:
    """The configuration (with a command's `overrides`, e.g. its options); with no SESSIONS_DIR and no
    `~/.pi/agent/sessions`, the sample sessions (as `make run` has it, for every command). A SESSIONS_DIR that
    is set must exist."""
    from memory_pipeline.settings import ConfigError, load_settings

    try:
        settings = load_settings(**overrides)
        if "sessions_dir" in settings.model_fields_set:
            if not settings.sessions_dir.is_dir():
                raise click.ClickException(
                    f"SESSIONS_DIR={settings.sessions_dir} does not exist: set it to the folder pi writes sessions "
                    "to (~/.pi/agent/sessions), or unset it"
                )
            return settings
        if not settings.sessions_dir.exists() and SAMPLE_SESSIONS.is_dir():
            return load_settings(**overrides, sessions_dir=SAMPLE_SESSIONS)
        return settings
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None


def run(action: Callable[[], T]) -> T:
    """`action`'s result; a problem of the local runtime is one line that names it."""
    from memory_pipeline.local.process import RuntimeProblem

    try:
        return action()
    except RuntimeProblem as exc:
        raise click.ClickException(str(exc)) from None


def echo_progress(message: str) -> None:
    click.echo(message, err=True)


def local_runtime(settings: Settings, progress: Callable[[str], None] = print) -> LocalRuntime:
    """The local runtime (imported when a command needs it: `--help` and searches stay light)."""
    from memory_pipeline.local.runtime import LocalRuntime

    return LocalRuntime(settings, progress=progress)
