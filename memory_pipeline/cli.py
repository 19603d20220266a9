"""`memory-pipeline`: the local runtime and the Dagster UI from one command line."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

import click

from memory_pipeline.limits import MAX_K, MAX_TOKENS, MAX_WINDOW, MIN_TOKENS
from memory_pipeline.ports import SERVICE_PORT, UI_PORT

# Only click at the top: `--help` and the commands that ask the service load nothing else (settings, pydantic,
# Dagster and the clients are imported by the commands that need them).
if TYPE_CHECKING:
    from memory_pipeline.local.runtime import LocalRuntime, ServiceStatus
    from memory_pipeline.settings import ServiceName, Settings

PROJECT_DIR = Path(__file__).resolve().parents[1]

SERVICES: tuple[ServiceName, ...] = ("elasticsearch", "chat", "embed", "postgres")


def _runtime(settings: Settings, progress: Callable[[str], None] = print) -> LocalRuntime:
    """The local runtime (imported when a command needs it: `--help` and searches stay light)."""
    from memory_pipeline.local.runtime import LocalRuntime

    return LocalRuntime(settings, progress=progress)


SAMPLE_SESSIONS = PROJECT_DIR / "data" / "sessions"


def _settings() -> Settings:
    """The configuration; with no SESSIONS_DIR and no `~/.pi/agent/sessions`, the sample sessions (as `make
    run` has it, for every command). A SESSIONS_DIR that is set must exist."""
    from memory_pipeline.settings import ConfigError, load_settings

    try:
        settings = load_settings()
        if "sessions_dir" in settings.model_fields_set:
            if not settings.sessions_dir.is_dir():
                raise click.ClickException(
                    f"SESSIONS_DIR={settings.sessions_dir} does not exist: set it to the folder pi writes sessions "
                    "to (~/.pi/agent/sessions), or unset it"
                )
            return settings
        if not settings.sessions_dir.exists() and SAMPLE_SESSIONS.is_dir():
            return load_settings(sessions_dir=SAMPLE_SESSIONS)
        return settings
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None


class _OneLineErrors(click.Group):
    """A server that is down is one line that names it and the fix, not a 60-line traceback; with `--json`, the
    error is JSON on stdout too (`{"error": ...}`), so a script reading the output gets a reason it can parse."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["json"] = "--json" in args
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> object:
        try:
            try:
                return super().invoke(ctx)
            except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
                raise
            except Exception as exc:
                # Imported only on failure: the search clients are heavy, and most commands never need them.
                from memory_pipeline.search.open import DOWN, unavailable
                from memory_pipeline.settings import load_settings

                if isinstance(exc, DOWN):
                    raise click.ClickException(unavailable(exc, load_settings()) or str(exc)) from None
                raise
        except click.ClickException as exc:
            if ctx.meta.get("json"):
                click.echo(json.dumps({"error": exc.format_message()}))
            raise


def _echo_progress(message: str) -> None:
    click.echo(message, err=True)


def _table(rows: list[ServiceStatus]) -> str:
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


@click.group(cls=_OneLineErrors)
def main() -> None:
    """Persistent memory for coding agents: ingest pi sessions, summarise, search."""


@main.group()
def local() -> None:
    """The embedded default: real Elasticsearch and llama-servers on 127.0.0.1."""


only_option = click.option(
    "--only", "only", multiple=True, type=click.Choice(SERVICES), help="Limit to these servers (repeatable)."
)


def _run(action):  # noqa: ANN001, ANN202 - tiny local decorator
    from memory_pipeline.local.process import RuntimeProblem

    try:
        return action()
    except RuntimeProblem as exc:
        raise click.ClickException(str(exc)) from None


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
    settings = _settings()
    if nodes is not None:
        settings = settings.model_copy(update={"local_es_nodes": nodes})
    if postgres is not None:
        settings = settings.model_copy(update={"local_postgres": postgres})
        # Remembered, so every later command keeps Dagster's storage where this one put it.
        settings.postgres_choice_path.parent.mkdir(parents=True, exist_ok=True)
        settings.postgres_choice_path.write_text("postgres\n" if postgres else "sqlite\n")
    runtime = _runtime(settings, _echo_progress)
    rows = _run(lambda: runtime.up(only or None))
    click.echo(json.dumps([r.model_dump() for r in rows], indent=2) if as_json else _table(rows))
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
    stopped = _run(lambda: _runtime(_settings(), _echo_progress).down(only or None))
    if as_json:
        click.echo(json.dumps({"stopped": stopped}))
    else:
        click.echo(f"stopped: {', '.join(stopped)}" if stopped else "nothing was running")


