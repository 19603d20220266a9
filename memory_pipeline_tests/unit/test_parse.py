"""The tolerant parser on every real fixture, and on each kind of bad input."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from memory_pipeline.sessions.discovery import scan_sessions
from memory_pipeline.sessions.messages import session_messages, to_frame
from memory_pipeline.sessions.parse import parse_session, read_header
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.sessions.turns import group_turns
from testkit.paths import SESSION_FIXTURES

# Counted by hand from the files (and, for the 0.73.1 file, stated in SOURCES.md):
# entries (non-header), active path length, branch points, message rows, turns on the active path.
EXPECTED = {
    "generated-pi-0.73.1-branches-labels-compaction.v3.jsonl": (30, 12, 2, 23, 4),
    "generated-pi-1.6.0-system-usage-context-edit.v3.jsonl": (19, 8, 1, 14, 3),
    "handwritten-agentsview-unknown-types.jsonl": (9, 9, 0, 6, 2),
    "handwritten-cass-v1.jsonl": (7, 7, 0, 5, 2),
    "handwritten-kuato.v3.jsonl": (5, 4, 0, 4, 1),
    "pi-mono-large-session.v1.jsonl": (1018, 1018, 0, 914, 88),
    "real-pi-1.6.0-memory-briefing-and-tool.v3.jsonl": (8, 8, 0, 6, 1),
    "telegram-bot-errors.v3.jsonl": (6, 6, 0, 4, 2),
}


def _frame(path: Path) -> pl.DataFrame:
    rows, _ = session_messages(parse_session(path), Redactor(), "p")
    return to_frame(rows)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_counts(name: str) -> None:
    entries, path_len, branch_points, rows, turns = EXPECTED[name]
    session = parse_session(SESSION_FIXTURES / name)
    frame = _frame(SESSION_FIXTURES / name)
    assert (len(session.entries), len(session.active_path), session.branch_points) == (entries, path_len, branch_points)
    assert frame.height == rows
    assert group_turns(frame).height == turns
    # doc ids are unique and every conversation message has one
    docs = frame.filter(~pl.col("is_metadata"))
    assert docs["doc_id"].null_count() == 0 and docs["doc_id"].n_unique() == docs.height


def test_every_fixture_is_covered() -> None:
    assert {p.name for p in SESSION_FIXTURES.glob("*.jsonl")} == set(EXPECTED)


def test_active_path_and_branches_of_the_0731_file() -> None:
    frame = _frame(SESSION_FIXTURES / "generated-pi-0.73.1-branches-labels-compaction.v3.jsonl")
    active = frame.filter(pl.col("on_active_path")).sort("line")
    assert active["entry_id"].to_list() == [
        "d7fd86f8",
        "aa138906",
        "1621c87f",
        "c5bb4d36",
        "eee44b13",
        "692ebb90",
        "4f164881",
        "44cd7db2",
        "01285bdb",
    ]
    assert active["role"].to_list()[:2] == ["user", "branchSummary"]
    assert "compactionSummary" in active["role"].to_list()
    abandoned = frame.filter(~pl.col("on_active_path"))
    assert abandoned.height == 14 and abandoned["doc_id"].null_count() == 0
    labels = frame.filter(pl.col("entry_id") == "d7fd86f8")["labels"].to_list()
    assert labels == [[]], "the label was set, then cleared: last write wins"
    image = frame.filter(pl.col("entry_id") == "3657808d").row(0, named=True)
    assert image["has_image"] and image["image_mime_types"] == ["image/png"] and "iVBOR" not in image["content"]
    thinking = frame.filter(pl.col("entry_id") == "969d241b").row(0, named=True)
    assert thinking["thinking"] == "I should run ls." and "I should run ls" not in thinking["content"]
    assert {c["name"] for c in thinking["tool_calls"]} == {"bash", "read"}
    results = frame.filter((pl.col("role") == "toolResult") & pl.col("tool_call_id").is_in(["toolu_01A", "toolu_01B"]))
    assert set(results["tool_call_entry_id"].to_list()) == {"969d241b"}
    bash = frame.filter(pl.col("role") == "bashExecution").sort("line")
    assert bash["content"].to_list()[0].startswith("$ git status") and bash["exit_code"].to_list()[0] == 0
    assert frame.filter(pl.col("role") == "custom")["custom_type"].to_list() == ["my-extension"]
    assert set(frame["session_name"].unique().to_list()) == {"Demo session"}


def test_system_messages_are_metadata_and_context_edits_are_flagged() -> None:
    frame = _frame(SESSION_FIXTURES / "generated-pi-1.6.0-system-usage-context-edit.v3.jsonl")
    system = frame.filter(pl.col("role") == "system")
    assert system.height == 2 and system["is_metadata"].all() and system["doc_id"].null_count() == 2
    assert "You are an expert coding assistant" in system["content"][0]
    # Both edits sit on the abandoned branch, below their targets: they apply there (branch-relative).
    edited = frame.filter(pl.col("context_edited")).sort("line")
    assert edited["entry_id"].to_list() == ["a4c09a15", "70a80cd2"]
    assert edited["excluded_from_context"].to_list() == [True, False]
    assert not edited["on_active_path"].any()


def test_v1_ids_are_deterministic() -> None:
    path = SESSION_FIXTURES / "pi-mono-large-session.v1.jsonl"
    first, second = parse_session(path), parse_session(path)
    assert [e.id for e in first.entries] == [e.id for e in second.entries]
    assert first.entries[0].id == "L000002" and first.entries[1].parent_id == "L000002"
    assert _frame(path)["doc_id"].to_list() == _frame(path)["doc_id"].to_list()


def test_v1_compaction_index_becomes_an_id(tmp_path: Path) -> None:
    path = tmp_path / "v1.jsonl"
    lines = [
        {"type": "session", "id": "s1", "timestamp": "2025-01-01T00:00:00Z", "cwd": "/p"},
        {
            "type": "message",
            "timestamp": "2025-01-01T00:00:01Z",
            "message": {"role": "user", "content": "a", "timestamp": 1},
        },
        {
            "type": "message",
            "timestamp": "2025-01-01T00:00:02Z",
            "message": {"role": "user", "content": "b", "timestamp": 2},
        },
        {"type": "compaction", "timestamp": "2025-01-01T00:00:03Z", "summary": "s", "firstKeptEntryIndex": 2},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    compaction = parse_session(path).entries[-1].entry
    assert compaction.firstKeptEntryId == "L000003"


def _write(path: Path, *lines: str | bytes, newline_at_end: bool = True) -> Path:
    data = b"\n".join(line.encode() if isinstance(line, str) else line for line in lines)
    path.write_bytes(data + (b"\n" if newline_at_end else b""))
    return path


HEADER = '{"type":"session","version":3,"id":"sess-1","timestamp":"2026-01-02T03:04:05.000Z","cwd":"/w"}'
USER = '{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-02T03:04:06Z","message":{"role":"user","content":"hi","timestamp":1}}'
REPLY = '{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-01-02T03:04:07Z","message":{"role":"assistant","content":[{"type":"text","text":"hello"}],"stopReason":"stop","timestamp":2}}'


def test_empty_file_is_rejected_with_its_name(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    with pytest.raises(ValueError, match=r"empty\.jsonl: empty file"):
        parse_session(path)


def test_first_line_not_a_header(tmp_path: Path) -> None:
    path = _write(tmp_path / "noheader.jsonl", USER, REPLY)
    with pytest.raises(ValueError, match=r"noheader\.jsonl:1: first line is not a session header"):
        parse_session(path)
    with pytest.raises(ValueError, match="not a session header"):
        read_header(path)


def test_malformed_lines_are_skipped_and_reported(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", HEADER, USER, "{not json", '{"type":"message"}', REPLY)
    session = parse_session(path)
    assert [e.id for e in session.entries] == ["u1", "a1"]
    assert [(p.line, p.kind) for p in session.problems] == [(3, "malformed line"), (4, "malformed line")]
    assert all(str(p).startswith(f"{path}:{p.line}: ") for p in session.problems)


def test_torn_last_line_is_left_for_later(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", HEADER, USER, REPLY[:40], newline_at_end=False)
    session = parse_session(path)
    assert [e.id for e in session.entries] == ["u1"]
    assert session.problems[0].kind == "torn last line" and session.problems[0].line == 3


def test_complete_last_line_without_newline_is_kept(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", HEADER, USER, REPLY, newline_at_end=False)
    assert [e.id for e in parse_session(path).entries] == ["u1", "a1"]


def test_invalid_utf8_is_replaced_and_reported(tmp_path: Path) -> None:
    broken = USER.encode().replace(b'"hi"', b'"h\xff\xfe"')
    path = _write(tmp_path / "s.jsonl", HEADER, broken, REPLY)
    session = parse_session(path)
    assert any(p.kind == "invalid UTF-8" and p.line == 2 for p in session.problems)
    frame = to_frame(session_messages(session, Redactor(), "p")[0])
    assert frame.height == 2 and "\ufffd" in frame["content"][0]


def test_a_50mb_line_is_parsed_and_its_text_cut(tmp_path: Path) -> None:
    huge = json.dumps(
        {
            "type": "message",
            "id": "t1",
            "parentId": "a1",
            "timestamp": "2026-01-02T03:04:08Z",
            "message": {
                "role": "toolResult",
                "toolCallId": "c",
                "toolName": "bash",
                "content": [{"type": "text", "text": "x" * 50_000_000}],
                "isError": False,
                "timestamp": 3,
            },
        }
    )
    path = _write(tmp_path / "s.jsonl", HEADER, USER, REPLY, huge)
    frame = to_frame(session_messages(parse_session(path), Redactor(), "p")[0])
    row = frame.filter(pl.col("entry_id") == "t1").row(0, named=True)
    assert row["content_truncated"] and len(row["content"]) < 200_000 and "truncated 49,900,000" in row["content"]


def test_binary_file_with_jsonl_name(tmp_path: Path) -> None:
    path = tmp_path / "blob.jsonl"
    path.write_bytes(bytes(range(256)) * 64)
    with pytest.raises(ValueError, match="blob.jsonl"):
        parse_session(path)
    with pytest.raises(ValueError, match="binary"):
        read_header(path)


def test_dangling_parent_becomes_a_root(tmp_path: Path) -> None:
    orphan = REPLY.replace('"parentId":"u1"', '"parentId":"gone"')
    session = parse_session(_write(tmp_path / "s.jsonl", HEADER, USER, orphan))
    assert session.by_id["a1"].parent_id is None
    assert [(p.line, p.kind) for p in session.problems] == [(3, "dangling parentId")]
    assert session.active_path == ["a1"]


def test_duplicate_entry_ids_in_one_file_keep_both(tmp_path: Path) -> None:
    again = USER.replace('"content":"hi"', '"content":"hi again"')
    session = parse_session(_write(tmp_path / "s.jsonl", HEADER, USER, again, REPLY))
    assert [e.id for e in session.entries] == ["u1#L2", "u1", "a1"]
    assert session.problems[0].kind == "duplicate entry id"


def test_unknown_types_and_roles_are_counted(tmp_path: Path) -> None:
    odd = '{"type":"message","id":"x1","parentId":"a1","timestamp":"2026-01-02T03:04:09Z","message":{"role":"alien","content":"?"}}'
    future = '{"type":"hologram","id":"x2","parentId":"x1","timestamp":"2026-01-02T03:04:10Z"}'
    session = parse_session(_write(tmp_path / "s.jsonl", HEADER, USER, REPLY, odd, future))
    rows, _ = session_messages(session, Redactor(), "p")
    assert len(rows) == 2
    assert session.skipped == {"role alien": 1, "entry type hologram": 1}


def test_discovery_is_recursive_by_header_and_reports_non_sessions(tmp_path: Path) -> None:
    nested = tmp_path / "--home-a-proj--"
    nested.mkdir()
    _write(nested / "2026-01-02T03-04-05-000Z_sess-1.jsonl", HEADER, USER)
    _write(tmp_path / "renamed-import.jsonl", HEADER.replace("sess-1", "sess-2"), USER)
    _write(tmp_path / "notes.jsonl", '{"hello": "world"}')
    (tmp_path / "empty.jsonl").write_bytes(b"")
    found, problems = scan_sessions(tmp_path)
    assert sorted(f.session_id for f in found) == ["sess-1", "sess-2"]
    assert {f.partition for f in found} == {"2026-01-02"}
    assert sorted((p.file, p.kind) for p in problems) == [
        ("empty.jsonl", "not a session file"),
        ("notes.jsonl", "not a session file"),
    ]


def test_forked_copy_with_the_same_session_id_is_reported_once(tmp_path: Path) -> None:
    _write(tmp_path / "a.jsonl", HEADER, USER)
    _write(tmp_path / "b.jsonl", HEADER, USER, REPLY)
    found, problems = scan_sessions(tmp_path)
    assert [f.relative_path for f in found] == ["b.jsonl"]
    assert problems[0].kind == "duplicate session id" and problems[0].file == "a.jsonl"


def test_empty_directory(tmp_path: Path) -> None:
    assert scan_sessions(tmp_path) == ([], [])


def test_forked_files_share_entry_ids_but_not_document_ids(tmp_path: Path) -> None:
    source = SESSION_FIXTURES / "generated-pi-0.73.1-branches-labels-compaction.v3.jsonl"
    lines = source.read_text().split("\n")
    fork = json.loads(lines[0]) | {"id": "forked-session", "parentSession": str(source)}
    (tmp_path / "fork.jsonl").write_text("\n".join([json.dumps(fork), *lines[1:]]))
    original, forked = _frame(source), _frame(tmp_path / "fork.jsonl")
    assert original["entry_id"].to_list() == forked["entry_id"].to_list()
    assert not set(original["doc_id"].drop_nulls()) & set(forked["doc_id"].drop_nulls())
    assert forked["parent_session"].unique().to_list() == [str(source)]


@pytest.mark.parametrize(
    "value",
    [1e23, -1e15, float("nan"), "0001-01-01T00:30:00+01:00", "9999-12-31T23:30:00-01:00", "2026-13-01T00:00:00Z", ""],
)
def test_a_time_that_is_no_time_is_a_value_error_only(value: object) -> None:
    from memory_pipeline.sessions.parse import parse_timestamp

    with pytest.raises(ValueError):
        parse_timestamp(value)  # type: ignore[arg-type]


def test_offsets_are_read_as_utc_and_far_dates_still_work() -> None:
    from datetime import UTC, datetime

    from memory_pipeline.sessions.parse import parse_timestamp

    assert parse_timestamp("2026-01-01T00:30:00+01:00") == datetime(2025, 12, 31, 23, 30, tzinfo=UTC)
    assert parse_timestamp("9999-12-31T08:00:00Z").year == 9999 and parse_timestamp(0).year == 1970
