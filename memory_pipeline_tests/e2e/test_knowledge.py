"""Knowledge, not quotes, end to end: one message with a rule and a decision through the real chat and
embedding servers and Elasticsearch becomes two memories readable alone, a natural question finds the rule
first (and a judgement question, "should I add it with npm?", too), and the rule, promoted, is whole in MEMORY.md
and in the next briefing. The same rule said in another session is read as one memory said in two sessions,
with both evidences."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from dagster import materialize

from memory_pipeline.assets import reflect
from memory_pipeline.partitions import instance_with_days
from memory_pipeline.recall.observations import observation_id
from memory_pipeline.reflect.review import apply_review, parse_review
from memory_pipeline.reflect.workspace import project_dir
from memory_pipeline.resources import build_resources
from memory_pipeline.search.briefing import build_briefing
from memory_pipeline.search.engine import LASTING
from memory_pipeline.search.models import Filters
from memory_pipeline.search.open import open_search
from memory_pipeline.settings import Settings, isolated_settings
from memory_pipeline.stores.elasticsearch import make_client
from memory_pipeline.stores.indices import OBSERVATION_INDEX, SUMMARY_INDEX, vector_field
from memory_pipeline.stores.memory_store import open_store
from memory_pipeline.stores.reflect_store import read_reflections
from memory_pipeline.stores.summary_store import read_summaries
from testkit.ingest_helpers import MEMORY_ASSETS, reset_days, run_metadata

DAY = "2024-05-14"
SAID = (
    "[User sent a photo] Always use pnpm, never npm. We go with Vitest over Jest because Jest broke on our ESM "
    "imports. Please acknowledge both in one sentence."
)


def _session(
    path: Path,
    session_id: str,
    project: str,
    said: str = SAID,
    reply: str = "Noted: pnpm, and Vitest.",
    hour: int = 9,
    commands: tuple[tuple[str, str, bool], ...] = (),
) -> None:
    """A pi session of one turn: the person's message, the assistant's `commands` (command, output, failed), each
    a bash call and its result, then its reply."""
    stamp = f"{DAY}T{hour:02d}:00:0"
    entries = [
        {"type": "session", "version": 3, "id": session_id, "timestamp": f"{stamp}0.000Z", "cwd": project},
        {"type": "message", "id": "u1", "parentId": None, "timestamp": f"{stamp}1.000Z",
         "message": {"role": "user", "content": [{"type": "text", "text": said}], "timestamp": 1}},
    ]  # fmt: skip
    parent = "u1"
    for n, (command, output, failed) in enumerate(commands):
        call, result = f"c{n}", f"r{n}"
        entries += [
            {"type": "message", "id": call, "parentId": parent, "timestamp": f"{stamp}1.{n + 1:03d}Z",
             "message": {"role": "assistant", "content": [{"type": "toolCall", "id": f"t{n}", "name": "bash",
                                                           "arguments": {"command": command}}],
                         "stopReason": "toolUse", "timestamp": 1}},
            {"type": "message", "id": result, "parentId": call, "timestamp": f"{stamp}1.{n + 1:03d}Z",
             "message": {"role": "toolResult", "toolCallId": f"t{n}", "toolName": "bash",
                         "content": [{"type": "text", "text": output}], "isError": failed, "timestamp": 1}},
        ]  # fmt: skip
        parent = result
    entries.append(
        {"type": "message", "id": "a1", "parentId": parent, "timestamp": f"{stamp}2.000Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": reply}],
                     "stopReason": "stop", "timestamp": 2}},
    )  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(e) for e in entries) + "\n")


def _run_day(settings: Settings) -> dict[str, bool]:
    """The day's memory assets through the real servers; the run must succeed; its checks, by name."""
    result = materialize(
        MEMORY_ASSETS, resources=build_resources(settings), partition_key=DAY, instance=instance_with_days([DAY])
    )
    _, checks, _ = run_metadata(result)
    assert result.success
    return checks