@local.command()
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def status(as_json: bool) -> None:
    """Each server: URL, state, PID, memory, version, model and health."""
    rows = _runtime(_settings()).status()
    click.echo(json.dumps([r.model_dump() for r in rows], indent=2) if as_json else _table(rows))


@main.command()
@click.option("--port", default=UI_PORT, show_default=True, help="Port of the Dagster UI (bound to 127.0.0.1).")
@click.option("--no-local", is_flag=True, help="Do not start the local runtime first.")
def dev(port: int, no_local: bool) -> None:
    """Bring the local runtime up, then open the Dagster UI with the pipeline loaded. Ctrl-C stops what it
    started and exits 0, quietly: it is how `dev` ends, not an error (as for `dagster dev` itself), and `make
    run` reports no error for it."""
    from memory_pipeline.local.supervise import Part, interrupted_once, run_in_foreground, uninterrupted

    settings = _settings()
    runtime = _runtime(settings, _echo_progress)
    before = set() if no_local else runtime.running()
    code = 0
    with interrupted_once():
        try:
            if not no_local:
                click.echo(_table(_run(runtime.up)))
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

    _run(lambda: prepare_dagster_home(settings))  # exports DAGSTER_HOME (and the storage URL)
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


@main.command(name="up")
@_with_ports
@click.option("--no-local", is_flag=True, help="Leave the servers alone (your own, or started already).")
@click.option("--json", "as_json", is_flag=True, help="Print every part's status as JSON.")
def up_all(port: int, ui_port: int, no_local: bool, as_json: bool) -> None:
    """Start everything the memory needs in the background and return: the local servers, then the memory
    service, Dagster's daemon (sensor, schedules) and its UI, kept running by a supervisor that restarts a part
    that dies (logged in <state>/logs/supervisor.log). Idempotent; `down` stops it all."""
    from memory_pipeline.local.supervise import start_all

    settings = _settings()
    if not no_local:
        _run(_runtime(settings, _echo_progress).up)
    env = _part_env(settings)
    _run(lambda: start_all(settings, env, port, ui_port, _echo_progress, servers=not no_local))
    rows = _all_status(settings)
    click.echo(json.dumps([r.model_dump() for r in rows], indent=2) if as_json else _table(rows))


@main.command(name="down")
@click.option("--keep-servers", is_flag=True, help="Stop the service and Dagster only; leave the servers running.")
@click.option("--json", "as_json", is_flag=True, help="Print what was stopped as JSON.")
def down_all(keep_servers: bool, as_json: bool) -> None:
    """Stop exactly what `up` started: the supervisor and its parts, then the local servers."""
    from memory_pipeline.local.supervise import stop_all

    settings = _settings()
    stopped = stop_all(settings, _echo_progress)
    if not keep_servers:
        stopped += _run(lambda: _runtime(settings, _echo_progress).down())
    if as_json:
        click.echo(json.dumps({"stopped": stopped}))
    else:
        click.echo(f"stopped: {', '.join(stopped)}" if stopped else "nothing was running")


@main.command(name="status")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def status_all(as_json: bool) -> None:
    """Every part of the memory: the servers, the supervisor, the service, Dagster's daemon and UI, with URL,
    state, PID, memory and health."""
    rows = _all_status(_settings())
    click.echo(json.dumps([r.model_dump() for r in rows], indent=2) if as_json else _table(rows))


def _all_status(settings: Settings) -> list[ServiceStatus]:
    from memory_pipeline.local.supervise import parts_status

    return _runtime(settings).status() + parts_status(settings)


@main.command(hidden=True)
@_with_ports
@click.option("--servers", is_flag=True, help="Start again a local server `up` started that died.")
def supervise(port: int, ui_port: int, servers: bool) -> None:
    """The supervisor `up` starts (not for direct use)."""
    from memory_pipeline.local.supervise import parts, timestamped
    from memory_pipeline.local.supervise import supervise as keep_running

    settings = _settings()
    log = timestamped(settings.memory_pipeline_state_dir / "logs" / "supervisor.log")
    keep_running(settings, dict(os.environ), parts(port, ui_port), log, servers=servers)


