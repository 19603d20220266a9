"""Ingest end to end: real fixture files into the real Elasticsearch, through Dagster's materialize()."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from memory_pipeline.settings import Settings, isolated_settings
from testkit.ingest_helpers import cli_env, copy_fixture, indexed, reset_days, run_ingest

DAY = "2024-06-03"
BRANCHY = "generated-pi-0.73.1-branches-labels-compaction.v3.jsonl"
SYSTEM = "generated-pi-1.6.0-system-usage-context-edit.v3.jsonl"
V1 = "handwritten-cass-v1.jsonl"


@pytest.fixture
def day(local_runtime: Settings) -> str:
    reset_days(local_runtime, [DAY, "2024-06-04"])
    return DAY


def _sid(tag: str) -> str:
    return f"test-{tag}-{uuid.uuid4().hex[:8]}"


def test_partition_twice_second_run_writes_nothing(local_runtime: Settings, tmp_path: Path, day: str) -> None:
    sessions = tmp_path / "sessions"
    ids = [_sid("branchy"), _sid("system"), _sid("v1")]
    for name, sid in zip([BRANCHY, SYSTEM, V1], ids, strict=True):
        copy_fixture(name, sessions / "--home-alice-work-demo--" / f"{sid}.jsonl", sid, day)

    first = run_ingest(local_runtime, sessions, tmp_path / "state", day)
    assert first.success and all(first.checks.values()), first.check_metadata
    assert set(first.checks) == {
        "turn_integrity",
        "index_equals_messages",
        "every_file_represented",
        "rerun_changes_nothing",
        "every_message_placed",
        "index_equals_manifest",
    }
    # 23 + 12 + 5 conversation messages (the 1.6.0 file's 2 system messages are metadata)
    assert first.metadata["memory_raw_index"]["documents"] == 40
    assert first.metadata["memory_raw_index"]["written"] == 40
    assert first.metadata["turns"]["turns"] == 4 + 3 + 2

    docs = indexed(local_runtime, {"terms": {"session_id": ids}})
    assert len(docs) == 40
    for doc in docs:
        assert doc["_id"] == doc["doc_id"] == f"{doc['session_id']}_{doc['turn_id']}_{doc['message_index']}"
        assert doc["partition"] == day and doc["project"] == "/home/alice/work/demo-project" or doc["project"]

    second = run_ingest(local_runtime, sessions, tmp_path / "state", day)
    assert second.success and all(second.checks.values()), second.check_metadata
    assert second.metadata["session_files"]["changed_files"] == 0
    assert second.metadata["raw_messages"]["cached_files"] == 3
    assert (second.metadata["memory_raw_index"]["written"], second.metadata["memory_raw_index"]["deleted"]) == (0, 0)
    assert len(indexed(local_runtime, {"terms": {"session_id": ids}})) == 40


def test_planted_secrets_never_reach_elasticsearch(local_runtime: Settings, tmp_path: Path, day: str) -> None:
    secrets = {
        "openai": "sk-proj-Zq8XwV2bN4mK6jH8gF0dS2aP4oI6uY8tR0eW",
        "aws": "AKIAZ7Y6X5W4V3U2T1S0",
        "url": "s3cr3t-pa55w0rd",
        "custom": "corp-0123456789abcdef0123456789abcdef",
    }
    sid = _sid("secrets")
    lines = [
        {"type": "session", "version": 3, "id": sid, "timestamp": f"{day}T08:00:00Z", "cwd": "/w"},
        {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "timestamp": f"{day}T08:00:01Z",
            "message": {
                "role": "user",
                "timestamp": 1,
                "content": f"my key is {secrets['openai']} and the corp token {secrets['custom']}",
            },
        },
        {
            "type": "message",
            "id": "a1",
            "parentId": "u1",
            "timestamp": f"{day}T08:00:02Z",
            "message": {
                "role": "assistant",
                "timestamp": 2,
                "stopReason": "toolUse",
                "content": [
                    {
                        "type": "toolCall",
                        "id": "c1",
                        "name": "bash",
                        "arguments": {"command": f"AWS_ACCESS_KEY_ID={secrets['aws']} aws s3 ls"},
                    }
                ],
            },
        },
        {
            "type": "message",
            "id": "t1",
            "parentId": "a1",
            "timestamp": f"{day}T08:00:03Z",
            "message": {
                "role": "toolResult",
                "toolCallId": "c1",
                "toolName": "bash",
                "isError": True,
                "timestamp": 3,
                "content": [{"type": "text", "text": f"error: postgres://app:{secrets['url']}@db/x refused"}],
            },
        },
        {
            "type": "message",
            "id": "a2",
            "parentId": "t1",
            "timestamp": f"{day}T08:00:04Z",
            "message": {
                "role": "assistant",
                "timestamp": 4,
                "stopReason": "error",
                "content": [],
                "errorMessage": f"upstream rejected key {secrets['openai']}",
            },
        },
    ]
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    (sessions / f"{sid}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))

    run = run_ingest(local_runtime, sessions, tmp_path / "state", day, redact_extra_patterns=[r"corp-[0-9a-f]{32}"])
    assert run.success and all(run.checks.values())
    assert run.metadata["raw_messages"]["masked_secrets"] >= 5
    docs = indexed(local_runtime, {"term": {"session_id": sid}})
    assert len(docs) == 4
    stored = json.dumps(docs)
    for secret in secrets.values():
        assert secret not in stored
        phrase = {"multi_match": {"query": secret, "type": "phrase", "fields": ["*"], "lenient": True}}
        assert indexed(local_runtime, {"bool": {"filter": [{"term": {"session_id": sid}}], "must": [phrase]}}) == []
    assert "[REDACTED:openai-key]" in stored and "[REDACTED:custom-1]" in stored


def test_rewrites_branch_switches_and_deletions_leave_the_index_equal_to_the_files(
    local_runtime: Settings, tmp_path: Path, day: str
) -> None:
    sessions = tmp_path / "sessions"
    v1_sid, branchy_sid = _sid("v1"), _sid("branchy")
    v1_path = copy_fixture(V1, sessions / "v1.jsonl", v1_sid, day)
    branchy_path = copy_fixture(BRANCHY, sessions / "branchy.jsonl", branchy_sid, day)
    assert run_ingest(local_runtime, sessions, tmp_path / "state", day).success
    before = {d["_id"] for d in indexed(local_runtime, {"term": {"session_id": v1_sid}})}
    assert all("_L0000" in i for i in before)

    # pi migrates a v1 file in place: version 3 and (random) 8-hex ids on every entry.
    lines = [json.loads(line) for line in v1_path.read_text().splitlines() if line.strip()]
    lines[0]["version"] = 3
    previous = None
    for number, entry in enumerate(lines[1:]):
        entry["id"], entry["parentId"] = f"{number + 0xA0:08x}", previous
        previous = entry["id"]
    v1_path.write_text("".join(json.dumps(line) + "\n" for line in lines))

    # The user goes back to the first prompt and continues from there: a new branch becomes active.
    with branchy_path.open("a") as handle:
        handle.write(
            json.dumps(
                {
                    "type": "message",
                    "id": "beef0001",
                    "parentId": "d7fd86f8",
                    "timestamp": f"{day}T10:00:00Z",
                    "message": {
                        "role": "assistant",
                        "content": [{"type": "text", "text": "Sure."}],
                        "stopReason": "stop",
                        "timestamp": 9,
                    },
                }
            )
            + "\n"
        )
    run = run_ingest(local_runtime, sessions, tmp_path / "state", day)
    assert run.success and all(run.checks.values()), run.check_metadata
    after = {d["_id"] for d in indexed(local_runtime, {"term": {"session_id": v1_sid}})}
    assert len(after) == len(before) == 5 and not (after & before)
    branchy = indexed(local_runtime, {"term": {"session_id": branchy_sid}})
    active = {d["entry_id"] for d in branchy if d["on_active_path"]}
    assert active == {"d7fd86f8", "beef0001"} and len(branchy) == 24
    assert run.metadata["memory_raw_index"]["deleted"] >= 5

    branchy_path.unlink()
    run = run_ingest(local_runtime, sessions, tmp_path / "state", day)
    assert run.success and all(run.checks.values()) and run.metadata["memory_raw_index"]["gone_sessions"] == 1
    assert indexed(local_runtime, {"term": {"session_id": branchy_sid}}) == []


def test_bad_input_is_reported_and_the_good_files_still_land(local_runtime: Settings, tmp_path: Path, day: str) -> None:
    sessions = tmp_path / "sessions"
    good = _sid("good")
    copy_fixture(SYSTEM, sessions / "good.jsonl", good, day)
    (sessions / "empty.jsonl").write_bytes(b"")
    (sessions / "no-header.jsonl").write_text('{"type":"message","id":"x"}\n')
    (sessions / "binary.jsonl").write_bytes(bytes(range(256)) * 100)
    messy = _sid("messy")
    header = json.dumps({"type": "session", "version": 3, "id": messy, "timestamp": f"{day}T07:00:00Z", "cwd": "/m"})
    user = json.dumps(
        {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "timestamp": f"{day}T07:00:01Z",
            "message": {"role": "user", "content": "fix the build", "timestamp": 1},
        }
    )
    orphan = json.dumps(
        {
            "type": "message",
            "id": "a1",
            "parentId": "missing",
            "timestamp": f"{day}T07:00:02Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "done"}], "timestamp": 2},
        }
    )
    (sessions / "messy.jsonl").write_bytes(
        b"\n".join(
            [
                header.encode(),
                b"{broken",
                user.encode(),
                user.encode().replace(b"fix", b"\xff\xfe"),
                orphan.encode(),
                b'{"type":"message","id":"torn"',
            ]
        )
    )
    run = run_ingest(local_runtime, sessions, tmp_path / "state", day)
    assert run.success and all(run.checks.values()), run.check_metadata
    assert run.metadata["session_files"]["files"] == 2 and run.metadata["session_files"]["not_sessions"] == 3
    problems = run.metadata["raw_messages"]["problem_counts"]
    for kind in ("malformed line", "invalid UTF-8", "dangling parentId", "torn last line", "duplicate entry id"):
        assert problems.get(kind, 0) >= 1, (kind, problems)
    assert "messy.jsonl:2" in run.metadata["raw_messages"]["problems"]
    assert len(indexed(local_runtime, {"term": {"session_id": good}})) == 12
    assert len(indexed(local_runtime, {"term": {"session_id": messy}})) == 3


def test_empty_sessions_directory_ends_cleanly(local_runtime: Settings, tmp_path: Path, day: str) -> None:
    (tmp_path / "sessions").mkdir()
    run = run_ingest(local_runtime, tmp_path / "sessions", tmp_path / "state", day)
    assert run.success and all(run.checks.values())
    assert run.metadata["session_files"]["files"] == 0 and run.metadata["memory_raw_index"]["documents"] == 0


def test_range_backfill_runs_as_one_run(local_runtime: Settings, tmp_path: Path, day: str) -> None:
    sessions = tmp_path / "sessions"
    first, second = _sid("d1"), _sid("d2")
    copy_fixture(V1, sessions / "a.jsonl", first, "2024-06-03")
    copy_fixture("telegram-bot-errors.v3.jsonl", sessions / "b.jsonl", second, "2024-06-04")
    run = run_ingest(
        local_runtime,
        sessions,
        tmp_path / "state",
        tags={"dagster/asset_partition_range_start": "2024-06-03", "dagster/asset_partition_range_end": "2024-06-04"},
    )
    assert run.success and all(run.checks.values()), run.check_metadata
    assert run.metadata["memory_raw_index"]["documents"] == 5 + 4
    assert {d["partition"] for d in indexed(local_runtime, {"terms": {"session_id": [first, second]}})} == {
        "2024-06-03",
        "2024-06-04",
    }
    # the same range again, as two single-day runs: nothing to write
    for single in ("2024-06-03", "2024-06-04"):
        again = run_ingest(local_runtime, sessions, tmp_path / "state", single)
        assert again.metadata["memory_raw_index"]["written"] == 0 and all(again.checks.values())


@pytest.mark.dagster_storage
def test_backfill_command_ingests_the_missing_days_once(local_runtime: Settings, tmp_path: Path, day: str) -> None:
    import subprocess
    import sys

    sessions = tmp_path / "sessions"
    sid = _sid("cli")
    copy_fixture(V1, sessions / "a.jsonl", sid, day)
    env = cli_env(isolated_settings(local_runtime, tmp_path, sessions_dir=sessions))
    first = subprocess.run(
        [sys.executable, "-m", "memory_pipeline", "backfill"], env=env, capture_output=True, text=True, timeout=300
    )
    assert first.returncode == 0, first.stderr[-2000:]
    assert f"{day}..{day}: run" in first.stdout and "success" in first.stdout
    assert len(indexed(local_runtime, {"term": {"session_id": sid}})) == 5
    again = subprocess.run(
        [sys.executable, "-m", "memory_pipeline", "backfill"], env=env, capture_output=True, text=True, timeout=300
    )
    assert again.returncode == 0 and "nothing to backfill" in again.stdout
