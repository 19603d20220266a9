"""Memory that learns from what happened next (issue 48), on the real servers: a rule is injected into a real pi
session (the memory service, the pi extension, the injection ledger); the person contradicts it in the next two
sessions (session files written here, as pi writes them); the `memory_followthrough` asset, materialised over
real Elasticsearch, counts it, stops its injection and proposes an edit or a forget in REVIEW.md with both
turns; its counters show in the CLI, the API and the browser; a re-run writes nothing new."""

from __future__ import annotations

import json
import subprocess
import sys
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
from memory_pipeline.stores.summary_store import sync_summaries
from memory_pipeline.summarize.frames import OUTCOME_SCHEMA, ledger_rows, summary_documents
from testkit.ingest_helpers import INGEST_ASSETS, cli_env, reset_days, run_metadata
from testkit.pi_agent import PiAgent, finished, session_of
from testkit.servers import memory_service

MEMORY_DAY = "2019-03-07"  # the rule's own day: no other test uses it
RULE = "Use pnpm for every package command in this repo, not npm."
CONTRADICTIONS = [
    "No, we switched back to npm last month and pnpm is gone from this repo. Add lodash to the web app.",
    "Stop using pnpm here, we are on npm again. Run the unit tests.",
]


def _rule(settings: Settings, project: str) -> str:
    """The rule stored as the summary stage stores a memory; its id."""
    idea = {"summary": RULE, "tags": ["rule"], "priority": "high", "kind": "rule", "subject": "package manager",
            "files": [], "evidence": RULE, "evidence_role": "user"}  # fmt: skip
    row = {
        "partition": MEMORY_DAY, "session_id": f"ft-origin-{uuid.uuid4().hex[:6]}", "project": project,
        "prompt_version": "1", "model": "m", "reason": None, "summarized_at": f"{MEMORY_DAY}T12:00:00+00:00",
        "llm_calls": 1, "seconds": 1.0, "prompt_tokens": 1, "completion_tokens": 1, "generation_seconds": 0.5,
        "status": "summarised", "turn_id": "t0", "content_hash": "t0", "ideas": [idea],
        "established_at": f"{MEMORY_DAY}T10:00:00.000Z",
    }  # fmt: skip
    frame = pl.DataFrame([row], schema=OUTCOME_SCHEMA)
    with make_client(settings) as client:
        sync_summaries(client, summary_documents(frame), ledger_rows(frame), [MEMORY_DAY])
        client.indices.refresh(index=SUMMARY_INDEX)
        hits = client.search(index=SUMMARY_INDEX, query={"term": {"project": project}}, size=5)["hits"]["hits"]
    [hit] = hits
    return hit["_id"]


def _later_session(folder: Path, session_id: str, project: str, at: datetime, said: str) -> Path:
    """A pi v3 session started at `at`: the person says `said`, the agent answers (as pi writes it)."""
    stamp = at.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    epoch = int(at.timestamp() * 1000)
    lines = [
        {"type": "session", "version": 3, "id": session_id, "timestamp": stamp, "cwd": project},
        {"type": "message", "id": "u0000001", "parentId": None, "timestamp": stamp,
         "message": {"role": "user", "content": [{"type": "text", "text": said}], "timestamp": epoch}},
        {"type": "message", "id": "a0000001", "parentId": "u0000001", "timestamp": stamp,
         "message": {"role": "assistant", "content": [{"type": "text", "text": "Understood, using npm."}],
                     "timestamp": epoch + 1000, "api": "openai-completions", "provider": "local", "model": "m",
                     "stopReason": "stop"}},
    ]  # fmt: skip
    path = folder / f"{session_id}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _run(settings: Settings, day: str) -> tuple[dict, dict]:
    result = materialize(
        [*INGEST_ASSETS, memory_followthrough],
        resources=build_resources(settings),
        partition_key=day,
        instance=instance_with_days([day]),
    )
    metadata, checks, _ = run_metadata(result)
    return metadata["memory_followthrough"], checks