@main.command()
@click.option("--all", "everything", is_flag=True, help="Every day with sessions, not only the ones not done.")
@click.option("--start", help="First day (YYYY-MM-DD) to consider.")
@click.option("--end", help="Last day (YYYY-MM-DD) to consider.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan and each run's outcome as JSON.")
@click.option("--verbose", is_flag=True, help="Show the runs' whole event log (by default: warnings and errors).")
@click.option(
    "--no-llm",
    is_flag=True,
    help="Ingest and index without the chat model (MEMORY_PIPELINE_NO_LLM); a later backfill summarises the days.",
)
@click.option(
    "--chat-timeout",
    type=click.FloatRange(min=5),
    help="Seconds a chat request may wait for its answer, at least (LLAMA_TIMEOUT; default 300).",
)
def backfill(
    everything: bool,
    start: str | None,
    end: str | None,
    as_json: bool,
    verbose: bool,
    no_llm: bool,
    chat_timeout: float | None,
) -> None:
    """Run every day that has sessions and is not done: never run, failed, half done, a failed check, files
    changed since they were indexed (new, grown, rewritten, gone), turns that failed, or ingested without the
    chat model; the most recent first: the newest day alone, then runs of 2, 4, 8… days. Says why for each day."""
    from elasticsearch import ConnectionError as ElasticsearchConnectionError
    from rich.console import Console
    from rich.progress import Progress

    from memory_pipeline.backfill import newest_first_runs, plan_backfill, run_backfill
    from memory_pipeline.instance import open_instance
    from memory_pipeline.jobs import assets_to_run
    from memory_pipeline.partitions import ordered_days
    from memory_pipeline.sessions.discovery import agent_roots
    from memory_pipeline.stores.elasticsearch import make_client

    if chat_timeout is not None:  # before the settings (and the definitions built from them) are read
        os.environ["LLAMA_TIMEOUT"] = str(chat_timeout)
    settings = _settings()
    with_llm = not (no_llm or settings.memory_pipeline_no_llm)
    opened = ExitStack()
    instance = _run(lambda: opened.enter_context(open_instance(settings)))
    with opened:
        # What changed since the days were indexed is in Elasticsearch's file manifest and turn ledger.
        try:
            with make_client(settings, request_timeout=10, max_retries=1) as es:
                plan = plan_backfill(
                    instance, agent_roots(*settings.agent_folders), everything, start, end, es=es, with_llm=with_llm
                )
        except ElasticsearchConnectionError as exc:
            raise click.ClickException(
                f"Elasticsearch at {', '.join(settings.elasticsearch_hosts)} does not answer ({exc.message}): "
                "start it with `memory-pipeline local up`, or check ES_URL"
            ) from None
        for problem in plan.problems:
            click.echo(f"skipped {problem}", err=True)
        runs: list[dict[str, object]] = []
        report = {
            "days": len(plan.days),
            "todo": plan.todo,
            "why": plan.why,
            "with_llm": with_llm,
            "problems": [str(p) for p in plan.problems],
            "runs": runs,
        }
        if not plan.todo:
            if as_json:
                click.echo(json.dumps(report, indent=2))
                return
            click.echo(
                f"nothing to backfill under {settings.sessions_dir}: {len(plan.days)} day(s) with sessions, all done"
            )
            return
        ranges = newest_first_runs(plan.todo, ordered_days(instance))
        click.echo(
            f"backfilling {len(plan.todo)} of {len(plan.days)} day(s) in {len(ranges)} run(s)"
            + ("" if with_llm else ", without the chat model"),
            err=True,
        )
        for day in plan.todo:
            click.echo(f"  {day}: {'; '.join(plan.why[day])}", err=True)
        failed = 0
        # A bar per run on a terminal (steps done of the job's), with the turns read, left and the time to go
        # beside it (a plain line each when not a terminal); the event log only when asked (--verbose).
        console = Console(stderr=True)
        plain = not as_json and not console.is_terminal
        with Progress(
            *Progress.get_default_columns(), console=console, disable=as_json or not console.is_terminal
        ) as bar:
            for first, last in ranges:
                task = bar.add_task(f"{first}..{last}", total=None)

                def turns(line: str, task: int = task, days: str = f"{first}..{last}") -> None:
                    bar.update(task, description=f"{days} {line}")
                    if plain:
                        click.echo(f"{days} {line}", err=True)

                result = run_backfill(
                    instance,
                    first,
                    last,
                    on_step=lambda done, total, task=task: bar.update(task, completed=done, total=total),
                    on_turns=turns,
                    log_level="DEBUG" if verbose else "WARNING",
                    asset_selection=assets_to_run(with_llm),
                )
                bar.update(task, completed=bar.tasks[task].total or 1, total=bar.tasks[task].total or 1)
                # A failed check does not fail the run: it is said, never hidden behind "success".
                failed_checks = sorted({c.check_name for c in result.get_asset_check_evaluations() if not c.passed})
                runs.append(
                    {
                        "first": first,
                        "last": last,
                        "run_id": result.run_id,
                        "success": result.success,
                        "failed_checks": failed_checks,
                    }
                )
                if not as_json:  # the outcome is the command's output: stdout, whatever the bar does on stderr
                    outcome = "success" if result.success else "FAILED"
                    if failed_checks:
                        outcome += f", checks failed: {', '.join(failed_checks)}"
                    click.echo(f"{first}..{last}: run {result.run_id} {outcome}")
                failed += not result.success
    if as_json:
        click.echo(json.dumps(report, indent=2))
    if failed:
        sys.exit(1)


