"""The commands of the runtime: the local servers (`local up|down|status`), everything in the background
(`up`, `down`, `status`, the hidden `supervise`), and `dev` (the Dagster UI in the foreground). Registered on
the command line by `memory_pipeline.cli`; only click at the top."""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING

import click

from memory_pipeline.commands.common import PROJECT_DIR, SAMPLE_SESSIONS, echo_progress, load, local_runtime, run
from memory_pipeline.ports import SERVICE_PORT, UI_PORT

if TYPE_CHECKING:
    from memory_pipeline.local.runtime import ServiceStatus
    from memory_pipeline.settings import ServiceName, Settings

SERVICES: tuple[ServiceName, ...] = ("elasticsearch", "chat", "embed", "postgres")


def table(rows: list[ServiceStatus]) -> str:
    headers = ["server", "url", "state", "pid", "rss", "version", "model", "health"]
    cells = [
        [
            r.name,
            r.url,
            r.state,
            str(r.pid or "-"),
            f"{r.rss_mb:.0f} MB" if r.rss_mb else "-",
            r.version,
            r.model,
            r.health,
        ]
        for r in rows
    ]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(lines)


@click.group()
def local() -> None:
    """The embedded default: real Elasticsearch and llama-servers on 127.0.0.1."""


only_option = click.option(
    "--only", "only", multiple=True, type=click.Choice(SERVICES), help="Limit to these servers (repeatable)."
)


@local.command()
@only_option
@click.option(
    "--nodes",
    type=click.IntRange(1, 5),
    default=None,
    help="Run Elasticsearch as this many nodes (3: a cluster with one replica of every index); remembered "
    "until changed. Default: as last time, else 1.",
)
@click.option(
    "--postgres/--sqlite",
    "postgres",
    default=None,
    help="Keep Dagster's runs, events and schedules in a local PostgreSQL (Debian's, installed if missing), or "
    "in SQLite under DAGSTER_HOME; remembered until changed. Default: as last time, else SQLite.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the servers' status as JSON.")
def up(only: tuple[ServiceName, ...], nodes: int | None, postgres: bool | None, as_json: bool) -> None:
    """Start the local servers that are not running (idempotent); wait until ready."""
    settings = load()
    if nodes is not None:
        settings = settings.model_copy(update={"local_es_nodes": nodes})
    if postgres is not None:
        settings = settings.model_copy(update={"local_postgres": postgres})
        # Remembered, so every later command keeps Dagster's storage where this one put it.
        settings.postgres_choice_path.parent.mkdir(parents=True, exist_ok=True)
        settings.postgres_choice_path.write_text("postgres\n" if postgres else "sqlite\n")
    runtime = local_runtime(settings, echo_progress)
    rows = run(lambda: runtime.up(only or None))
    click.echo(json.dumps([r.model_dump() for r in rows], indent=2) if as_json else table(rows))
    if not as_json and any(r.name == "elasticsearch" for r in rows):
        click.echo(_reach_elasticsearch(settings))


def _reach_elasticsearch(settings: Settings) -> str:
    """How a person reaches the local Elasticsearch: security is on, its password in an owner-only file."""
    from memory_pipeline.settings import LOCAL_ES_USER

    path = settings.es_password_path
    return (
        f"elasticsearch: user {LOCAL_ES_USER!r}, password in {path} (owner-only); e.g.\n"
        f'  curl -u "{LOCAL_ES_USER}:$(cat {path})" {settings.elasticsearch_url}/_cat/indices'
    )


@local.command()
@only_option
@click.option("--json", "as_json", is_flag=True, help="Print the stopped servers as JSON.")
def down(only: tuple[ServiceName, ...], as_json: bool) -> None:
    """Stop the servers `up` started (and nothing else)."""
    stopped = run(lambda: local_runtime(load(), echo_progress).down(only or None))
    if as_json:
        click.echo(json.dumps({"stopped": stopped}))
    else:
        click.echo(f"stopped: {', '.join(stopped)}" if stopped else "nothing was running")


@local.command()
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def status(as_json: bool) -> None:
    """Each server: URL, state, PID, memory, version, model and health."""
    rows = local_runtime(load()).status()
    click.echo(json.dumps([r.model_dump() for r in rows], indent=2) if as_json else table(rows))


