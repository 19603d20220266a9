"""Faults and bad inputs (issue 45 and the fault cases before it): what was done, what happened, what was lost
and what was duplicated, measured by the tests that do each case on the real servers (e2e) or on the pure
functions (unit), one pytest run per test file, each case's outcome read from pytest's JUnit report.

`uv run python -m bench faults` runs every case's file; `--files=test_healing.py,test_faults.py` only those:
the other rows keep what the section said of them before (with the run that measured them), or say they were
not run. Each case's "lost" and "duplicated" are what its
test asserts (counts compared with what the files hold): a passed test measured them as stated, a failed one
did not, and the row says so.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from bench.results_file import RESULTS, table, write_section
from testkit.paths import ROOT

TESTS = ROOT / "memory_pipeline_tests"


@dataclass(frozen=True)
class Case:
    what: str  # what was done
    test: str  # file::test under memory_pipeline_tests
    happened: str  # what the system did (when its test passes)
    lost: str
    duplicated: str
    issue: str


CASES = [
    Case("a day's memory-raw documents deleted in Elasticsearch, then `backfill`",
         "e2e/test_healing.py::test_documents_deleted_from_memory_raw_are_restored_by_backfill",
         "plan: 'memory-raw holds 0 of its 5 documents'; the run writes the 5 back; check index_equals_manifest",
         "0 of 5", "0", "45"),
    Case("the same, then `backfill --all`",
         "e2e/test_healing.py::test_documents_deleted_from_memory_raw_are_restored_by_backfill",
         "5 written back, every check passed, no failed check listed", "0 of 5", "0", "45"),
    Case("a session file truncated after indexing (5 messages to 2)",
         "e2e/test_healing.py::test_a_file_cut_short_keeps_what_was_indexed_from_it",
         "plan: 'shrank from … bytes: what was indexed from it is kept, marked'; 3 kept with left_file_at",
         "0 of 5", "0", "45"),
    Case("a per-file parse cache entry deleted",
         "e2e/test_healing.py::test_a_lost_parse_cache_entry_is_rebuilt",
         "the file is parsed again and the entry rebuilt; no 'not read this run'", "0", "0", "45"),
    Case("a 300,000-character message",
         "e2e/test_healing.py::test_a_message_cut_to_fit_is_counted_and_logged",
         "cut to 100,000 characters, logged as 'a.jsonl:<line>: truncated: content cut from 300,000…', "
         "counted in truncated_messages", "200,000 characters of 1 message (said)", "0", "45"),
    Case("a Gemini chat's .project_root changed after indexing",
         "unit/test_load_and_io.py::test_a_gemini_chat_moved_to_another_project_is_read_again",
         "the chat counts as changed (manifest keeps the project), parsed again under the new project",
         "0", "0", "45"),
    Case("SESSIONS_DIR pointed elsewhere, a new session on the old folder's day",
         "e2e/test_healing.py::test_memories_of_a_folder_no_longer_configured_stay_until_a_person_removes_them",
         "the day runs for the new file only; the old folder's raw documents and observations stay, "
         "`folders` lists it as no longer configured; `folders --forget` removes them", "0", "0", "45"),
    Case("a memory of a folder no longer configured, in search results",
         "e2e/test_healing.py::test_memories_of_a_folder_no_longer_configured_stay_until_a_person_removes_them",
         "kept and searchable; every search row of it says '(folder no longer configured: …)' (CLI text and JSON), "
         "a row of a configured folder does not", "0", "0", "45"),
    Case("a server `up` started (embed) killed",
         "e2e/test_supervisor_servers.py::test_the_supervisor_starts_a_killed_server_again",
         "the supervisor starts it again ('embed: restarted')", "-", "-", "45"),
    Case("embed server down during a search through the service",
         "e2e/test_supervisor_servers.py::test_search_through_the_service_says_the_embeddings_are_down",
         "BM25 answers; the text's first line 'note: embeddings down …', JSON degraded", "-", "-", "45"),
    Case("chat server down (nothing at its port) during a search and a recall through the service",
         "e2e/test_supervisor_servers.py::test_search_and_recall_answer_with_the_chat_server_down",
         "both answer from memory, whole (no 'degraded', no note): neither calls the chat model", "-", "-", "45"),
    Case("a memory given to a session (the injection ledger), then forgotten through the API",
         "e2e/test_undo_forget.py::test_a_forget_is_undone_from_every_surface",
         "the ledger's line keeps the memory's id, its text blanked and marked forgotten; /api/v1/injected and "
         "the Given page no longer show it", "-", "-", "45"),
    Case("a memory forgotten, then `review apply` of its ticked proposal",
         "unit/test_review.py::test_forgetting_a_memory_withdraws_its_proposal_and_review_apply_never_promotes_it",
         "the proposal is withdrawn, never promoted", "-", "0", "45"),
    Case("a memory edited while its proposal is pending",
         "unit/test_review.py::test_editing_a_memory_rewrites_its_pending_proposal_and_promote_writes_the_new_text",
         "the proposal carries the new text; promote writes it once", "-", "0", "45"),
    Case("an edited memory's turn summarised again with other wording",
         "unit/test_corrections.py::test_an_edited_memory_keeps_its_id_through_re_runs_that_word_it_anew",
         "the memory keeps its id", "0", "0", "45"),
    Case("`POST /api/v1/memories` with author person and a token",
         "unit/test_service.py::test_a_note_is_a_persons_only_from_their_browser_session_never_from_a_token",
         "stored as the agent's", "-", "-", "45"),
    Case("search before the first run",
         "unit/test_service.py::test_before_the_first_run_search_answers_empty_and_the_page_says_no_history_is_indexed",
         "empty answer, the page says no history is indexed", "-", "-", "45"),
    Case("Claude Code reply split over several lines",
         "unit/test_agent_sources.py::test_claude_code_tokens_are_counted_once_per_api_reply",
         "usage counted once per message.id", "-", "0", "45"),
    Case("Elasticsearch killed mid-bulk, restarted, run again",
         "e2e/test_faults.py::test_elasticsearch_killed_mid_bulk_loses_and_doubles_nothing",
         "the re-run writes exactly the documents not acknowledged", "0", "0", "earlier"),
    Case("chat server killed mid llm_ideas, run again",
         "e2e/test_faults.py::test_chat_server_killed_mid_llm_ideas_reads_no_finished_turn_again",
         "no finished turn read again", "0", "0", "earlier"),
    Case("embedding server killed mid embeddings, run again",
         "e2e/test_faults.py::test_embedding_server_killed_mid_embeddings_leaves_every_memory_with_a_vector",
         "every memory has a vector", "0", "0", "earlier"),
    Case("sessions folder taken away mid-run",
         "e2e/test_faults.py::test_folder_taken_away_mid_run_is_read_when_it_is_back",
         "read when it is back", "0", "0", "earlier"),
    Case("a day whose run failed", "e2e/test_faults.py::test_a_day_whose_run_failed_is_backfilled_again",
         "backfilled again", "0", "0", "earlier"),
]  # fmt: skip

# Cases of issue 45 with no test yet: said, never left out of the table.
OPEN = []


def run_file(path: str) -> tuple[dict[str, str], float]:
    """(test name -> passed / failed / skipped, seconds) of one pytest run over one test file."""
    with tempfile.TemporaryDirectory(prefix="bench-faults-") as tmp:
        report = Path(tmp) / "junit.xml"
        begin = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "pytest", str(TESTS / path), "-q", "-p", "no:cacheprovider",
             f"--basetemp={tmp}/t", f"--junitxml={report}"],
            cwd=ROOT, check=False, capture_output=True,
        )  # fmt: skip
        seconds = time.perf_counter() - begin
        outcomes = {}
        if report.exists():
            for case in ET.parse(report).getroot().iter("testcase"):
                failed = case.find("failure") is not None or case.find("error") is not None
                skipped = case.find("skipped") is not None
                name = case.get("name", "").split("[")[0]  # a parametrised test: failed if any of its cases did
                outcome = "failed" if failed else "skipped" if skipped else "passed"
                if outcomes.get(name) != "failed":
                    outcomes[name] = outcome
    return outcomes, seconds


SECTION = "faults and bad inputs"
NOT_RUN = "not run by this command"


def earlier_rows() -> tuple[dict[str, list[str]], list[str]]:
    """What the section said before: its rows by test name (those measured), and its lines of runs."""
    text = RESULTS.read_text() if RESULTS.exists() else ""
    start, end = text.find(f"<!-- {SECTION} -->"), text.find(f"<!-- /{SECTION} -->")
    if start < 0 or end < 0:
        return {}, []
    rows, runs = {}, []
    for line in text[start:end].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 7 and cells[5] not in (NOT_RUN, "test", "open"):
            rows[cells[6]] = cells
        elif line.startswith("- `"):
            runs.append(line)
    return rows, runs


def main(flags: list[str]) -> None:
    chosen = next((f.split("=", 1)[1].split(",") for f in flags if f.startswith("--files=")), None)
    files = sorted({c.test.split("::")[0] for c in CASES})
    if chosen is not None:
        files = [f for f in files if Path(f).name in chosen]
    outcomes: dict[str, str] = {}
    timing = []
    for path in files:
        found, seconds = run_file(path)
        outcomes |= {f"{path}::{name}": outcome for name, outcome in found.items()}
        timing.append(f"{path}: {seconds:.0f} s")
        print(f"{path}: {found} in {seconds:.0f} s", flush=True)
    before, earlier_runs = earlier_rows()
    command = "uv run python -m bench faults" + "".join(f" {f}" for f in flags)
    rows = []
    for case in CASES:
        outcome = outcomes.get(case.test, NOT_RUN)
        if outcome == NOT_RUN and f"`{case.test.split('::')[1]}`" in before:
            rows.append(before[f"`{case.test.split('::')[1]}`"])
            continue
        passed = outcome == "passed"
        rows.append(
            [case.issue, case.what, case.happened if passed else f"({outcome})", case.lost if passed else "?",
             case.duplicated if passed else "?", outcome, f"`{case.test.split('::')[1]}`"]
        )  # fmt: skip
    rows += [["45", what, why, "?", "?", "open", "-"] for what, why in OPEN]
    run_files = {t.split(":")[0] for t in timing}
    runs = [line for line in earlier_runs if line.split("`")[1] not in run_files]
    runs += [f"- `{t.split(': ')[0]}`: {t.split(': ')[1]}, `{command}`" for t in timing]
    body = (
        "Each case done by its test against the real servers (e2e) or on the pure functions (unit); lost and "
        "duplicated are what the test asserts, so they hold only where it passed. A row of a file not run by "
        "the command above keeps what its last run measured (the runs below say which command ran each file)."
        "\n\n"
        + table(["issue", "what was done", "what happened", "lost", "duplicated", "test", "by"], rows)
        + "\n\nRuns:\n\n"
        + "\n".join(sorted(runs))
        + "\n"
    )
    write_section(SECTION, command, body)