def test_a_rule_and_a_decision_become_two_memories_found_by_a_natural_question_and_promoted_whole(
    local_runtime: Settings, tmp_path: Path
) -> None:
    reset_days(local_runtime, [DAY])
    project = f"/work/knowledge-{uuid.uuid4().hex[:6]}"
    session_id = f"knowledge-{uuid.uuid4().hex[:6]}"
    _session(tmp_path / "sessions" / "a.jsonl", session_id, project)
    settings = isolated_settings(local_runtime, tmp_path, sessions_dir=tmp_path / "sessions")
    checks = _run_day(settings)
    assert all(checks.values()), checks

    with make_client(settings) as client:
        stored = [d for d in read_summaries(client, [DAY]) if d.session_id == session_id]
    by_kind = {d.kind: d for d in stored}
    # Two pieces of knowledge, two memories; the request to acknowledge is none; the photo marker in neither.
    assert {"rule", "decision"} <= set(by_kind), [(d.kind, d.summary) for d in stored]
    rule, decision = by_kind["rule"], by_kind["decision"]
    assert "pnpm" in rule.summary and "npm" in rule.summary and "vitest" not in rule.summary.lower()
    assert "Vitest" in decision.summary and "Jest" in decision.summary
    for doc in stored:
        assert "acknowledge" not in doc.summary.lower() and "[User sent" not in doc.summary
        assert not doc.summary.lower().startswith(("the user said", '"'))
        assert doc.evidence and doc.evidence.lower() in SAID.lower() or doc.evidence_role != "user"
    assert rule.priority == "high" and "package-manager" in rule.tags

    # A natural question that names the category, not the tool, finds the rule first.
    with open_search(settings) as search:
        rows = search.index("which package manager do we use?", k=5, filters=Filters(project=project))
        assert rows and rows[0].id == rule.doc_id, [(r.kind, r.summary) for r in rows]
        assert rows[0].knowledge == "rule" and rows[0].strong
        # A judgement question is also searched among what the person said that lasts: the turn that said it
        # (tagged a disclosure) and the rule and the decision drawn from it; the rule answers first.
        [vector] = search.embedder.embed(["Should I add the map library with npm?"], purpose="query")
        lasting = [*Filters(project=project).clauses(), LASTING]
        field = vector_field(len(vector))
        knn = {"field": field, "query_vector": vector, "k": 10, "num_candidates": 50, "filter": lasting}
        with make_client(settings) as client:
            hits = client.search(index=[SUMMARY_INDEX, OBSERVATION_INDEX], knn=knn, size=10)["hits"]["hits"]
        assert {rule.doc_id, decision.doc_id, observation_id(session_id, rule.turn_id)} <= {h["_id"] for h in hits}
        judged = search.index("Should I add the map library with npm?", k=5, filters=Filters(project=project))
        assert judged and judged[0].id == rule.doc_id, [(r.kind, r.summary) for r in judged]

    # Reflected, proposed, promoted by a person: the rule is whole in MEMORY.md and in the next briefing.
    run = materialize(
        [reflect.reflections, reflect.review_proposals],
        resources=build_resources(settings),
        instance=instance_with_days([DAY]),
        partition_key=DAY,
        run_config={"ops": {"reflections": {"config": {"as_of": DAY}}}},
    )
    assert run.success
    folder = project_dir(settings.memory_workspace, project)
    review = (folder / "REVIEW.md").read_text()
    [proposal] = [p for p in parse_review(review) if "pnpm" in p.text]
    assert proposal.section == "Hard rules" and rule.summary.rstrip(".") in proposal.text
    (folder / "REVIEW.md").write_text(review.replace(f"- [ ] {proposal.id} ", f"- [x] {proposal.id} "))
    apply_review(folder, project, DAY)
    memory_md = (folder / "MEMORY.md").read_text()
    assert rule.summary in memory_md and "…" not in memory_md
    with open_search(settings) as search:
        briefing = build_briefing(search, "set up the tests", 800, project, workspace=settings.memory_workspace)
    assert rule.summary in briefing.markdown and proposal.id in briefing.ids


def test_a_forget_and_an_edit_hold_through_a_model_change_and_the_day_is_done_in_one_run(
    local_runtime: Settings, tmp_path: Path
) -> None:
    from memory_pipeline.curation.actions import edit, forget

    reset_days(local_runtime, [DAY])
    project = f"/work/decided-{uuid.uuid4().hex[:6]}"
    session_id = f"decided-{uuid.uuid4().hex[:6]}"
    _session(tmp_path / "sessions" / "a.jsonl", session_id, project)
    settings = isolated_settings(local_runtime, tmp_path, sessions_dir=tmp_path / "sessions")

    assert all(_run_day(settings).values())
    with make_client(settings) as client:
        by_kind = {d.kind: d for d in read_summaries(client, [DAY]) if d.session_id == session_id}
    assert {"rule", "decision"} <= set(by_kind)
    edited_text = "Run the tests with Bun's runner in every package."  # words the turn cannot back
    with open_search(settings) as search, open_store(settings) as store:
        forget(search, store, settings.memory_workspace, by_kind["rule"].doc_id)
        edit(search, store, settings.memory_workspace, by_kind["decision"].doc_id, text=edited_text)

    # Another model (the id is part of every turn's record): every turn is read again, and the person's choices
    # hold; the grounding check does not judge their edit, so the day is done after this one run.
    other = isolated_settings(local_runtime, tmp_path, sessions_dir=tmp_path / "sessions", llama_model="another-model")
    checks = _run_day(other)
    assert all(checks.values()), checks
    with make_client(settings) as client:
        stored = [d for d in read_summaries(client, [DAY]) if d.session_id == session_id]
    assert {d.model for d in stored} == {"another-model"}
    assert not [d for d in stored if "pnpm" in d.summary.lower() and "never" in d.summary.lower()]
    assert [d.summary for d in stored if d.summary == edited_text] == [edited_text]
    trail = (settings.memory_workspace / "corrections.jsonl").read_text()
    assert "pnpm" not in trail and edited_text in trail


