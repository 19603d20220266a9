"""Skipping unchanged files, the parse cache, range-splitting IO, and backfill planning."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import astuple
from pathlib import Path

import polars as pl
import pytest
from dagster import AssetKey, DailyPartitionsDefinition, PartitionKeyRange, build_input_context, build_output_context

from memory_pipeline.backfill import day_ranges, newest_first_runs, plan_backfill
from memory_pipeline.io_managers import PolarsParquetIOManager
from memory_pipeline.partitions import instance_with_days, ordered_days
from memory_pipeline.sessions import load
from memory_pipeline.sessions.discovery import agent_roots, scan_sessions
from memory_pipeline.sessions.load import (
    PARSER_VERSION,
    Recorded,
    catalog,
    changes_since_indexed,
    load_messages,
    unread_sessions,
)
from memory_pipeline.sessions.messages import MAX_TEXT_CHARS, TRUNCATED
from memory_pipeline.sessions.redact import Redactor
from testkit.paths import SESSION_FIXTURES


@pytest.fixture
def sessions(tmp_path: Path) -> Path:
    root = tmp_path / "sessions"
    root.mkdir()
    for name in ("telegram-bot-errors.v3.jsonl", "handwritten-cass-v1.jsonl"):
        (root / name).write_bytes((SESSION_FIXTURES / name).read_bytes())
    return root


def _recorded(files: pl.DataFrame) -> dict[str, Recorded]:
    return {
        r["session_id"]: Recorded(r["session_file"], r["size"], r["mtime_ns"], r["fingerprint"], PARSER_VERSION)
        for r in files.iter_rows(named=True)
    }


def test_unchanged_files_are_not_read_again(sessions: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    found, _ = scan_sessions(sessions)
    first = catalog(found, {})
    assert first["changed"].all()
    reads = []
    monkeypatch.setattr(load, "fingerprint", lambda path: reads.append(path) or "x")
    second = catalog(found, _recorded(first))
    assert not second["changed"].any() and reads == []


def test_touched_but_identical_file_is_unchanged(sessions: Path) -> None:
    found, _ = scan_sessions(sessions)
    recorded = _recorded(catalog(found, {}))
    os.utime(sessions / "handwritten-cass-v1.jsonl", (1, 1))
    again = catalog(scan_sessions(sessions)[0], recorded)
    assert not again["changed"].any()


def test_appended_file_is_changed(sessions: Path) -> None:
    found, _ = scan_sessions(sessions)
    recorded = _recorded(catalog(found, {}))
    with (sessions / "handwritten-cass-v1.jsonl").open("a") as handle:
        handle.write(
            json.dumps(
                {
                    "type": "message",
                    "timestamp": "2024-01-15T10:40:00Z",
                    "message": {"role": "user", "content": "one more", "timestamp": 9},
                }
            )
            + "\n"
        )
    again = catalog(scan_sessions(sessions)[0], recorded)
    assert again.filter(pl.col("changed"))["session_file"].to_list() == ["handwritten-cass-v1.jsonl"]


def test_what_changed_since_indexing_is_named_per_day(sessions: Path, tmp_path: Path) -> None:
    found, _ = scan_sessions(sessions)
    first = catalog(found, {})
    recorded = {sid: (f.partition, rec) for f, (sid, rec) in zip(found, _recorded(first).items(), strict=True)}
    days = {f.partition for f in found}
    assert changes_since_indexed(found, recorded, days) == {}
    v1 = next(f for f in found if f.relative_path == "handwritten-cass-v1.jsonl")
    with (sessions / v1.relative_path).open("a") as handle:
        handle.write(json.dumps({"type": "message", "message": {"role": "user", "content": "one more"}}) + "\n")
    (sessions / "telegram-bot-errors.v3.jsonl").unlink()
    extra = sessions / "new.jsonl"
    extra.write_bytes((SESSION_FIXTURES / "handwritten-kuato.v3.jsonl").read_bytes())
    now, _ = scan_sessions(sessions)
    kuato = next(f for f in now if f.relative_path == "new.jsonl")
    changes = changes_since_indexed(now, recorded, days | {kuato.partition})
    telegram = next(f for f in found if f.relative_path == "telegram-bot-errors.v3.jsonl")
    assert changes[v1.partition] == ["handwritten-cass-v1.jsonl: grew"]
    assert changes[telegram.partition] == ["telegram-bot-errors.v3.jsonl: gone"]
    assert changes[kuato.partition] == ["new.jsonl: new file"]
    assert changes_since_indexed(now, recorded, {v1.partition}) == {v1.partition: ["handwritten-cass-v1.jsonl: grew"]}


def test_parse_cache_serves_the_second_load(sessions: Path, tmp_path: Path) -> None:
    files = catalog(scan_sessions(sessions)[0], {})
    first, report = load_messages(files, tmp_path / "cache", Redactor())
    assert (report.parsed_files, report.cached_files) == (2, 0)
    first_problems = report.problems
    second, report = load_messages(files, tmp_path / "cache", Redactor())
    assert (report.parsed_files, report.cached_files) == (0, 2)
    assert second.equals(first)
    # An unchanged set is served by one combined file: the per-file entries are not read, only seen to be there.
    for entry in (tmp_path / "cache").glob("*-*-*-*.json"):
        if not entry.name.startswith("set-"):
            entry.write_text("not read")
    third, report = load_messages(files, tmp_path / "cache", Redactor())
    assert third.equals(first) and report.cached_files == 2 and report.problems == first_problems
    # A lost per-file entry is parsed again (not served by the set and then reported unread run after run).
    lost = [e for e in (tmp_path / "cache").glob("*-*-*-*.parquet") if not e.name.startswith("set-")]
    for entry in lost:
        entry.unlink()
    assert unread_sessions(files, tmp_path / "cache", Redactor()) == set(files["session_id"])
    fourth, report = load_messages(files, tmp_path / "cache", Redactor())
    assert fourth.equals(first) and report.parsed_files == 2 and all(e.exists() for e in lost)
    assert unread_sessions(files, tmp_path / "cache", Redactor()) == set()
    # Another rule set means other redactions: the cache must not answer for it.
    _, report = load_messages(files, tmp_path / "cache", Redactor.with_patterns(["hello"]))
    assert report.parsed_files == 2


def test_parallel_parse_gives_the_same_frame(tmp_path: Path) -> None:
    files = catalog(scan_sessions(SESSION_FIXTURES)[0], {})
    sequential, _ = load_messages(files, tmp_path / "one", Redactor(), workers=1)
    parallel, report = load_messages(files, tmp_path / "two", Redactor(), workers=2, parallel_min_bytes=0)
    assert report.parsed_files == files.height and report.problems
    assert parallel.equals(sequential)


# The IO manager only sees partition keys; a daily definition gives a range without an instance.
session_days = DailyPartitionsDefinition(start_date="2024-06-01")


def test_io_manager_splits_a_range_by_day_and_joins_it_back(tmp_path: Path) -> None:
    manager = PolarsParquetIOManager(base_dir=str(tmp_path))
    frame = pl.DataFrame({"partition": ["2024-06-01", "2024-06-03", "2024-06-03"], "x": [1, 2, 3]})
    days = ["2024-06-01", "2024-06-02", "2024-06-03"]
    out = build_output_context(
        asset_key=AssetKey("raw_messages"),
        asset_partitions_def=session_days,
        asset_partition_key_range=PartitionKeyRange(days[0], days[-1]),
    )
    manager.handle_output(out, frame)
    assert sorted(p.name for p in (tmp_path / "raw_messages").iterdir()) == [
        "2024-06-01.parquet",
        "2024-06-03.parquet",
        "_schema.parquet",
    ]
    both = build_input_context(
        asset_key=AssetKey("raw_messages"),
        asset_partitions_def=session_days,
        asset_partition_key_range=PartitionKeyRange(days[0], days[-1]),
    )
    assert manager.load_input(both).sort("x").equals(frame)
    quiet = build_input_context(
        asset_key=AssetKey("raw_messages"), asset_partitions_def=session_days, partition_key="2024-06-02"
    )
    empty = manager.load_input(quiet)
    assert empty.is_empty() and empty.schema == frame.schema


def test_backfill_makes_every_session_day_a_partition_however_old_or_far_ahead(sessions: Path) -> None:
    for name, day in (("old.jsonl", "2019-03-02"), ("ahead.jsonl", "9999-12-31")):
        header = {"type": "session", "version": 3, "id": name, "timestamp": f"{day}T10:00:00Z", "cwd": "/w"}
        (sessions / name).write_text(json.dumps(header) + "\n")
    instance = instance_with_days([])
    plan = plan_backfill(instance, sessions, everything=False)
    assert plan.days == plan.added == ["2019-03-02", "2024-01-15", "2026-03-18", "9999-12-31"]
    assert plan.todo == plan.days[::-1]  # the most recent first
    assert ordered_days(instance) == plan.days
    again = plan_backfill(instance, sessions, everything=False, start="2025-01-01")
    assert again.days == ["2026-03-18", "9999-12-31"] and again.todo == ["9999-12-31", "2026-03-18"]
    assert again.added == []


def test_backfill_runs_cover_only_wanted_days_in_partition_order() -> None:
    # A history found later than newer days: partitions are in insertion order, ranges follow it.
    order = ["2026-01-01", "2026-01-02", "2019-05-01", "2019-05-02", "2019-05-09"]
    assert day_ranges(["2026-01-02", "2019-05-01", "2019-05-09"], order) == [
        ("2026-01-02", "2019-05-01"),
        ("2019-05-09", "2019-05-09"),
    ]
    assert day_ranges(order, order) == [("2026-01-01", "2019-05-09")]
    assert day_ranges([], order) == []


def test_backfill_runs_the_newest_day_first_then_doubling_stretches() -> None:
    order = [f"2026-01-{d:02d}" for d in range(1, 11)]  # ten days, added in date order
    assert newest_first_runs(order, order) == [
        ("2026-01-10", "2026-01-10"),  # useful after one day's run
        ("2026-01-08", "2026-01-09"),
        ("2026-01-04", "2026-01-07"),
        ("2026-01-01", "2026-01-03"),
    ]
    # A done day (01-08) splits a tier into two runs, the newer first; every run covers only days to run.
    todo = [d for d in order if d != "2026-01-08"]
    assert newest_first_runs(todo, order) == [
        ("2026-01-10", "2026-01-10"),
        ("2026-01-09", "2026-01-09"),
        ("2026-01-07", "2026-01-07"),
        ("2026-01-03", "2026-01-06"),
        ("2026-01-01", "2026-01-02"),
    ]
    # A history found later than newer days: partitions in insertion order, runs still newest first.
    found_late = ["2026-01-01", "2026-01-02", "2019-05-01", "2019-05-02"]
    assert newest_first_runs(found_late, found_late) == [
        ("2026-01-02", "2026-01-02"),
        ("2026-01-01", "2026-01-01"),  # its tier's other day, 2019-05-02, is no neighbour: a run of its own
        ("2019-05-02", "2019-05-02"),
        ("2019-05-01", "2019-05-01"),
    ]
    assert newest_first_runs([], order) == []


def test_a_gemini_chat_moved_to_another_project_is_read_again(tmp_path: Path) -> None:
    """The chat's project is the `.project_root` file beside it: changing it changes the parse (issue 45)."""
    gemini = tmp_path / "tmp"
    shutil.copytree(SESSION_FIXTURES.parent / "gemini-cli" / "synthetic", gemini)
    roots = agent_roots(tmp_path / "pi", None, None, gemini)
    files = catalog(scan_sessions(roots)[0], {})
    first, _ = load_messages(files, tmp_path / "cache", Redactor())
    assert set(first["project"]) == {"/home/dev/overseer"}
    recorded = {
        r["session_id"]: Recorded(
            r["session_file"], r["size"], r["mtime_ns"], r["fingerprint"], PARSER_VERSION, r["project"]
        )
        for r in files.iter_rows(named=True)
    }
    (gemini / "overseer" / ".project_root").write_text("/home/dev/renamed\n")
    found = scan_sessions(roots)[0]
    again = catalog(found, recorded)
    assert again["changed"].all()  # the manifest's project differs: the sync compares them again
    moved, report = load_messages(again, tmp_path / "cache", Redactor())
    assert set(moved["project"]) == {"/home/dev/renamed"} and report.parsed_files == files.height
    days = set(again["partition"])
    changes = changes_since_indexed(found, {sid: ("d", rec) for sid, rec in recorded.items()}, days | {"d"})
    said = [c for cs in changes.values() for c in cs]
    assert len(said) == files.height
    assert all(c.endswith(": now in project /home/dev/renamed (was /home/dev/overseer)") for c in said), said
    # A manifest written before it kept the project is not a change.
    older = {sid: Recorded(*astuple(rec)[:5]) for sid, rec in recorded.items()}
    assert not catalog(found, older)["changed"].any()


