"""Compaction from memory, end to end with the real pi: a session states a rule, works on, and is compacted; the
summary pi keeps is the memory of that session (the rule among it, with ids), not the model's; with the service
down, pi's own compaction goes ahead.

Real parts only: pi from npm with the project's extension (its model the local chat server), `memory-pipeline
serve`, the real Elasticsearch and embedding server. pi is told to keep only the last few hundred tokens, so a
short session has an earlier part to compact.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx

from testkit.agent_loop import ingested_day
from testkit.pi_agent import entries, finished, session_of
from testkit.servers import free_port

RULE = "Rule for this project: always use pnpm, never npm."


def _compact(pi, project: Path, brief: bool = False, **options) -> dict:  # noqa: ANN001, ANN003
    """pi's answer to a compact command."""
    command = {"id": "k1", "type": "compact"}
    if brief:
        command["customInstructions"] = "Be brief: one short line per section."
    return pi.rpc(
        project,
        command,
        lambda e: e.get("type") == "response" and e.get("command") == "compact",
        timeout=600,
        **options,
    )


def _compacted(pi, project: Path, **options) -> dict:  # noqa: ANN001, ANN003
    answer = _compact(pi, project, **options)
    assert answer.get("success"), answer.get("error")
    return answer["data"]


def test_a_compacted_session_keeps_its_rule_from_memory_and_falls_back_to_pi(loop, tmp_path: Path) -> None:  # noqa: ANN001
    _, base, pi = loop
    project = tmp_path / "shop"
    # Compaction only when asked (the small context window would have pi compact after every turn), keeping the
    # newest turn or so (20 tokens): the first turns are what it drops.
    settings = {"compaction": {"enabled": False, "keepRecentTokens": 20}}
    (pi.home / "settings.json").write_text(json.dumps(settings))
    started = time.time()
    assert finished(pi.run(project, RULE))
    assert finished(pi.run(project, "Name three fruits.", continue_session=True))
    session = session_of(pi.last_session(project))
    ingested_day(base, session["timestamp"][:10], after=started)
    known = httpx.get(f"{base}/api/v1/search", params={"q": "pnpm", "project": str(project)}).json()["data"]
    assert known, "the fast path did not make the session's turns searchable"

    summary = _compacted(pi, project)["summary"]
    assert summary.startswith("## This session so far, from memory") and "pnpm" in summary, summary
    assert known[0]["id"] in summary  # cited, so the agent can open the turn
    [entry] = [e for e in entries(pi.last_session(project)) if e.get("type") == "compaction"]
    assert entry["details"]["source"] == "memory_pipeline" and entry["details"]["ids"] and entry.get("fromHook")
    assert entry["summary"] == summary and entry["tokensBefore"] > 0

    # Service down: pi's own summary, made by its model; the session goes on. pi refuses a summary its output cap
    # cut short, and its template (goal, constraints, progress, next steps) outgrows a turn's 300 tokens now and
    # then: the cap is raised for this step, and the model asked to be brief.
    assert finished(pi.run(project, "Name three mountains.", continue_session=True))
    pi.max_tokens = 2048
    pi.write_models()
    answer = _compact(pi, project, service_url=f"http://127.0.0.1:{free_port()}", brief=True)
    compactions = [e for e in entries(pi.last_session(project)) if e.get("type") == "compaction"]
    if answer.get("success"):
        own = answer["data"]
        assert own["summary"].strip() and not own["summary"].startswith("## This session so far, from memory")
        assert (compactions[-1].get("details") or {}).get("source") != "memory_pipeline"
    else:
        # pi's own summariser ran (the extension stood aside) and refused what the 0.5B model let run to the
        # token cap, as pi refuses any cut-off summary: pi's own message, and no compaction of memory's added.
        assert str(answer.get("error")).startswith("Summarization failed: generation hit the token cap"), answer
        assert compactions == [entry]
