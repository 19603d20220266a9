"""The rough-history corpus (bench/corpus/rough, made by testkit/corpora/make_rough_corpus.py) through the pure code:
every bad case is reported with its file and line, every good message gets a place, and no id or project
becomes an unsafe file name."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from memory_pipeline.names import safe_id
from memory_pipeline.reflect.workspace import ensure_project_dir, project_of
from memory_pipeline.sessions.discovery import scan_sessions
from memory_pipeline.sessions.load import catalog, load_messages
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.sessions.turns import group_turns
from testkit.corpora import make_rough_corpus
from testkit.paths import CORPUS

ROUGH = CORPUS / "rough"
CASES = json.loads((ROUGH / "cases.json").read_text())


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    found, scan_problems = scan_sessions(ROUGH / "sessions")
    files = catalog(found, {})
    messages, report = load_messages(files, tmp_path_factory.mktemp("cache"), Redactor())
    return files, scan_problems, messages, report


def test_the_corpus_has_what_the_issue_asks_for() -> None:
    bad = [c for c in CASES if c["kind"] != "ingested"]
    assert len(bad) >= 30
    assert {"session from 2019", "session from year 9999", "tool output of 200,000 characters"} <= {
        c["case"] for c in CASES
    }


@pytest.mark.parametrize("case", [c for c in CASES if c["kind"] != "ingested"], ids=lambda c: c["case"])
def test_every_bad_case_is_reported_with_its_file_and_line(case: dict, loaded) -> None:  # noqa: ANN001
    _, scan_problems, _, report = loaded
    problems = scan_problems if case["stage"] == "session_files" else report.problems
    assert any(p.file == case["file"] and p.line == case["line"] and p.kind == case["kind"] for p in problems), [
        str(p) for p in problems if p.file == case["file"]
    ]


@pytest.mark.parametrize("case", [c for c in CASES if c["kind"] == "ingested"], ids=lambda c: c["case"])
def test_every_good_file_has_every_message_placed(case: dict, loaded) -> None:  # noqa: ANN001
    files, _, messages, _ = loaded
    assert case["file"] in files["session_file"].to_list()
    rows = messages.filter(pl.col("session_file") == case["file"])
    conversation = rows.filter(~pl.col("is_metadata"))
    assert conversation.height >= 2 and conversation["doc_id"].null_count() == 0
    assert group_turns(rows).height >= 1


def test_days_from_2019_to_9999_and_ids_safe_everywhere(loaded) -> None:  # noqa: ANN001
    files, _, messages, _ = loaded
    assert {"2019-05-02", "2026-03-10", "9999-12-31"} <= set(files["partition"].to_list())
    for session_id in files["session_id"].to_list():
        assert safe_id(session_id) == session_id and "/" not in session_id and len(session_id) <= 96
    for doc_id in messages["doc_id"].drop_nulls().to_list():
        assert "/" not in doc_id and len(doc_id.encode()) <= 512  # Elasticsearch's limit for _id


def test_projects_never_share_or_escape_a_workspace_folder(tmp_path: Path) -> None:
    workspace = tmp_path / "memory"
    folders = {p: ensure_project_dir(workspace, p) for p in ["/work/a-b", "/work/a/b", "..", "/", ""]}
    assert len(set(folders.values())) == len(folders) - 1  # "/" and "" are both "no project"
    for project, folder in folders.items():
        assert folder.resolve().parent == workspace.resolve()
        assert project_of(folder) in (project, "/")


def test_the_corpus_is_what_the_generator_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = make_rough_corpus
    monkeypatch.setattr(module, "OUT", tmp_path)
    monkeypatch.setattr(module, "SESSIONS", tmp_path / "sessions")
    module.cases.clear()
    module.main()
    assert json.loads((tmp_path / "cases.json").read_text()) == CASES
    for path in sorted((ROUGH / "sessions").rglob("*")):
        if path.is_file() and not path.is_symlink():
            assert (tmp_path / path.relative_to(ROUGH)).read_bytes() == path.read_bytes(), path