def test_a_file_cut_short_is_said_to_have_shrunk(sessions: Path) -> None:
    found, _ = scan_sessions(sessions)
    recorded = {sid: (f.partition, rec) for f in found for sid, rec in _recorded(catalog([f], {})).items()}
    path = sessions / "handwritten-cass-v1.jsonl"
    size = path.stat().st_size
    path.write_bytes(b"\n".join(path.read_bytes().split(b"\n")[:3]) + b"\n")
    now, _ = scan_sessions(sessions)
    v1 = next(f for f in now if f.relative_path == "handwritten-cass-v1.jsonl")
    [why] = changes_since_indexed(now, recorded, {v1.partition})[v1.partition]
    assert why == (
        f"handwritten-cass-v1.jsonl: shrank from {size:,} to {v1.size:,} bytes: what was indexed from it is kept, "
        "marked as no longer in the file"
    )


def test_a_text_cut_to_fit_is_listed_with_its_file_and_line(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = root / "long.jsonl"
    lines = (SESSION_FIXTURES / "handwritten-cass-v1.jsonl").read_text().rstrip("\n").split("\n")
    huge = {
        "type": "message",
        "timestamp": "2024-01-15T10:40:00.000Z",
        "message": {"role": "user", "content": "y" * 250_000},
    }
    root.mkdir()
    path.write_text("\n".join([*lines, json.dumps(huge)]) + "\n")
    messages, report = load_messages(catalog(scan_sessions(root)[0], {}), tmp_path / "cache", Redactor())
    cut = [p for p in report.problems if p.kind == TRUNCATED]
    assert [str(p) for p in cut] == [
        f"long.jsonl:{len(lines) + 1}: truncated: content cut from 250,000 to {MAX_TEXT_CHARS:,} characters"
    ]
    [row] = messages.filter(pl.col("line") == len(lines) + 1).iter_rows(named=True)
    assert row["content_truncated"] and row["content"].startswith("y" * MAX_TEXT_CHARS)