def test_the_same_rule_said_in_two_sessions_is_one_memory_with_both_evidences(
    local_runtime: Settings, tmp_path: Path
) -> None:
    reset_days(local_runtime, [DAY])
    project = f"/work/restated-{uuid.uuid4().hex[:6]}"
    first, second = (f"restated-{uuid.uuid4().hex[:6]}" for _ in range(2))
    sessions = tmp_path / "sessions"
    _session(sessions / "a.jsonl", first, project, "Always use pnpm in this repo, never npm.", "Noted: pnpm.")
    again = "You ran npm install again. Use pnpm in this repo, never npm!"
    _session(sessions / "b.jsonl", second, project, again, "Sorry, pnpm it is.", hour=15)
    settings = isolated_settings(local_runtime, tmp_path, sessions_dir=sessions)
    assert all(_run_day(settings).values())

    with make_client(settings) as client:
        rules = [d for d in read_summaries(client, [DAY]) if d.project == project and "pnpm" in d.summary.lower()]
    assert {d.session_id for d in rules} == {first, second}, [(d.session_id, d.kind, d.summary) for d in rules]
    with open_search(settings) as search:
        # Every surface's search (the CLI, the API, MCP, the browser) reads the two as one row said in two sessions.
        found = search.find("which package manager do we use?", k=10, filters=Filters(project=project))
        rows = [r for r in found if r.kind == "summary" and "pnpm" in r.summary.lower()]
        assert len(rows) == 1 and rows[0].said_in == 2, [(r.id, r.summary, r.said_in) for r in rows]
        assert set(rows[0].restatements) | {rows[0].id} == {d.doc_id for d in rules}
        # The detail layer lists the other session with its own evidence, in the person's words.
        [record] = search.detail([rules[0].doc_id])
        assert record.said_in == 2
        [other] = record.said_again
        assert other.session_id != rules[0].session_id and other.evidence
        assert other.evidence.lower() in f"{again} Always use pnpm in this repo, never npm.".lower()


CAUSE_SAID = "Why do the tests fail with `database is locked` when I run them with -n 4?"
# The commands that confirm the finding (`summarize.keep.confirmed`): the suite failed, the fix went in, it passed.
CAUSE_COMMANDS = (
    ("pytest -n 4", "FAILED tests/test_orders.py::test_create - sqlite3.OperationalError: database is locked", True),
    ("pytest -n 4", "48 passed in 6.2s", False),
)
CAUSE_REPLY = (
    "The root cause was that the pytest-xdist workers shared one SQLite file, so concurrent writes hit "
    "`database is locked`. I gave each worker its own database file and `pytest -n 4` now passes."
)
DECISION_SAID = (
    "SQLite keeps giving us locking pain. From now on local development uses Postgres instead of SQLite. "
    "The dev database runs in docker: `docker compose up -d db`, listening on port 55432."
)


def test_a_replacement_is_stored_the_right_way_round_and_supersedes_nothing_about_the_test_suite(
    local_runtime: Settings, tmp_path: Path
) -> None:
    """The issue's case: the decision keeps its direction (never "Postgres is no longer used"), the fact beside it
    (the command and the port) is its own memory, and reflection leaves the earlier root cause about the test
    suite's SQLite file in view."""
    reset_days(local_runtime, [DAY])
    project = f"/work/dev-db-{uuid.uuid4().hex[:6]}"
    earlier, later = (f"dev-db-{uuid.uuid4().hex[:6]}" for _ in range(2))
    sessions = tmp_path / "sessions"
    _session(sessions / "a.jsonl", earlier, project, CAUSE_SAID, CAUSE_REPLY, hour=9, commands=CAUSE_COMMANDS)
    _session(sessions / "b.jsonl", later, project, DECISION_SAID, "Done: Postgres on 55432 for local dev.", hour=15)
    settings = isolated_settings(local_runtime, tmp_path, sessions_dir=sessions)
    assert all(_run_day(settings).values())

    with make_client(settings) as client:
        stored = [d for d in read_summaries(client, [DAY]) if d.project == project]
    said = [(d.session_id, d.kind, d.summary) for d in stored]
    both = [d for d in stored if d.session_id == later and "Postgres" in d.summary and "SQLite" in d.summary]
    assert [d for d in both if d.kind == "decision"], said
    # The right way round wherever both are named: Postgres chosen, SQLite replaced.
    assert all(d.summary.index("Postgres") < d.summary.index("SQLite") for d in both), said
    assert not [d for d in stored if "no longer" in d.summary.lower() or "not used" in d.summary.lower()], said
    assert [d for d in stored if d.session_id == later and "55432" in d.summary and "docker compose" in d.summary]
    causes = [d for d in stored if d.session_id == earlier and d.kind == "gotcha"]
    assert causes and any("SQLite" in d.summary for d in causes), said

    run = materialize(
        [reflect.reflections],
        resources=build_resources(settings),
        instance=instance_with_days([DAY]),
        partition_key=DAY,
        run_config={"ops": {"reflections": {"config": {"as_of": DAY}}}},
    )
    assert run.success
    with make_client(settings) as client:
        found = read_reflections(client, {"term": {"project": project}}, 384)
    reflections = [r for r in found if set(r.source_ids) & {d.doc_id for d in causes}]
    assert reflections and all(r.superseded_by is None for r in reflections), [
        (r.summary, r.superseded_by) for r in found
    ]
