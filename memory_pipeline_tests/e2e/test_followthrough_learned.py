"""What follow-through learns besides a contradiction (issue 48), on the real servers: a rule the agent ignored and
the person then said again is raised (first of its section in the next session's briefing, through the memory
service), and a correction the person repeats in two sessions with no memory behind it becomes a proposal in
REVIEW.md with both turns. Session files are written as pi writes them, run through the real ingest assets and
`memory_followthrough` over real Elasticsearch."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import polars as pl
from dagster import materialize

from memory_pipeline.assets.followthrough import memory_followthrough
from memory_pipeline.partitions import instance_with_days
from memory_pipeline.reflect.workspace import ensure_project_dir
from memory_pipeline.resources import build_resources
from memory_pipeline.settings import Settings, isolated_settings
from memory_pipeline.stores.elasticsearch import delete_matching, make_client
from memory_pipeline.stores.followthrough_store import FOLLOWTHROUGH_INDEX, read_followthrough
from memory_pipeline.stores.indices import PIPELINE_INDICES, SUMMARY_INDEX
from memory_pipeline.stores.injections import InjectedLine, Injection, open_ledger
from memory_pipeline.stores.summary_store import sync_summaries
from memory_pipeline.summarize.frames import OUTCOME_SCHEMA, ledger_rows, summary_documents
from testkit.ingest_helpers import INGEST_ASSETS, reset_days, run_metadata
from testkit.servers import memory_service

DAY = "2019-04-11"  # the sessions' day: no other test uses it
RULES_DAY = "2019-04-10"
AT = datetime(2019, 4, 11, 10, 0, tzinfo=UTC)
PNPM = "Use pnpm for every package command in this repo, not npm."
VITEST = "Run the unit tests with vitest, never jest."


def _rules(settings: Settings, project: str, texts: list[str]) -> list[str]:
    """The rules stored as the summary stage stores memories, the first the oldest; their ids in that order."""
    rows = []
    for n, text in enumerate(texts):
        idea = {"summary": text, "tags": ["rule"], "priority": "high", "kind": "rule", "subject": "tooling",
                "files": [], "evidence": text, "evidence_role": "user"}  # fmt: skip
        rows.append({
            "partition": RULES_DAY, "session_id": f"ftl-origin-{uuid.uuid4().hex[:6]}", "project": project,
            "prompt_version": "1", "model": "m", "reason": None, "summarized_at": f"{RULES_DAY}T12:00:00+00:00",
            "llm_calls": 1, "seconds": 1.0, "prompt_tokens": 1, "completion_tokens": 1, "generation_seconds": 0.5,
            "status": "summarised", "turn_id": f"t{n}", "content_hash": f"t{n}", "ideas": [idea],
            "established_at": f"{RULES_DAY}T1{n}:00:00.000Z",
        })  # fmt: skip
    frame = pl.DataFrame(rows, schema=OUTCOME_SCHEMA)
    with make_client(settings) as client:
        sync_summaries(client, summary_documents(frame), ledger_rows(frame), [RULES_DAY])
        client.indices.refresh(index=SUMMARY_INDEX)
        hits = client.search(index=SUMMARY_INDEX, query={"term": {"project": project}}, size=10)["hits"]["hits"]
    by_text = {hit["_source"]["summary"]: hit["_id"] for hit in hits}
    return [by_text[text] for text in texts]


def _session(folder: Path, session_id: str, project: str, at: datetime, turns: list[tuple[str, str | None]]) -> None:
    """A pi v3 session: per turn, the person's words and the agent's bash command (or a plain answer)."""
    stamp = at.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    lines: list[dict] = [{"type": "session", "version": 3, "id": session_id, "timestamp": stamp, "cwd": project}]
    parent = None
    for n, (said, command) in enumerate(turns):
        when = at + timedelta(minutes=2 * n)
        epoch = int(when.timestamp() * 1000)
        iso = when.strftime("%Y-%m-%dT%H:%M:%S.000Z")
        content: list[dict] = [{"type": "text", "text": "On it."}]
        if command:
            content.append({"type": "toolCall", "id": f"c{n}", "name": "bash", "arguments": {"command": command}})
        entries = [
            {"role": "user", "content": [{"type": "text", "text": said}], "timestamp": epoch},
            {"role": "assistant", "content": content, "timestamp": epoch + 1000, "api": "openai-completions",
             "provider": "local", "model": "m", "stopReason": "toolUse" if command else "stop"},
        ]  # fmt: skip
        if command:
            entries.append({"role": "toolResult", "toolCallId": f"c{n}", "toolName": "bash",
                            "content": [{"type": "text", "text": "done"}], "timestamp": epoch + 2000})  # fmt: skip
        for k, message in enumerate(entries):
            entry_id = f"e{n}{k}{uuid.uuid4().hex[:5]}"
            lines.append({"type": "message", "id": entry_id, "parentId": parent, "timestamp": iso, "message": message})
            parent = entry_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{session_id}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def _run(settings: Settings) -> dict:
    result = materialize(
        [*INGEST_ASSETS, memory_followthrough],
        resources=build_resources(settings),
        partition_key=DAY,
        instance=instance_with_days([DAY]),
    )
    metadata, checks, _ = run_metadata(result)
    assert all(checks.values()), checks
    return metadata["memory_followthrough"]


def _briefed(base: str, settings: Settings, project: str) -> list[str]:
    """The ids a new session of `project` is given at its start, in order."""
    moment = {"session_id": f"ftl-new-{uuid.uuid4().hex[:6]}", "agent": "pi", "event": "start", "project": project}
    token = {"X-Memory-Token": settings.service_token()}
    return httpx.post(f"{base}/api/v1/recall", json=moment, headers=token, timeout=120).json()["ids"]


def test_a_rule_ignored_then_said_again_is_raised_and_a_repeated_correction_is_proposed(
    local_runtime: Settings, tmp_path: Path
) -> None:
    folder = tmp_path / f"web-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    project = str(folder)
    settings = isolated_settings(local_runtime, tmp_path, sessions_dir=tmp_path / "agent" / "sessions")
    reset_days(local_runtime, [DAY, RULES_DAY])
    pnpm, vitest = _rules(settings, project, [PNPM, VITEST])  # pnpm the older: second among the high ones
    ignoring, again, once = (f"ftl-{name}-{uuid.uuid4().hex[:6]}" for name in ("ignoring", "again", "once"))
    sessions = [ignoring, again, once]
    try:
        ledger = open_ledger(settings)
        for memory_id, text in ((pnpm, PNPM), (vitest, VITEST)):
            line = InjectedLine(key=memory_id, text=f"- **high** {text} _(rule, id `{memory_id}`)_")
            ledger.record(Injection(session_id=ignoring, agent="pi", event="start", project=project, ids=[memory_id],
                                    lines=[line], at=AT - timedelta(minutes=5)))  # fmt: skip
        # The agent ignores the pnpm rule, the person says it again in the next turn; later, in two other
        # sessions, the person makes the same correction that no memory holds.
        _session(settings.sessions_dir / "a", ignoring, project, AT,
                 [("Add lodash to the web app.", "npm install lodash"), ("I said pnpm, not npm!", None)])  # fmt: skip
        fix = "No, use ruff for linting, not flake8."
        _session(settings.sessions_dir / "b", again, project, AT + timedelta(hours=1),
                 [("Lint the code.", "flake8 src"), (fix, None)])  # fmt: skip
        _session(settings.sessions_dir / "c", once, project, AT + timedelta(hours=2),
                 [("Lint the api package.", "flake8 api"), (fix, None)])  # fmt: skip

        with memory_service(settings) as base:
            before = _briefed(base, settings, project)
            assert before.index(vitest) < before.index(pnpm)  # the newest high-priority memory first
            metadata = _run(settings)
            assert metadata["ignored"] >= 1 and metadata["restated_after_ignored"] == 1
            assert metadata["corrections_repeated"] == 1
            after = _briefed(base, settings, project)
            assert after.index(pnpm) < after.index(vitest)  # ignored, then said again: raised

        with make_client(settings) as client:
            stored = read_followthrough(client, {"term": {"memory_id": pnpm}})
        ignored = [r for r in stored if r.signal == "ignored"]
        assert [(r.session_id, r.restated) for r in ignored] == [(ignoring, True)]
        assert "npm install lodash" in ignored[0].evidence

        review = (ensure_project_dir(settings.memory_workspace, project) / "REVIEW.md").read_text()
        [proposal] = [line for line in review.splitlines() if "ruff" in line]
        assert fix in proposal and "2 sessions" in proposal and again in proposal and once in proposal
        assert _run(settings)["proposals_new"] == []  # again: no second proposal
    finally:
        with make_client(local_runtime) as client:
            delete_matching(client, [*PIPELINE_INDICES, FOLLOWTHROUGH_INDEX], {"terms": {"session_id": sessions}})
        reset_days(local_runtime, [DAY, RULES_DAY])


def test_with_the_model_pass_set_the_asset_asks_the_real_chat_model_and_never_demotes(
    local_runtime: Settings, tmp_path: Path
) -> None:
    """FOLLOWTHROUGH_MODEL: a turn the rules find nothing in but whose command touches the memory is asked of the
    real chat model; whatever it answers, nothing is contradicted, and a signal it gives cites the agent's line."""
    folder = tmp_path / f"db-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    project = str(folder)
    settings = isolated_settings(
        local_runtime, tmp_path, sessions_dir=tmp_path / "agent" / "sessions", followthrough_model=True
    )
    reset_days(local_runtime, [DAY, RULES_DAY])
    rule = "Schema changes go through `alembic revision --autogenerate`; never hand-run ALTER TABLE against prod."
    [memory_id] = _rules(settings, project, [rule])
    session = f"ftl-model-{uuid.uuid4().hex[:6]}"
    command = "psql $PROD_URL -c 'ALTER TABLE invoices ADD COLUMN due_date date'"
    try:
        line = InjectedLine(key=memory_id, text=f"- **high** {rule} _(rule, id `{memory_id}`)_")
        given = Injection(session_id=session, agent="pi", event="start", project=project, ids=[memory_id],
                          lines=[line], at=AT - timedelta(minutes=5))  # fmt: skip
        open_ledger(settings).record(given)
        _session(settings.sessions_dir / "m", session, project, AT, [("Add a due date to invoices on prod.", command)])
        metadata = _run(settings)
        assert metadata["model_calls"] >= 1 and metadata["model_failures"] == 0
        assert metadata["contradicted"] == 0 and metadata["demoted"] == 0
        with make_client(settings) as client:
            stored = read_followthrough(client, {"term": {"memory_id": memory_id}})
        for record in (r for r in stored if r.decided_by == "model"):
            assert record.signal in ("followed", "ignored") and record.evidence in (f"bash: {command}", "On it.")
    finally:
        with make_client(local_runtime) as client:
            delete_matching(client, [*PIPELINE_INDICES, FOLLOWTHROUGH_INDEX], {"terms": {"session_id": [session]}})
        reset_days(local_runtime, [DAY, RULES_DAY])
