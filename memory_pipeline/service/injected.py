"""`memory-pipeline injected`: what a session was given from memory and when (the injection ledger), or the
sessions most recently given anything. Reads the ledger's files: no service needed."""

from __future__ import annotations

import click

from memory_pipeline.settings import Settings
from memory_pipeline.stores.injections import InjectedLine, Injection, SessionLedger, SessionSummary, open_ledger


def ledger_text(ledger: SessionLedger) -> str:
    """A session's deliveries as the CLI prints them: one header line each, then its lines with their keys."""
    if not ledger.injections:
        return f"session {ledger.session_id} was given nothing from memory"
    lines = sum(len(i.lines) for i in ledger.injections)
    tokens = sum(i.tokens for i in ledger.injections)
    out = [f"session {ledger.session_id}: {len(ledger.injections)} deliveries, {lines} lines, {tokens} tokens"]
    for item in ledger.injections:
        out.append(_heading(item))
        out += [f"  - {line.key}: {_said(line)}" for line in item.lines]
    return "\n".join(out)


def _heading(item: Injection) -> str:
    what = f" {item.text[:120]!r}" if item.text else ""
    size = f"({len(item.lines)} lines, {item.tokens} tokens)"
    return f"{item.at:%Y-%m-%d %H:%M:%S} {item.agent} {item.event}{what} {size}"


def sessions_text(sessions: list[SessionSummary]) -> str:
    if not sessions:
        return "no session was given anything from memory yet"
    return "\n".join(
        f"{s.session_id}  {s.deliveries} deliveries, {s.lines} lines, {s.tokens} tokens, last {s.last:%Y-%m-%d %H:%M}"
        for s in sessions
    )


def show_injected(settings: Settings, session_id: str | None, as_json: bool) -> None:
    """Prints what `session_id` was given (or the sessions recently given anything); a ledger line that could
    not be read is named on stderr."""
    ledger = open_ledger(settings)
    if session_id:
        found = ledger.read(session_id)
        click.echo(found.model_dump_json(indent=2) if as_json else ledger_text(found))
        for problem in found.problems:
            click.echo(f"memory injected: {problem}", err=True)
        return
    sessions = ledger.sessions()
    if as_json:
        click.echo("[" + ",".join(s.model_dump_json() for s in sessions) + "]")
    else:
        click.echo(sessions_text(sessions))


def _said(line: InjectedLine) -> str:
    return "(forgotten since)" if line.forgotten else line.text + (" (edited since)" if line.edited else "")