def _service(settings: Settings) -> str | None:
    from memory_pipeline.service.client import running_service

    return running_service(settings.memory_id)


def _ask(base: str, path: str, params: dict[str, object]):  # noqa: ANN202 - the service's Answer
    from memory_pipeline.service.client import ServiceRefused, ask

    try:
        return ask(base, path, params)
    except ServiceRefused as exc:
        raise click.ClickException(str(exc)) from None


def _search():  # noqa: ANN202 - a context manager of MemorySearch
    from memory_pipeline.search.open import open_search

    return open_search(_settings())


filter_options = [
    click.option("--project", help="Only this project (the session's working directory)."),
    click.option("--since", help="From this date (YYYY-MM-DD)."),
    click.option("--until", help="Up to this date (YYYY-MM-DD)."),
    click.option("--priority", multiple=True, type=click.Choice(["high", "medium", "low"])),
    click.option("--kind", multiple=True, type=click.Choice(["summary", "observation", "note"])),
    click.option("--agent", help="Only this coding agent's memories (pi, claude-code, codex, gemini-cli)."),
]
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


def _filters(project, since, until, priority, kind, agent=None):  # noqa: ANN001, ANN202
    from memory_pipeline.service.models import FilterParams

    asked = FilterParams(
        project=project, since=since, until=until, priority=list(priority), kind=list(kind), agent=agent
    )
    return asked.filters()


def _with_filters(command):  # noqa: ANN001, ANN202
    for option in reversed([*filter_options, json_option]):
        command = option(command)
    return command


def _print_rows(rows, as_json: bool, query: str | None = None, degraded: str | None = None, everything=False) -> None:  # noqa: ANN001
    from memory_pipeline.search.render import as_json as dumps
    from memory_pipeline.search.render import rows_text

    if degraded:
        click.echo(f"note: {degraded}", err=True)
    click.echo(dumps([r.to_dict() for r in rows]) if as_json else rows_text(rows, query=query, everything=everything))


@main.command()
@click.argument("query")
@click.option("--k", default=10, show_default=True, type=click.IntRange(1, MAX_K), help="How many results at most.")
@click.option("--mode", type=click.Choice(["hybrid", "bm25", "knn"]), default="hybrid", show_default=True)
@click.option("--all", "everything", is_flag=True, help="Also the weak guesses (by default only real matches).")
@_with_filters
def search(
    query: str, k: int, mode: str, everything: bool, project, since, until, priority, kind, agent, as_json: bool
) -> None:  # noqa: ANN001
    """Layer 1: a compact ranked list of memories for QUERY (hybrid BM25 + kNN, fused by RRF), with each
    one's BM25 score and similarity. Only rows that matched the query's words or meaning are shown (and the
    number of weaker guesses left out); when none did, it says so and shows the closest three."""
    base = None if as_json or everything else _service(_settings())
    if base:
        from memory_pipeline.service.client import DEGRADED_HEADER

        filters = {
            "project": project,
            "since": since,
            "until": until,
            "priority": priority,
            "kind": kind,
            "agent": agent,
        }
        answer = _ask(base, "/api/v1/search", {"q": query, "k": k, "mode": mode, "format": "text", **filters})
        text = answer.text
        if degraded := answer.headers.get(DEGRADED_HEADER):  # the text's first line: said apart, as without it
            click.echo(f"note: {degraded}", err=True)
            text = text.removeprefix(f"note: {degraded}\n")
        click.echo(text)
        return
    with _search() as engine:
        rows = engine.find(query, k=k, filters=_filters(project, since, until, priority, kind, agent), mode=mode)
        _print_rows(rows, as_json, query=query, degraded=engine.degraded, everything=everything)


