"""`memory-pipeline`: the local runtime and the Dagster UI from one command line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import click

from memory_pipeline.local.process import RuntimeProblem
from memory_pipeline.local.runtime import LocalRuntime, ServiceStatus
from memory_pipeline.settings import ConfigError, ServiceName, Settings, load_settings

SERVICES: tuple[ServiceName, ...] = ("elasticsearch", "chat", "embed")
PROJECT_DIR = Path(__file__).resolve().parents[1]


def _settings() -> Settings:
    try:
        return load_settings()
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None


def _echo_progress(message: str) -> None:
    click.echo(message, err=True)


def _table(rows: list[ServiceStatus]) -> str:
    headers = ["server", "url", "state", "pid", "rss", "version", "model", "health"]
    cells = [[r.name, r.url, r.state, str(r.pid or "-"), f"{r.rss_mb:.0f} MB" if r.rss_mb else "-",
              r.version, r.model, r.health] for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(lines)


@click.group()
def main() -> None:
    """Persistent memory for coding agents: ingest pi sessions, summarise, search."""


@main.group()
def local() -> None:
    """The embedded default: real Elasticsearch and llama-servers on 127.0.0.1."""


only_option = click.option("--only", "only", multiple=True, type=click.Choice(SERVICES),
                           help="Limit to these servers (repeatable).")


def _run(action):  # noqa: ANN001, ANN202 - tiny local decorator
    try:
        return action()
    except RuntimeProblem as exc:
        raise click.ClickException(str(exc)) from None


@local.command()
@only_option
@click.option("--json", "as_json", is_flag=True, help="Print the servers' status as JSON.")
def up(only: tuple[ServiceName, ...], as_json: bool) -> None:
    """Start the local servers that are not running (idempotent); wait until ready."""
    runtime = LocalRuntime(_settings(), progress=_echo_progress)
    rows = _run(lambda: runtime.up(only or None))
    click.echo(json.dumps([r.model_dump() for r in rows], indent=2) if as_json else _table(rows))


@local.command()
@only_option
def down(only: tuple[ServiceName, ...]) -> None:
    """Stop the servers `up` started (and nothing else)."""
    stopped = _run(lambda: LocalRuntime(_settings(), progress=_echo_progress).down(only or None))
    click.echo(f"stopped: {', '.join(stopped)}" if stopped else "nothing was running")


@local.command()
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def status(as_json: bool) -> None:
    """Each server: URL, state, PID, memory, version, model and health."""
    rows = LocalRuntime(_settings()).status()
    click.echo(json.dumps([r.model_dump() for r in rows], indent=2) if as_json else _table(rows))


@main.command()
@click.option("--port", default=3000, show_default=True, help="Port of the Dagster UI (bound to 127.0.0.1).")
@click.option("--no-local", is_flag=True, help="Do not start the local runtime first.")
def dev(port: int, no_local: bool) -> None:
    """Bring the local runtime up, then open the Dagster UI with the pipeline loaded."""
    settings = _settings()
    if not no_local:
        click.echo(_table(_run(lambda: LocalRuntime(settings, progress=_echo_progress).up())))
    env = dict(os.environ)
    if "sessions_dir" not in settings.model_fields_set and not settings.sessions_dir.exists():
        env["SESSIONS_DIR"] = str(PROJECT_DIR / "data" / "sessions")
        click.echo(f"{settings.sessions_dir} does not exist: using the sample sessions in data/sessions", err=True)
    env.setdefault("DAGSTER_HOME", str(settings.memory_pipeline_state_dir / "dagster"))
    Path(env["DAGSTER_HOME"]).mkdir(parents=True, exist_ok=True)
    # The project's dagster.yaml is the source of truth; DAGSTER_HOME only holds run history.
    (Path(env["DAGSTER_HOME"]) / "dagster.yaml").write_text((PROJECT_DIR / "dagster.yaml").read_text())
    click.echo(f"Dagster UI on http://127.0.0.1:{port} (sessions: {env.get('SESSIONS_DIR', settings.sessions_dir)})",
               err=True)
    argv = [sys.executable, "-m", "dagster", "dev", "-w", str(PROJECT_DIR / "workspace.yaml"),
            "-h", "127.0.0.1", "-p", str(port)]
    # dagster dev in a child ignores SIGINT/SIGTERM unless it leads its own process group.
    proc = subprocess.Popen(argv, env=env, cwd=PROJECT_DIR, start_new_session=True)
    try:
        sys.exit(proc.wait())
    except KeyboardInterrupt:
        os.killpg(proc.pid, signal.SIGTERM)
        sys.exit(proc.wait())


@main.command()
def config() -> None:
    """Print the effective configuration (secrets masked)."""
    settings = _settings()
    shown = settings.model_dump(mode="json")
    if shown.get("es_api_key"):
        shown["es_api_key"] = "***"
    shown |= {"effective_elasticsearch_url": settings.elasticsearch_url, "effective_chat_url": settings.chat_url,
              "effective_embeddings_url": settings.embeddings_url}
    click.echo(json.dumps(shown, indent=2))
