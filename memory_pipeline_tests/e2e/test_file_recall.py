"""Recall where the agent works: when it reads a file, what earlier sessions recorded about that file comes with
the read, once per file per session. Real Elasticsearch, `memory-pipeline serve`, and the real pi (its model
the local chat server) reading a real file through its own `read` tool.

The memories are written as the summary stage writes them (`sync_summaries`), with the files they name: the
LLM's part is tested elsewhere; this is about finding them by file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import polars as pl
import pytest

from memory_pipeline.search import Filters, MemorySearch
from memory_pipeline.settings import Settings, isolated_settings
from memory_pipeline.stores.elasticsearch import make_client
from memory_pipeline.stores.embeddings import embeddings_client
from memory_pipeline.stores.indices import NOTES_INDEX, SUMMARY_INDEX
from memory_pipeline.stores.summary_store import sync_summaries
from memory_pipeline.summarize.frames import OUTCOME_SCHEMA, ledger_rows, summary_documents
from testkit.ingest_helpers import reset_days
from testkit.pi_agent import PiAgent, entries, finished
from testkit.servers import memory_service

DAY = "2024-03-11"
GOTCHA = "Colour values in src/theme.ts must be rgb triples: palette indices crash the 16-colour terminal."
RULE = "Never edit lib/theme.ts by hand: it is generated from the design tokens."


def _idea(kind: str, summary: str, files: list[str]) -> dict:
    subject = files[0] if files else "theme"
    return {"summary": summary, "tags": [kind], "priority": "high", "kind": kind, "subject": subject,
            "files": files, "evidence": summary, "evidence_role": "assistant"}  # fmt: skip


def _memories(settings: Settings, project: str, other: str) -> None:
    base = {
        "partition": DAY, "session_id": "file-recall", "project": project, "prompt_version": "1", "model": "m",
        "reason": None, "summarized_at": f"{DAY}T12:00:00+00:00", "llm_calls": 1, "seconds": 1.0,
        "prompt_tokens": 1, "completion_tokens": 1, "generation_seconds": 0.5, "status": "summarised",
    }  # fmt: skip
    turns = [
        ("t1", project, [_idea("gotcha", GOTCHA, ["src/theme.ts"])]),
        ("t2", project, [_idea("rule", RULE, ["lib/theme.ts"])]),
        ("t3", other, [_idea("gotcha", "In the other project theme.ts is JSON, not TypeScript.", ["theme.ts"])]),
    ]
    frame = pl.DataFrame(
        [
            base
            | {
                "turn_id": turn,
                "project": where,
                "content_hash": turn,
                "ideas": ideas,
                "established_at": f"{DAY}T10:0{i}:00.000Z",
            }  # fmt: skip
            for i, (turn, where, ideas) in enumerate(turns)
        ],
        schema=OUTCOME_SCHEMA,
    )
    with make_client(settings) as client:
        sync_summaries(client, summary_documents(frame), ledger_rows(frame), [DAY])
        client.indices.refresh(index=SUMMARY_INDEX)


@pytest.fixture(scope="module")
def recorded(local_runtime: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Settings, Path]]:
    tmp = tmp_path_factory.mktemp("file-recall")
    project = tmp / "shop"
    (project / "src").mkdir(parents=True)
    (project / "src" / "theme.ts").write_text('export const accent = "rgb(200, 80, 40)";\n')
    reset_days(local_runtime, [DAY])
    settings = isolated_settings(local_runtime, tmp, sessions_dir=tmp / "agent" / "sessions")
    settings.sessions_dir.mkdir(parents=True)
    _memories(settings, str(project), str(tmp / "other"))
    yield settings, project
    reset_days(local_runtime, [DAY])


def _ids(settings: Settings) -> dict[str, str]:
    with make_client(settings) as es:
        hits = es.search(index=SUMMARY_INDEX, query={"term": {"partition": DAY}}, size=10)["hits"]["hits"]
    return {h["_source"]["turn_id"]: h["_id"] for h in hits}


def test_a_file_finds_the_memories_that_name_it_and_no_others(recorded: tuple[Settings, Path]) -> None:
    settings, project = recorded
    ids = _ids(settings)
    with make_client(settings) as es, embeddings_client(settings) as embedder:
        search = MemorySearch(es, embedder)
        mine = Filters(project=str(project))
        assert [r.id for r in search.about_file(str(project / "src" / "theme.ts"), mine)] == [ids["t1"]]
        assert [r.id for r in search.about_file("lib/theme.ts", mine)] == [ids["t2"]]  # relative to the project
        assert search.about_file(str(project / "src" / "app.ts"), mine) == []
        # Without a project, the bare name reaches the other project's memory too; with one, never.
        assert ids["t3"] in {r.id for r in search.about_file("theme.ts")}


def test_the_service_answers_with_a_marked_reminder_or_nothing(recorded: tuple[Settings, Path]) -> None:
    settings, project = recorded
    with memory_service(settings) as base:
        params = {"path": str(project / "src" / "theme.ts"), "project": str(project), "format": "text"}
        text = httpx.get(f"{base}/api/v1/about-file", params=params).text
        assert text.startswith("[memory about src/theme.ts] ") and GOTCHA in text and _ids(settings)["t1"] in text
        assert httpx.get(f"{base}/api/v1/about-file", params=params | {"path": "README.md"}).text == ""
        as_json = httpx.get(f"{base}/api/v1/about-file", params=params | {"format": "json"}).json()
        assert [m["summary"] for m in as_json["data"]] == [GOTCHA]
        assert httpx.get(f"{base}/api/v1/about-file", params=params | {"k": 99}).status_code == 422


def _reads(log: list[dict]) -> list[dict]:
    return [
        e["message"] for e in log
        if e.get("message", {}).get("role") == "toolResult" and e["message"]["toolName"] == "read"
    ]  # fmt: skip


def test_pi_reading_the_file_is_reminded_once_per_session(recorded: tuple[Settings, Path]) -> None:
    settings, project = recorded
    with memory_service(settings) as base:
        pi = PiAgent(settings.sessions_dir.parent, settings, base)
        prompt = "Read the file src/theme.ts and tell me which colour it defines."
        # The harness writes the whole call (the small model garbles a path now and then): pi runs its real
        # `read`, the extension's handler adds what it adds.
        call = {"MEMORY_TEST_FIRST_CALL": json.dumps({"path": "src/theme.ts"})}
        first = pi.run(project, prompt, nudge="read", tools="read", env=call)
        assert finished(first), first.stderr
        [read] = _reads(entries(pi.last_session(project)))
        shown = "\n".join(part.get("text", "") for part in read["content"])
        assert not read.get("isError") and "rgb(200, 80, 40)" in shown, shown  # the file itself, as read
        assert shown.count("[memory about src/theme.ts]") == 1 and GOTCHA in shown, shown
        assert RULE not in shown  # lib/theme.ts is another file

        # The same session, resumed, reads the file again: the reminder is not repeated.
        again = pi.run(project, "Read src/theme.ts again.", nudge="read", tools="read", continue_session=True, env=call)
        assert finished(again), again.stderr
        reads = _reads(entries(pi.last_session(project)))
        assert len(reads) == 2 and "rgb(200, 80, 40)" in str(reads[1]["content"])
        assert "[memory about" not in str(reads[1]["content"])

        # Turned off by its setting: a new session reads the file and is told nothing.
        off = pi.run(project, prompt, nudge="read", tools="read", env=call | {"MEMORY_FILE_RECALL": "off"})
        assert finished(off), off.stderr
        [plain] = _reads(entries(pi.last_session(project)))
        assert "rgb(200, 80, 40)" in str(plain["content"]) and "[memory about" not in str(plain["content"])
    with make_client(settings) as es:  # reading never wrote a memory
        assert (
            not es.indices.exists(index=NOTES_INDEX)
            or not es.count(index=NOTES_INDEX, query={"term": {"project": str(project)}})["count"]
        )