@main.command()
@click.argument("anchor")
@click.option(
    "--window", default=5, show_default=True, type=click.IntRange(1, MAX_WINDOW), help="Memories before and after."
)
@_with_filters
def timeline(anchor: str, window: int, project, since, until, priority, kind, agent, as_json: bool) -> None:  # noqa: ANN001
    """Layer 2: the chronological neighbours of ANCHOR (a memory id, or a query's best match)."""
    with _search() as engine:
        _print_rows(
            engine.timeline(anchor, window=window, filters=_filters(project, since, until, priority, kind, agent)),
            as_json,
        )


@main.command()
@click.argument("ids", nargs=-1, required=True)
@click.option("--full", is_flag=True, help="Every message whole (by default a long one is trimmed, and says so).")
@json_option
def show(ids: tuple[str, ...], full: bool, as_json: bool) -> None:
    """Layer 3: the memories IDS, each with every message of the turn it came from (tool calls shown)."""
    from memory_pipeline.search.render import as_json as dumps
    from memory_pipeline.search.render import details_text, missing_ids

    with _search() as engine:
        records = engine.detail(list(ids))
    if records:
        click.echo(dumps(records) if as_json else details_text(records, full=full))
    if missing := missing_ids(list(ids), records):
        raise click.ClickException(missing)


tokens_option = click.option(
    "--tokens",
    default=800,
    show_default=True,
    type=click.IntRange(MIN_TOKENS, MAX_TOKENS),
    help="Token budget of the briefing.",
)


def _notify(session_file: str) -> None:
    """Tell the running service that a session file changed (its fast path ingests the day at once); without
    a service the day's runs read it later, and stderr says so."""
    from memory_pipeline.service.client import ServiceRefused, tell

    settings = _settings()
    base = _service(settings)
    if not base:
        click.echo("memory hook: no memory service running; the day's runs will read the session", err=True)
        return
    try:
        state = tell(base, "/api/v1/ingest", {"session_file": session_file}, settings.service_token())
    except (ServiceRefused, OSError) as exc:
        click.echo(f"memory hook: {exc}", err=True)
        return
    click.echo(f"memory hook: {session_file}: day {state.get('day')} {state.get('state', 'queued')}", err=True)


def _briefing(prompt: str, tokens: int, scope: str | None, agent: str | None = None) -> tuple[str, list[str]]:
    """The briefing's markdown and ids, from the service when it runs (0.3 s), else searched in-process; a
    server that is down is said on stderr (with what starts it), never an error."""
    settings = _settings()
    base = _service(settings)
    if base:
        params = {"prompt": prompt, "tokens": tokens, "project": scope, "agent": agent}
        answer = _ask(base, "/api/v1/briefing", params).json()
        markdown, ids, degraded, note = answer["markdown"], answer["ids"], answer.get("degraded"), None
    else:
        from memory_pipeline.search.briefing import build_briefing
        from memory_pipeline.search.open import briefing_note

        with _search() as engine:
            workspace = settings.memory_workspace
            made = build_briefing(engine, prompt, token_budget=tokens, project=scope, workspace=workspace, agent=agent)
            markdown, ids, degraded, note = made.markdown, made.ids, briefing_note(made, settings), engine.degraded
    if degraded:
        click.echo(f"memory briefing: {degraded}", err=True)  # the server that is down, and what starts it
    elif note:
        click.echo(f"memory briefing: {note}", err=True)
    return markdown, ids


