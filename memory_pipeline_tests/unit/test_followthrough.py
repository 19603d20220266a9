"""Follow-through (issue 48), pure: the decider, the records a day's turns make against the injection ledger, the
proposal for a memory people contradicted, REVIEW.md's handling of it, and the counters' words."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl

from memory_pipeline.reflect.followthrough import decide, stance
from memory_pipeline.reflect.followthrough_proposals import candidates_by_project, repeated_correction
from memory_pipeline.reflect.followthrough_records import (
    correction_records,
    delivery_records,
    follow_records,
    given,
    memory_of_line,
    turns_of,
)
from memory_pipeline.reflect.proposals import stage
from memory_pipeline.reflect.review import CONTRADICTED, apply_review, parse_review
from memory_pipeline.reflect.turn_messages import turn_of
from memory_pipeline.sessions.messages import MESSAGE_SCHEMA
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.stores.followthrough_store import Counters, FollowThrough
from memory_pipeline.stores.injections import InjectedLine, Injection, InjectionLedger

PNPM = "Use pnpm, not npm."
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def _bash(command: str) -> dict:
    return {"role": "assistant", "content": "", "tool_calls": [{"name": "bash", "arguments": {"command": command}}]}


def test_a_memory_s_stance_names_what_it_wants_and_rejects() -> None:
    assert stance(PNPM).wants == {("pnpm",)} and stance(PNPM).rejects == {("npm",)}
    moved = stance("We moved local dev from SQLite to Postgres because we need JSON columns.")
    assert ("postgres",) in moved.wants and ("sqlite",) in moved.rejects
    removed = stance("E2E tests use Playwright; Cypress was removed.")
    assert ("playwright",) in removed.wants and ("cypress",) in removed.rejects
    assert ("5173",) in stance("The dev server listens on port 5173.").wants


def test_commands_decide_followed_and_ignored_and_reading_is_not_doing() -> None:
    assert decide("rule", PNPM, turn_of([_bash("pnpm add lodash")])).outcome == "followed"
    ignored = decide(
        "rule", PNPM, turn_of([_bash("npm install lodash"), {"role": "user", "content": "I said pnpm, not npm!"}])
    )
    assert ignored.outcome == "ignored" and ignored.evidence == "npm install lodash" and ignored.restated
    # `npm` is not in `pnpm`, a read of the lockfile installs nothing, a mention in an argument runs nothing.
    assert decide("rule", PNPM, turn_of([_bash("pnpm run build")])).outcome == "followed"
    read = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"name": "read", "arguments": {"path": "package-lock.json"}}],
    }
    assert decide("rule", PNPM, turn_of([read])).outcome == "no_signal"
    assert decide("rule", PNPM, turn_of([_bash("git log --oneline -- npm-shrinkwrap.json")])).outcome == "no_signal"


def test_a_person_s_correction_contradicts_and_a_restatement_or_a_question_does_not() -> None:
    said = decide("rule", PNPM, turn_of([{"role": "user", "content": "No, we switched back to npm, pnpm is gone."}]))
    assert said.outcome == "contradicted" and said.evidence_index == 0 and said.decided_by == "rule"
    port = "The dev server listens on port 5173."
    assert (
        decide("fact", port, turn_of([{"role": "user", "content": "no, the dev server port is 8080 now"}])).outcome
        == "contradicted"
    )
    assert (
        decide("rule", PNPM, turn_of([{"role": "user", "content": "Keep using pnpm instead of npm."}])).outcome
        == "no_signal"
    )
    assert (
        decide("rule", PNPM, turn_of([{"role": "user", "content": "Why did we drop npm again?"}])).outcome
        == "no_signal"
    )
    # Letting a rule go once neither changes nor breaks it; tool output is nobody's word.
    once = {"role": "user", "content": "Skip pnpm this time, it is no longer needed for this one-off script."}
    assert decide("rule", PNPM, turn_of([once])).outcome == "no_signal"
    output = {"role": "toolResult", "tool_name": "bash", "content": "npm is no longer supported here"}
    assert decide("rule", PNPM, turn_of([output])).outcome == "no_signal"


def test_a_turn_in_another_language_that_drops_the_memory_s_subject_contradicts() -> None:
    memory = "Use date-fns for date handling, not moment."
    assert (
        decide("rule", memory, turn_of([{"role": "user", "content": "Мы отказались от date-fns."}])).outcome
        == "contradicted"
    )
    assert (
        decide("rule", memory, turn_of([{"role": "user", "content": "Bitte nutze date-fns."}])).outcome == "no_signal"
    )


def test_a_subject_written_against_cjk_text_is_still_named() -> None:
    # Japanese and Chinese do not separate words by spaces: "Quillaは" names Quilla (the one tokenizer's words).
    memory = "State lives in Quilla stores under src/store/."
    dropped = {"role": "user", "content": "Quillaはもう使わないことにしました。"}
    assert decide("decision", memory, turn_of([dropped])).outcome == "contradicted"
    assert decide("decision", memory, turn_of([{"role": "user", "content": "Quillaで書いてください。"}])).outcome == (
        "no_signal"
    )


def test_a_version_is_a_name_and_over_after_a_pronoun_chooses_nothing() -> None:
    versions = "Call the billing API v3 endpoints; v2 is deprecated."
    assert ("v3",) in stance(versions).wants and ("v2",) in stance(versions).rejects
    assert decide("rule", versions, turn_of([_bash("curl -s https://billing.example.com/v3/invoices")])).outcome == (
        "followed"
    )
    assert decide("rule", versions, turn_of([_bash("curl -s https://billing.example.com/v2/invoices")])).outcome == (
        "ignored"
    )
    # "over" as a preposition: the workers talk over gRPC, nothing is chosen over it.
    bus = stance("The workers report to each other over gRPC.")
    assert ("grpc",) in bus.wants and not bus.rejects


def test_a_service_is_named_by_the_scheme_of_the_url_a_command_connects_to() -> None:
    moved = "We moved local dev from SQLite to Postgres."
    assert decide(
        "decision", moved, turn_of([_bash("DATABASE_URL=postgresql://dev@localhost/app pytest")])
    ).outcome == ("followed")
    assert decide("decision", moved, turn_of([_bash("DATABASE_URL=sqlite:///dev.db pytest -x")])).outcome == "ignored"
    # A word before "://" that only ends in the name is another scheme.
    assert decide("decision", moved, turn_of([_bash("curl mypostgres://x")])).outcome == "no_signal"


def test_a_tool_is_found_behind_a_shell_a_package_manager_s_run_and_its_other_names() -> None:
    ruff = "Format Python with `ruff format`, not black."
    assert decide("rule", ruff, turn_of([_bash("poetry run black src/")])).outcome == "ignored"
    codex = {"role": "assistant", "content": "", "tool_calls": [
        {"name": "shell", "arguments": {"command": ["bash", "-lc", "uv run black --check ."]}}]}  # fmt: skip
    assert decide("rule", ruff, turn_of([codex])).outcome == "ignored"
    gradle = "Build with the Gradle wrapper (`./gradlew`), not Maven."
    assert decide("rule", gradle, turn_of([_bash("mvn -q package")])).outcome == "ignored"
    assert decide("rule", gradle, turn_of([_bash("./gradlew build -x test")])).outcome == "followed"
    # A code span is one name on either side of "instead of": `cargo test` is rejected, not cargo.
    nextest = "Run the tests with `cargo nextest run` instead of `cargo test`."
    assert decide("rule", nextest, turn_of([_bash("cargo nextest run -p core")])).outcome == "followed"
    assert decide("rule", nextest, turn_of([_bash("cargo test -p core")])).outcome == "ignored"
    # "X is no longer run" rejects X (the negation read whole, not as "no").
    assert ("mypy",) in stance("Type-check with pyright; mypy is no longer run.").rejects


def test_a_one_off_exemption_by_the_person_is_no_signal_whatever_the_agent_then_does() -> None:
    rule = "Never skip the hooks with `git commit --no-verify`."
    once = {"role": "user", "content": "The hook is broken, just this once commit with --no-verify."}
    assert decide("rule", rule, turn_of([once, _bash("git commit --no-verify -m fix")])).outcome == "no_signal"
    assert decide("rule", rule, turn_of([_bash("git commit --no-verify -m fix")])).outcome == "ignored"


def test_the_agent_s_word_contradicts_a_fact_only_when_it_gives_a_value() -> None:
    fact = "The nightly export runs at 02:30 UTC."
    checked = {"role": "assistant", "content": "The schedule is actually 04:15 UTC, not 02:30."}
    assert decide("fact", fact, turn_of([checked])).outcome == "contradicted"
    context = "The staging context is `stg-west4`; always pass it to kubectl with --context."
    lost = {"role": "assistant", "content": "kubectl says that context doesn't exist."}
    assert decide("fact", context, turn_of([lost])).outcome == "no_signal"


def test_another_version_of_the_subject_contradicts_and_a_version_may_go_on_with_a_dash() -> None:
    pinned = "The Rust toolchain is pinned to 1.82.0 (rust-toolchain.toml)."
    bumped = {"role": "user", "content": "We bumped the toolchain to 1.85, rust-toolchain.toml says so."}
    assert decide("fact", pinned, turn_of([bumped])).outcome == "contradicted"
    edit = {"role": "assistant", "content": "", "tool_calls": [{"name": "edit", "arguments": {
        "path": "Dockerfile", "oldText": "FROM rust:1.79-slim", "newText": "FROM rust:1.82.0-slim"}}]}  # fmt: skip
    assert decide("fact", pinned, turn_of([edit])).outcome == "followed"


def test_a_person_s_words_in_more_languages_drop_a_memory() -> None:
    memory = "Release branches are cut as `release/YYYY.MM`."
    for said in ("Non usiamo più i branch release/, adesso usiamo i tag.", "We gebruiken geen release/ branches meer.",
                 "Nie używamy już gałęzi release/."):  # fmt: skip
        assert decide("decision", memory, turn_of([{"role": "user", "content": said}])).outcome == "contradicted"


def test_a_value_given_in_another_form_is_ignored() -> None:
    log = "The ledger writes its logs to /var/log/ledger/app.log."
    assert decide("fact", log, turn_of([_bash("tail -n 50 /opt/ledger/logs/app.log")])).outcome == "ignored"
    assert decide("fact", log, turn_of([_bash("tail -n 50 /var/log/ledger/app.log")])).outcome == "followed"
    assert decide("fact", log, turn_of([_bash("tail -n 50 /var/log/nginx/access.log")])).outcome == "no_signal"
    flag = "The redesign is behind `FF_NEW_CHECKOUT`."
    assert decide("fact", flag, turn_of([_bash("NEW_CHECKOUT_ENABLED=1 pnpm dev")])).outcome == "ignored"


def test_a_flag_a_rule_always_runs_a_tool_with_is_checked_on_the_command_it_belongs_to() -> None:
    rule = "Always run pytest with -p no:cacheprovider in this repo."
    assert decide("rule", rule, turn_of([_bash("uv run pytest -q tests/unit")])).outcome == "ignored"
    assert decide("rule", rule, turn_of([_bash("pytest -p no:cacheprovider -q")])).outcome == "followed"
    signed = "Every commit needs a DCO sign-off (git commit -s)."
    assert decide("rule", signed, turn_of([_bash("git add -A && git commit -s -m fix")])).outcome == "followed"
    assert decide("rule", signed, turn_of([_bash("git add -A && git commit -m fix")])).outcome == "ignored"
    # Not a lasting rule: the flag is for one step, not every run.
    once = "Run kubectl apply with --dry-run=server before applying a change to prod."
    assert decide("rule", once, turn_of([_bash("kubectl apply -f app.yaml")])).outcome != "ignored"


def test_what_was_shut_down_or_renamed_is_rejected_and_a_look_at_it_breaks_nothing() -> None:
    shut = "The partner API v1 (/v1/orders) was shut down; /v2/orders replaces it."
    assert decide("fact", shut, turn_of([_bash("curl -s https://p.example.com/v1/orders")])).outcome == "ignored"
    renamed = "The integration branch was renamed from develop to next."
    assert decide("fact", renamed, turn_of([_bash("gh pr create --base next --fill")])).outcome == "followed"
    generated = "Never edit files under gen/ by hand; run `buf generate`."
    assert decide("rule", generated, turn_of([_bash("buf generate && git status --short gen/")])).outcome == (
        "followed"
    )
    assert decide("rule", generated, turn_of([_bash("sed -i s/a/b/ gen/go/user.pb.go")])).outcome == "ignored"


def test_a_file_uses_a_command_when_a_line_of_it_runs_it_not_when_it_holds_the_word() -> None:
    ruff = "Format Python with `ruff format`; we removed black from the toolchain."
    css = {"role": "assistant", "content": "", "tool_calls": [{"name": "write", "arguments": {
        "path": "web/dark.css", "content": ":root {\n  --dashboard-bg: black;\n}\n"}}]}  # fmt: skip
    assert decide("rule", ruff, turn_of([css])).outcome == "no_signal"
    ci = {"role": "assistant", "content": "", "tool_calls": [{"name": "write", "arguments": {
        "path": ".github/workflows/ci.yml", "content": "steps:\n  - run: black --check .\n"}}]}  # fmt: skip
    assert decide("rule", ruff, turn_of([ci])).outcome == "ignored"
    # "pure black instead of #111" puts nothing the memory speaks of in another's place.
    colour = {"role": "user", "content": "the background should be pure black instead of #111"}
    assert decide("rule", ruff, turn_of([colour])).outcome == "no_signal"


def test_a_person_naming_both_sides_of_the_move_after_the_agent_used_the_old_one_corrects_it() -> None:
    moved = "Shared types moved from packages/common to packages/contracts; packages/common was deleted."
    wrote = {"role": "assistant", "content": "", "tool_calls": [{"name": "write", "arguments": {
        "path": "packages/common/src/refund.ts", "content": "export interface Refund {}"}}]}  # fmt: skip
    fixed = {"role": "user", "content": "packages/common ya no existe, ahora es packages/contracts."}
    said = decide("decision", moved, turn_of([wrote, fixed]))
    assert said.outcome == "ignored" and said.restated
    # The same words before the agent did anything say nothing was ignored; they are no correction of it.
    assert decide("decision", moved, turn_of([fixed])).outcome != "ignored"


def test_the_agent_ending_its_report_with_now_contradicts_nothing() -> None:
    rule = "Never commit directly to release/2.x; make the fix on a fix/ branch."
    report = {"role": "assistant", "content": "The null check is on release/2.x now."}
    assert decide("rule", rule, turn_of([report])).outcome == "no_signal"


def test_a_person_saying_the_memory_again_after_the_agent_acted_without_it_is_ignored() -> None:
    memory = "The design tokens are in styles/tokens.css."
    wrote = {
        "role": "assistant",
        "content": "I'll add a tokens file.",
        "tool_calls": [{"name": "write", "arguments": {"path": "src/theme/colors.css", "content": ":root {}"}}],
    }
    again = {"role": "user", "content": "we keep them in styles/tokens.css, why a new file?"}
    said = decide("fact", memory, turn_of([wrote, again]))
    assert said.outcome == "ignored" and said.evidence_index == 0 and said.restated
    # Said again before the agent did anything, it is the person's request, not a sign of anything ignored.
    assert decide("fact", memory, turn_of([again, wrote])).outcome == "no_signal"


def test_briefing_lines_give_the_memory_s_kind_and_words() -> None:
    line = "- **high** Use pnpm, not npm. _(2026-11-30, rule, said in 2 sessions, id `abc`)_\n"
    assert memory_of_line("abc", line) == ("rule", "Use pnpm, not npm.")
    assert memory_of_line("MEMORY.md#1f", "- Store timestamps in UTC _(MEMORY.md)_\n") == (
        "rule",
        "Store timestamps in UTC",
    )


def _injection(session: str, at: datetime, key: str = "m1", text: str = PNPM) -> Injection:
    line = f"- **high** {text} _(2026-11-30, rule, id `{key}`)_\n"
    return Injection(session_id=session, agent="pi", event="start", project="/w/shop", ids=[key],
                     lines=[InjectedLine(key=key, text=line)], at=at)  # fmt: skip


def _messages(rows: list[tuple[str, str, int, str, str, datetime]]) -> pl.DataFrame:
    frame = [
        {"session_id": s, "turn_id": t, "message_index": i, "role": role, "content": content,
         "message_timestamp": at, "project": "/w/shop", "agent": "pi", "partition": at.date().isoformat(),
         "on_active_path": True, "is_metadata": False, "tool_calls": []}
        for s, t, i, role, content, at in rows
    ]  # fmt: skip
    return pl.DataFrame(frame, schema={k: v for k, v in MESSAGE_SCHEMA.items()}, strict=False)


def test_records_judge_each_turn_after_a_delivery_in_its_session_or_a_later_one_of_its_project() -> None:
    injections = [_injection("s1", T0)]
    no = "No, we use npm now; pnpm is gone."
    messages = _messages([
        ("s0", "t0", 0, "user", no, T0 - timedelta(hours=1)),  # before the delivery: not judged
        ("s2", "t1", 0, "user", no, T0 + timedelta(hours=1)),
        ("s3", "t2", 0, "user", "Add a README section.", T0 + timedelta(hours=2)),  # no signal: no record
    ])  # fmt: skip
    records = follow_records(turns_of(messages), given(injections), Redactor())
    assert [(r.memory_id, r.session_id, r.turn_id, r.signal) for r in records] == [("m1", "s2", "t1", "contradicted")]
    assert records[0].memory_text == PNPM and records[0].evidence.startswith("No, we use npm")
    deliveries = delivery_records(injections, ["2026-12-01"])
    assert [(d.memory_id, d.signal, d.partition) for d in deliveries] == [("m1", "injected", "2026-12-01")]
    assert delivery_records(injections, ["2026-12-02"]) == []
    again = follow_records(turns_of(messages), given(injections), Redactor())
    assert [r.doc_id for r in again] == [r.doc_id for r in records]  # ids from what they are about: re-runs match


def test_a_rule_ignored_then_said_again_in_the_next_turn_is_marked_restated() -> None:
    injections = [_injection("s1", T0)]
    rows = _messages([
        ("s1", "t1", 0, "user", "Add lodash.", T0 + timedelta(minutes=1)),
        ("s1", "t1", 1, "assistant", "Installing.", T0 + timedelta(minutes=2)),
        ("s1", "t2", 0, "user", "I said pnpm, not npm!", T0 + timedelta(minutes=3)),  # a new turn: the person's
        ("s2", "t3", 0, "user", "Add zod.", T0 + timedelta(minutes=4)),
        ("s2", "t3", 1, "assistant", "Installing.", T0 + timedelta(minutes=5)),
        ("s2", "t4", 0, "user", "Now add a test.", T0 + timedelta(minutes=6)),  # goes on: not said again
    ])  # fmt: skip

    def npm(package: str) -> list[dict]:
        return [{"id": "c", "name": "bash", "arguments": json.dumps({"command": f"npm install {package}"})}]

    calls = [[], npm("lodash"), [], [], npm("zod"), []]
    rows = rows.with_columns(pl.Series("tool_calls", calls, dtype=MESSAGE_SCHEMA["tool_calls"]))
    records = follow_records(turns_of(rows), given(injections), Redactor())
    ignored = [(r.turn_id, r.restated) for r in records if r.signal == "ignored"]
    assert sorted(ignored) == [("t1", True), ("t3", False)]


def _contradicted(session: str, turn: str, hours: int) -> FollowThrough:
    return FollowThrough(memory_id="m1", signal="contradicted", project="/w/shop", partition="2026-12-01",
                         session_id=session, turn_id=turn, at=T0 + timedelta(hours=hours), memory_kind="rule",
                         memory_text=PNPM, evidence=f"No, npm now ({session}).")  # fmt: skip


def test_a_memory_contradicted_in_two_sessions_is_one_proposal_first_in_review_md(tmp_path: Path) -> None:
    turns = [_contradicted("s2", "t1", 1), _contradicted("s3", "t2", 2)]
    [candidate] = candidates_by_project({"m1": turns})["/w/shop"]
    assert candidate.section == CONTRADICTED and candidate.evidence_ids == ["m1"] and candidate.sessions == ["s2", "s3"]
    assert all(x in candidate.rule for x in ("`m1`", "s2", "t1", "s3", "t2", PNPM))
    first = stage(tmp_path, "/w/shop", [candidate], "2026-12-01")
    # A third session adds evidence to the same proposal: its words stay, its sessions grow.
    [grown] = candidates_by_project({"m1": [*turns, _contradicted("s4", "t3", 3)]})["/w/shop"]
    second = stage(tmp_path, "/w/shop", [grown], "2026-12-02")
    assert len(first.new) == 1 and second.new == [] and second.updated == first.new
    review = (tmp_path / "REVIEW.md").read_text()
    assert review.index(f"## {CONTRADICTED}") < review.index("`m1`") and "3 sessions" in review
    # Ticked, it leaves REVIEW.md and never becomes a line of MEMORY.md.
    [proposal] = parse_review(review)
    (tmp_path / "REVIEW.md").write_text(review.replace(f"[ ] {proposal.id}", f"[x] {proposal.id}"))
    report = apply_review(tmp_path, "/w/shop", "2026-12-03")
    assert report.promoted == [] and report.rejected == [proposal.id] and not (tmp_path / "MEMORY.md").exists()


def test_counters_say_what_happened_and_when_a_memory_is_demoted() -> None:
    assert Counters.of({"injected": 12, "followed": 9, "contradicted": 1}, 1).text == (
        "injected 12×, followed 9×, contradicted 1×"
    )
    assert not Counters.of({"contradicted": 1}, 1).demoted and Counters.of({"contradicted": 3}, 2).demoted
    assert Counters().text == "never injected"


def test_a_correction_with_no_memory_behind_it_repeated_in_two_sessions_is_one_proposal(tmp_path: Path) -> None:
    said = "No, run the tests with vitest, not jest!"
    messages = _messages([
        ("s2", "t1", 0, "user", said, T0 + timedelta(hours=1)),
        ("s3", "t2", 0, "user", "I told you: vitest, never jest.", T0 + timedelta(hours=2)),
        ("s4", "t3", 0, "user", "No, use pnpm, not npm!", T0 + timedelta(hours=3)),  # the injected memory says it
        ("s5", "t4", 0, "user", "Why not jest?", T0 + timedelta(hours=4)),  # a question corrects nothing
    ])  # fmt: skip
    records = correction_records(turns_of(messages), given([_injection("s1", T0)]), Redactor())
    assert [(r.session_id, r.signal) for r in records] == [("s2", "corrected"), ("s3", "corrected")]
    assert records[0].memory_id == records[1].memory_id  # the same correction, in other words
    candidate = repeated_correction(records)
    assert (
        candidate.rule == said and candidate.sessions == ["s2", "s3"] and candidate.evidence_ids == ["s2/t1", "s3/t2"]
    )
    report = stage(tmp_path, "/w/shop", [candidate], "2026-12-01")
    assert len(report.new) == 1 and said in (tmp_path / "REVIEW.md").read_text()


def test_a_run_reads_only_the_ledger_files_its_turns_need(tmp_path: Path) -> None:
    ledger = InjectionLedger(tmp_path / "injected", Redactor.with_patterns([]))
    for session, project in [("mine", "/p/a"), ("same-project", "/p/a"), ("other", "/p/b"), ("recent", "/p/c")]:
        ledger.record(Injection(session_id=session, agent="pi", event="start", project=project, ids=["m"],
                                lines=[InjectedLine(key="m", text=PNPM)], at=T0))  # fmt: skip
    with (tmp_path / "injected" / "other.jsonl").open("a") as handle:
        handle.write("{torn\n")
    old = (T0 - timedelta(days=3)).timestamp()
    for session in ("mine", "same-project", "other"):  # written before the run's days; "recent" during them
        os.utime(tmp_path / "injected" / f"{session}.jsonl", (old, old))
    since = datetime.fromtimestamp(old, UTC) + timedelta(days=1)
    picked, problems = ledger.every(sessions={"mine"}, projects={"/p/a"}, since=since)
    assert sorted(i.session_id for i in picked) == ["mine", "recent", "same-project"] and problems == []
    everything, problems = ledger.every()
    assert len(everything) == 4 and len(problems) == 1  # unfiltered: every file, the torn line named
