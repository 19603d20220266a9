"""`memory-pipeline`: the local runtime and the Dagster UI from one command line. A layer of commands: what
they do is in the modules they call (the runtime's commands in `memory_pipeline.commands.runtime`)."""

from __future__ import annotations

import json
import re
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

import click

from memory_pipeline.commands.common import SAMPLE_SESSIONS, echo_progress
from memory_pipeline.commands.common import load as _settings
from memory_pipeline.commands.common import run as _run
from memory_pipeline.commands.runtime import dev, down_all, local, status_all, supervise, up_all
from memory_pipeline.limits import MAX_K, MAX_TOKENS, MAX_WINDOW, MIN_TOKENS
from memory_pipeline.ports import SERVICE_PORT

# Only click at the top: `--help` and the commands that ask the service load nothing else (settings, pydantic,
# Dagster and the clients are imported by the commands that need them).
if TYPE_CHECKING:
    from memory_pipeline.service.access import MemoryAccess
    from memory_pipeline.settings import Settings

__all__ = ["SAMPLE_SESSIONS", "main"]


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


@click.group(cls=_OneLineErrors)
def main() -> None:
    """Persistent memory for coding agents: ingest pi sessions, summarise, search."""


for command in (local, dev, up_all, down_all, status_all, supervise):
    main.add_command(command)


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
    from memory_pipeline.backfill import Unreachable, plan_for, run_plan
    from memory_pipeline.definitions import build_definitions
    from memory_pipeline.instance import open_instance

    # The chat timeout is a setting like any other: the runs' resources are built from these settings.
    settings = _settings() if chat_timeout is None else _settings(llama_timeout=chat_timeout)
    with_llm = not (no_llm or settings.memory_pipeline_no_llm)
    opened = ExitStack()
    instance = _run(lambda: opened.enter_context(open_instance(settings)))
    with opened:
        try:
            plan = plan_for(settings, instance, everything, start, end, with_llm)
        except Unreachable as exc:
            raise click.ClickException(str(exc)) from None
        for problem in plan.problems:
            click.echo(f"skipped {problem}", err=True)
        report = {
            "days": len(plan.days),
            "todo": plan.todo,
            "why": plan.why,
            "with_llm": with_llm,
            "problems": [str(p) for p in plan.problems],
            "runs": [],
        }
        if plan.todo:
            report["runs"] = runs = run_plan(
                instance,
                plan,
                build_definitions(settings),
                with_llm=with_llm,
                verbose=verbose,
                quiet=as_json,
                out=click.echo,
                err=echo_progress,
            )
        elif not as_json:
            click.echo(
                f"nothing to backfill under {settings.sessions_dir}: {len(plan.days)} day(s) with sessions, all done"
            )
            return
    if as_json:
        click.echo(json.dumps(report, indent=2))
    if plan.todo and not all(run["success"] for run in runs):
        sys.exit(1)


def _access(settings: Settings | None = None, ask_service: bool = True) -> MemoryAccess:
    """The memory, through its running service when there is one, else in-process."""
    from memory_pipeline.service.access import MemoryAccess

    return MemoryAccess(settings or _settings(), ask_service=ask_service)


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


def _filters(project, since, until, priority, kind, agent=None) -> dict[str, object]:  # noqa: ANN001
    return {"project": project, "since": since, "until": until, "priority": priority, "kind": kind, "agent": agent}


def _with_filters(command):  # noqa: ANN001, ANN202
    for option in reversed([*filter_options, json_option]):
        command = option(command)
    return command


def _print_rows(rows, as_json: bool) -> None:  # noqa: ANN001
    from memory_pipeline.search.render import as_json as dumps
    from memory_pipeline.search.render import rows_text

    click.echo(dumps([r.to_dict() for r in rows]) if as_json else rows_text(rows))


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
    filters = _filters(project, since, until, priority, kind, agent)
    with _access() as memory:
        found = _refused(lambda: memory.search(query, k, mode, filters, everything=everything, as_json=as_json))
    if found.degraded:
        click.echo(f"note: {found.degraded}", err=True)
    click.echo(found.text)


@main.command()
@click.argument("anchor")
@click.option(
    "--window", default=5, show_default=True, type=click.IntRange(1, MAX_WINDOW), help="Memories before and after."
)
@_with_filters
def timeline(anchor: str, window: int, project, since, until, priority, kind, agent, as_json: bool) -> None:  # noqa: ANN001
    """Layer 2: the chronological neighbours of ANCHOR (a memory id, or a query's best match)."""
    from memory_pipeline.service.access import parse_filters

    with _search() as engine:
        rows = engine.timeline(
            anchor, window=window, filters=parse_filters(_filters(project, since, until, priority, kind, agent))
        )
        _print_rows(rows, as_json)


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
        click.echo(dumps([r.to_dict() for r in records]) if as_json else details_text(records, full=full))
    if missing := missing_ids(list(ids), records):
        raise click.ClickException(missing)


tokens_option = click.option(
    "--tokens",
    default=800,
    show_default=True,
    type=click.IntRange(MIN_TOKENS, MAX_TOKENS),
    help="Token budget of the briefing.",
)


def _refused(read):  # noqa: ANN001, ANN202 - the read's own answer
    """A read of the service, its refusal one line."""
    from memory_pipeline.service.client import ServiceRefused

    try:
        return read()
    except ServiceRefused as exc:
        raise click.ClickException(str(exc)) from None


def _briefing(prompt: str, tokens: int, scope: str | None, agent: str | None = None) -> tuple[str, list[str]]:
    """The briefing's markdown and ids; a server that is down is said on stderr (with what starts it), never
    an error."""
    with _access() as memory:
        made = _refused(lambda: memory.briefing(prompt, tokens, scope, agent))
    if made.said:
        click.echo(f"memory briefing: {made.said}", err=True)
    return made.markdown, made.ids


@main.command(name="hook")
@click.argument("agent", type=click.Choice(["claude-code"]))
@tokens_option
def hook_command(agent: str, tokens: int) -> None:
    """A coding agent's hook: reads its hook payload (JSON) on stdin. For Claude Code, `SessionStart` prints the
    project's rules, its important and its most recent memories, and `UserPromptSubmit` what matches the prompt
    that the session was not given yet (--tokens: the start's budget), as Claude Code takes context from a hook;
    `PostToolUse` (Read, Write) what is known about the file, once per session, and `PostToolUseFailure` (Bash)
    the gotchas known about the failing command, both through the running service only; `Stop` and `SessionEnd`
    tell the memory service (when it runs) that the session's transcript changed, so its turns are searchable
    seconds later. Every delivery is recorded (`memory-pipeline injected`). Exits 0
    whatever happens, so the session goes on; what went wrong is on stderr (service/hooks/claude_code.py)."""
    from memory_pipeline.service.hooks.claude_code import claude_code

    def say(line: str) -> None:
        click.echo(line, err=True)

    with _access() as memory:
        output = claude_code(
            click.get_text_stream("stdin").read(),
            memory.recall,
            lambda session_file: say(f"memory hook: {memory.notify(session_file)}"),
            say,
            tokens,
            served=lambda: memory.service is not None,
        )
    if output:
        click.echo(output)


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
    from memory_pipeline.search.render import as_json as dumps
    from memory_pipeline.search.render import row_line

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
    with _access(ask_service=False) as memory:
        row = memory.remember(note)
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
from memory_pipeline.control.exclude_command import exclude_group, purge_excluded_command  # noqa: E402
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
main.add_command(exclude_group)


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