@main.command(name="hook")
@click.argument("agent", type=click.Choice(["claude-code"]))
@tokens_option
def hook_command(agent: str, tokens: int) -> None:
    """A coding agent's hook: reads its hook payload (JSON) on stdin. For Claude Code, `SessionStart` prints the
    project's rules, its important and its most recent memories, and `UserPromptSubmit` what matches the prompt
    that the session was not given yet (--tokens: the start's budget), as Claude Code takes context from a hook;
    `Stop` and `SessionEnd` tell the memory service (when it runs) that the session's transcript changed, so its
    turns are searchable seconds later. Every delivery is recorded (`memory-pipeline injected`). Exits 0
    whatever happens, so the session goes on; what went wrong is on stderr (service/hooks/claude_code.py)."""
    from memory_pipeline.service.hooks.claude_code import run_hook

    settings = _settings()
    run_hook(click.get_text_stream("stdin").read(), settings, _service(settings), click.echo, _notify, tokens)


@main.command(name="injected")
@click.option("--session", "session_id", help="The session's id (pi's session id, Claude Code's session_id).")
@json_option
def injected_command(session_id: str | None, as_json: bool) -> None:
    """What the session was given from memory and when (each delivery: its agent, its start, prompt, file or
    failing command, the lines with their ids, the tokens); without --session, the sessions recently given any."""
    from memory_pipeline.service.injected import show_injected

    show_injected(_settings(), session_id, as_json)


@main.command(name="briefing")
@click.argument("prompt")
@tokens_option
@click.option("--project", help="Only memories of this project; default: the current directory.")
@click.option("--all-projects", is_flag=True, help="Memories of every project.")
@click.option("--agent", help="Only this coding agent's memories (MEMORY.md's rules are every agent's).")
@json_option
def briefing_command(
    prompt: str, tokens: int, project: str | None, all_projects: bool, agent: str | None, as_json: bool
) -> None:
    """Markdown of what a new session should know first: the project's rules (MEMORY.md), its important
    memories, then what matches its first PROMPT, within a token budget, each line with its id.

    Fit for hooks: when a server is down it prints what it still has (MEMORY.md's rules), says why on stderr,
    and exits 0, so the session it would brief starts anyway."""
    scope = None if all_projects else project or str(Path.cwd())
    markdown, ids = _briefing(prompt, tokens, scope, agent)
    if as_json:
        click.echo(json.dumps({"markdown": markdown, "project": scope, "ids": ids}, indent=2, ensure_ascii=False))
    elif markdown:
        click.echo(markdown)


@main.command()
@click.argument("text")
@click.option("--project", help="The project it belongs to; default: the current directory.")
@click.option("--priority", type=click.Choice(["high", "medium", "low"]), default="high", show_default=True)
@click.option("--session", "session_id", help="The session where it was said (its id).")
@click.option("--turn", "turn_id", help="The turn in that session (its first entry id).")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@json_option
def remember(
    text: str,
    project: str | None,
    priority: str,
    session_id: str | None,
    turn_id: str | None,
    tags: tuple[str, ...],
    as_json: bool,
) -> None:
    """Keep TEXT as a memory on purpose (a rule, a preference, a decision and why). Secrets in it are
    redacted; no re-run of the pipeline removes it; the same note twice is stored once."""
    from pydantic import ValidationError

    from memory_pipeline.search.remember import Note
    from memory_pipeline.search.remember import remember as keep
    from memory_pipeline.search.render import as_json as dumps
    from memory_pipeline.search.render import row_line
    from memory_pipeline.sessions.redact import Redactor
    from memory_pipeline.stores.memory_store import open_store

    settings = _settings()
    try:
        note = Note(
            text=text,
            project=project or str(Path.cwd()),
            priority=priority,  # type: ignore[arg-type]
            session_id=session_id,
            turn_id=turn_id,
            tags=list(tags),
            author="person",
        )
    except ValidationError as exc:
        raise click.ClickException("; ".join(e["msg"] for e in exc.errors())) from None
    with _search() as engine, open_store(settings) as store:
        row = keep(engine, store, note, Redactor.with_patterns(settings.redact_extra_patterns))
    click.echo(dumps(row.to_dict()) if as_json else f"remembered {row_line(row, scores=False)}")