def test_a_rule_contradicted_in_two_sessions_stops_being_injected_and_is_proposed(
    local_runtime: Settings, tmp_path: Path
) -> None:
    folder = tmp_path / f"shop-{uuid.uuid4().hex[:8]}"  # a project no earlier run used
    folder.mkdir()
    project = str(folder)
    settings = isolated_settings(local_runtime, tmp_path, sessions_dir=tmp_path / "agent" / "sessions")
    settings.sessions_dir.mkdir(parents=True)
    reset_days(local_runtime, [MEMORY_DAY])
    rule_id = _rule(settings, project)
    sessions: list[str] = []
    try:
        with memory_service(settings) as base:
            pi = PiAgent(settings.sessions_dir.parent, settings, base)
            done = pi.run(folder, "Say hello.", tools="read", env={"MEMORY_SERVICE_TIMEOUT_MS": "120000"})
            assert finished(done), done.stderr
            first = session_of(pi.last_session(folder))["id"]
            sessions.append(first)
            given = httpx.get(f"{base}/api/v1/injected", params={"session_id": first}).json()
            assert rule_id in [i for d in given["injections"] for i in d["ids"]]  # the rule was injected

            # The next two sessions, after the first: the person contradicts the rule in each.
            start = datetime.now(UTC) + timedelta(seconds=30)
            later = settings.sessions_dir / "later"
            for n, said in enumerate(CONTRADICTIONS):
                sessions.append(f"ft-later-{n}-{uuid.uuid4().hex[:6]}")
                _later_session(later, sessions[-1], project, start + timedelta(minutes=n), said)
            days = sorted({datetime.now(UTC).date().isoformat(), start.date().isoformat()})
            outcome = {}
            for day in days:
                metadata, checks = _run(settings, day)
                assert all(checks.values()), checks
                outcome[day] = metadata
            assert sum(m["contradicted"] for m in outcome.values()) == 2
            assert sum(m["demoted"] for m in outcome.values()) >= 1

            with make_client(settings) as client:
                stored = read_followthrough(client, {"term": {"memory_id": rule_id}})
            against = [r for r in stored if r.signal == "contradicted"]
            assert sorted(r.session_id for r in against) == sorted(sessions[1:])
            assert all(r.evidence and r.turn_id for r in against)

            # No longer injected: a new session of the project is not given it.
            token = {"X-Memory-Token": settings.service_token()}
            moment = {"session_id": f"ft-new-{uuid.uuid4().hex[:6]}", "agent": "pi", "event": "start",
                      "project": project}  # fmt: skip
            answer = httpx.post(f"{base}/api/v1/recall", json=moment, headers=token, timeout=120).json()
            assert rule_id not in answer["ids"] and RULE not in answer["markdown"]

            # The proposal, first in REVIEW.md, with both contradicting turns.
            review = (ensure_project_dir(settings.memory_workspace, project) / "REVIEW.md").read_text()
            assert review.index("## Contradicted memories") < review.index(rule_id)
            for record in against:
                assert record.session_id in review and record.turn_id in review

            # The counters, in the API, the browser and the CLI.
            detail = httpx.get(f"{base}/api/v1/memories/{rule_id}", timeout=60).json()
            assert detail["followthrough"]["injected"] == 1 and detail["followthrough"]["contradicted"] == 2
            assert detail["followthrough"]["demoted"] is True
            page = httpx.get(f"{base}/m/{rule_id}", timeout=60).text
            assert "Follow-through: injected 1×, contradicted 2×" in page
        shown = subprocess.run(
            [sys.executable, "-m", "memory_pipeline", "show", rule_id],
            env=cli_env(settings), capture_output=True, text=True, timeout=120, check=True,
        ).stdout  # fmt: skip
        assert "follow-through: injected 1×, contradicted 2×" in shown

        # Again: nothing new is written, no second proposal.
        for day in days:
            metadata, checks = _run(settings, day)
            assert all(checks.values()), checks
            assert metadata["es_written"] == 0 and metadata["proposals_new"] == []
    finally:
        with make_client(local_runtime) as client:
            delete_matching(client, [*PIPELINE_INDICES, FOLLOWTHROUGH_INDEX], {"terms": {"session_id": sessions}})
        reset_days(local_runtime, [MEMORY_DAY])