@click.command()
@click.option("--port", default=UI_PORT, show_default=True, help="Port of the Dagster UI (bound to 127.0.0.1).")
@click.option("--no-local", is_flag=True, help="Do not start the local runtime first.")
def dev(port: int, no_local: bool) -> None:
    """Bring the local runtime up, then open the Dagster UI with the pipeline loaded. Ctrl-C stops what it
    started and exits 0, quietly: it is how `dev` ends, not an error (as for `dagster dev` itself), and `make
    run` reports no error for it."""
    from memory_pipeline.local.supervise import Part, interrupted_once, run_in_foreground, uninterrupted

    settings = load()
    runtime = local_runtime(settings, echo_progress)
    before = set() if no_local else runtime.running()
    code = 0
    with interrupted_once():
        try:
            if not no_local:
                click.echo(table(run(runtime.up)))
            env = _part_env(settings)
            sessions = env.get("SESSIONS_DIR", settings.sessions_dir)
            click.echo(f"Dagster UI on http://127.0.0.1:{port} (sessions: {sessions})", err=True)
            workspace = str(PROJECT_DIR / "workspace.yaml")
            # Dagster's command line after the package's filter: no "dagster dev is superseded" on every start.
            dagster = [sys.executable, "-m", "memory_pipeline.local.dagster_cli"]
            ui = Part("dagster-ui", [], port, f"http://127.0.0.1:{port}/server_info")
            code = run_in_foreground(
                [*dagster, "dev", "-w", workspace, "-h", "127.0.0.1", "-p", str(port)], env, started=ui.healthy
            )
        except KeyboardInterrupt:  # while the servers start; once Dagster runs, Ctrl-C stops it instead
            click.echo("", err=True)  # a new line after the terminal's "^C"
        finally:
            with uninterrupted():
                # Ctrl-C stops what this command started (also half way), and leaves running what ran before it.
                started = sorted({_kind(name) for name in runtime.running() - before}) if not no_local else []
                if started:
                    click.echo(f"stopping the servers this command started: {', '.join(started)}", err=True)
                    runtime.down(started)
    sys.exit(code)


def _kind(name: str) -> ServiceName:
    """The kind of a server from its name (`elasticsearch-2`, a second node, is Elasticsearch)."""
    return name.split("-")[0]  # type: ignore[return-value]


def _part_env(settings: Settings) -> dict[str, str]:
    """The environment of Dagster and the service: DAGSTER_HOME prepared (the project's dagster.yaml is the
    source of truth; DAGSTER_HOME only holds run history), and the sample sessions named when they stand in."""
    from memory_pipeline.instance import prepare_dagster_home

    run(lambda: prepare_dagster_home(settings))  # exports DAGSTER_HOME (and the storage URL)
    env = dict(os.environ)
    if settings.sessions_dir == SAMPLE_SESSIONS:
        env["SESSIONS_DIR"] = str(SAMPLE_SESSIONS)
        click.echo("~/.pi/agent/sessions does not exist: using the sample sessions in data/sessions", err=True)
    return env


ports = [
    click.option("--port", default=SERVICE_PORT, show_default=True, help="Port of the memory service (127.0.0.1)."),
    click.option("--ui-port", default=UI_PORT, show_default=True, help="Port of the Dagster UI (127.0.0.1)."),
]


def _with_ports(command):  # noqa: ANN001, ANN202
    for option in reversed(ports):
        command = option(command)
    return command


@click.command(name="up")
@_with_ports
@click.option("--no-local", is_flag=True, help="Leave the servers alone (your own, or started already).")
@click.option("--json", "as_json", is_flag=True, help="Print every part's status as JSON.")
def up_all(port: int, ui_port: int, no_local: bool, as_json: bool) -> None:
    """Start everything the memory needs in the background and return: the local servers, then the memory
    service, Dagster's daemon (sensor, schedules) and its UI, kept running by a supervisor that restarts a part
    that dies (logged in <state>/logs/supervisor.log). Idempotent; `down` stops it all."""
    from memory_pipeline.local.supervise import start_all

    settings = load()
    if not no_local:
        run(local_runtime(settings, echo_progress).up)
    env = _part_env(settings)
    run(lambda: start_all(settings, env, port, ui_port, echo_progress, servers=not no_local))
    rows = _all_status(settings)
    click.echo(json.dumps([r.model_dump() for r in rows], indent=2) if as_json else table(rows))


@click.command(name="down")
@click.option("--keep-servers", is_flag=True, help="Stop the service and Dagster only; leave the servers running.")
@click.option("--json", "as_json", is_flag=True, help="Print what was stopped as JSON.")
def down_all(keep_servers: bool, as_json: bool) -> None:
    """Stop exactly what `up` started: the supervisor and its parts, then the local servers."""
    from memory_pipeline.local.supervise import stop_all

    settings = load()
    stopped = stop_all(settings, echo_progress)
    if not keep_servers:
        stopped += run(lambda: local_runtime(settings, echo_progress).down())
    if as_json:
        click.echo(json.dumps({"stopped": stopped}))
    else:
        click.echo(f"stopped: {', '.join(stopped)}" if stopped else "nothing was running")


@click.command(name="status")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def status_all(as_json: bool) -> None:
    """Every part of the memory: the servers, the supervisor, the service, Dagster's daemon and UI, with URL,
    state, PID, memory and health."""
    rows = _all_status(load())
    click.echo(json.dumps([r.model_dump() for r in rows], indent=2) if as_json else table(rows))


def _all_status(settings: Settings) -> list[ServiceStatus]:
    from memory_pipeline.local.supervise import parts_status

    return local_runtime(settings).status() + parts_status(settings)


@click.command(hidden=True)
@_with_ports
@click.option("--servers", is_flag=True, help="Start again a local server `up` started that died.")
def supervise(port: int, ui_port: int, servers: bool) -> None:
    """The supervisor `up` starts (not for direct use)."""
    from memory_pipeline.local.supervise import parts, timestamped
    from memory_pipeline.local.supervise import supervise as keep_running

    settings = load()
    log = timestamped(settings.memory_pipeline_state_dir / "logs" / "supervisor.log")
    keep_running(settings, dict(os.environ), parts(port, ui_port), log, servers=servers)