@main.command()
@click.option(
    "--port", default=SERVICE_PORT, show_default=True, help="Port of the service (always bound to 127.0.0.1)."
)
def serve(port: int) -> None:
    """The local memory service: the memory browser at /, JSON API under /api/v1, MCP (streamable HTTP) at
    /mcp, docs at /docs. Every write needs the token in <state>/service-token (made on first start), or, in a
    browser, a login through the one-time link it prints (the next one is in <state>/service-login)."""
    import uvicorn

    from memory_pipeline.service.app import create_app

    settings = _settings()
    from memory_pipeline.service.app import login_link

    settings.service_token()  # made now, so clients can read it before their first write
    click.echo(f"memory service on http://127.0.0.1:{port} (pages: /, docs: /docs, MCP: /mcp)", err=True)
    click.echo(f"writes (and MCP over HTTP) need the X-Memory-Token header: {settings.service_token_path}", err=True)
    # A browser logs in once (the link is good for one use; the next is in <state>/service-login).
    click.echo(f"to edit, forget and review in a browser, open once: {login_link(settings, port)}", err=True)
    uvicorn.run(create_app(settings), host="127.0.0.1", port=port, log_level="warning")


@main.command(name="mcp")
@click.option(
    "--project",
    help="The project every call is scoped to unless it names one; default: the directory the client starts it in.",
)
def mcp_stdio(project: str | None) -> None:
    """The MCP server over stdio, for MCP clients that start their servers themselves (Claude Code, Codex).
    `uv --directory <checkout>` moves the working directory: pass `--project "$PWD"` then (the MCP SDK here speaks
    the 2026-07-28 protocol, where a client's roots are deprecated and a server cannot ask for them)."""
    from memory_pipeline.service.mcp_server import build_mcp
    from memory_pipeline.sessions.redact import Redactor
    from memory_pipeline.stores.memory_store import open_store

    settings = _settings()
    redactor = Redactor.with_patterns(settings.redact_extra_patterns)
    where = str(Path(project).expanduser().absolute()) if project else str(Path.cwd())
    with _search() as search, open_store(settings) as store:
        mcp = build_mcp(lambda: search, lambda: redactor, where, settings.memory_workspace, settings, lambda: store)
        mcp.run("stdio")


# Privacy, control and set-up (issue 49): each command in its own module.
from memory_pipeline.control.exclude_command import purge_excluded_command  # noqa: E402
from memory_pipeline.control.export_command import export_command, import_command  # noqa: E402
from memory_pipeline.control.forget_command import forget_command, undo_forget_command  # noqa: E402
from memory_pipeline.control.install_command import install_command, uninstall_command  # noqa: E402

main.add_command(install_command)
main.add_command(uninstall_command)
main.add_command(export_command)
main.add_command(import_command)
main.add_command(forget_command)
main.add_command(undo_forget_command)
main.add_command(purge_excluded_command)


@main.group()
def review() -> None:
    """The human review loop: REVIEW.md proposals into MEMORY.md."""


@review.command(name="apply")
@click.option("--project", help="Only this project (its path, as in the sessions).")
@json_option
def review_apply(project: str | None, as_json: bool) -> None:
    """Promote checked proposals into MEMORY.md, archive rejected ones ([-]) in today's daily log."""
    from datetime import UTC, datetime

    from memory_pipeline.reflect.review import apply_all

    settings = _settings()
    reports = apply_all(settings.memory_workspace, datetime.now(UTC).date().isoformat(), project)
    if as_json:
        click.echo(json.dumps({name: vars(report) for name, report in reports.items()}, indent=2))
        return
    if not reports:
        click.echo(f"no REVIEW.md under {settings.memory_workspace}")
    for name, report in reports.items():
        click.echo(
            f"{name}: {len(report.promoted)} promoted, {len(report.rejected)} rejected, {len(report.untouched)} waiting"
        )


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON (it always is: accepted for symmetry).")
def config(as_json: bool) -> None:
    """Print the effective configuration as JSON (secrets masked)."""
    from pydantic import SecretStr

    settings = _settings()
    shown = settings.model_dump(mode="json")
    for key in (name for name, value in settings if isinstance(value, SecretStr)):
        shown[key] = "***"  # every secret by its type
    if shown.get("dagster_postgres_url"):
        shown["dagster_postgres_url"] = re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", shown["dagster_postgres_url"])
    shown |= {
        "effective_elasticsearch_url": settings.elasticsearch_url,
        "effective_chat_url": settings.chat_url,
        "effective_embeddings_url": settings.embeddings_url,
    }
    click.echo(json.dumps(shown, indent=2))


from memory_pipeline.folders_command import folders as _folders  # noqa: E402 - its own module, registered here

main.add_command(_folders)
