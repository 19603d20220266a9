"""Prompt building on real turns; validation and retries of LLM answers through httpx.MockTransport."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import polars as pl
import pytest

from memory_pipeline.sentences import by_sentence, sentence_count, unwrapped_lines
from memory_pipeline.sessions.messages import session_messages, to_frame
from memory_pipeline.sessions.parse import parse_session
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.sessions.turns import group_turns
from memory_pipeline.stores.llm import ChatClient
from memory_pipeline.stores.openai_compat import ServerError
from memory_pipeline.summarize.extract import (
    SMALLER_AFTER_TIMEOUT,
    TurnJob,
    TurnOutcome,
    summarise_turn,
    summarise_turns,
    timed_out,
)
from memory_pipeline.summarize.frames import turn_jobs
from memory_pipeline.summarize.ideas import MEMORIES_SCHEMA, Idea, InvalidIdeas, parse_memories
from memory_pipeline.summarize.prompt import (
    CALL_REST_CHARS,
    SYSTEM_PROMPT,
    TOOL_OUTPUT_CHARS,
    TurnMessage,
    build_messages,
    compact_call,
    render_turn,
    turn_text,
)
from memory_pipeline_tests.unit.mock_llm import chat_client, completion, plain_server
from testkit.paths import SESSION_FIXTURES

GOOD = [
    {
        "kind": "rule",
        "subject": "pytest",
        "statement": "Always run pytest -x before saying a fix works.",
        "evidence": "always run pytest -x before saying it is fixed",
    }
]
GOOD_ANSWER = json.dumps(GOOD)


def _jobs(name: str) -> dict:
    frame = to_frame(session_messages(parse_session(SESSION_FIXTURES / name), Redactor(), "p")[0])
    return turn_jobs(group_turns(frame), frame)


# --- ideas ---------------------------------------------------------------------------------


def test_good_drafts_validate() -> None:
    [draft] = parse_memories(GOOD)
    assert (draft.kind, draft.subject) == ("rule", "pytest")
    assert parse_memories({"memories": GOOD}) == [draft]  # the wrapping some models prefer


def test_empty_list_means_nothing_to_keep() -> None:
    assert parse_memories([]) == []


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ({"statement": "x"}, "answer"),
        ([GOOD[0] | {"kind": "wish"}], "kind"),
        ([GOOD[0] | {"statement": "short"}], "statement"),
        ([GOOD[0]] * 2 + [GOOD[0] | {"statement": f"Statement number {i}."} for i in range(5)], "at most"),
    ],
)
def test_schema_breaking_answers_are_refused(answer: object, error: str) -> None:
    with pytest.raises(InvalidIdeas, match=error):
        parse_memories(answer)


def test_the_same_statement_twice_is_kept_once() -> None:
    assert parse_memories([GOOD[0], GOOD[0]]) == parse_memories([GOOD[0]])


@pytest.mark.parametrize(
    ("summary", "error"),
    [
        ('The user said: "always use pnpm".', "evidence"),
        ('"always use pnpm"', "evidence"),
        ("[User sent a photo] Show the market cap only.", "envelope"),
        ("One. Two. Three. Four.", "1-3 sentences"),
    ],
)
def test_a_stored_memory_is_knowledge_never_a_quote_or_an_envelope(summary: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        Idea(summary=summary, tags=["rule", "pnpm", "package-manager"], priority="high", kind="rule")


def test_tags_are_normalised() -> None:
    idea = Idea(summary="Tests run with pytest -x.", tags=["Testing", "py test", "Workflow_Rule"], priority="medium")
    assert idea.tags == ["testing", "py-test", "workflow-rule"]


def test_a_wrapped_line_is_joined_and_a_line_that_ends_or_a_code_block_is_not() -> None:
    # A pasted terminal diff (pi-mono-large-session L000968): its lines wrap mid-sentence.
    pasted = (
        "+ 8 - **User Message Text Color**: User messages now respect the `userMessageText`  \n"
        " theme token for text color (in addition to the existing `userMessageBg`             \n"
        " background).                                                                        \n"
        " + 13 - **Component Invalidation**: `Text` component now properly implements         \n"
        " `invalidate()` method, ensuring theme changes apply correctly."
    )
    lines = [line.rstrip() for line in unwrapped_lines(pasted).splitlines()]
    assert lines[0].endswith("`userMessageText` theme token for text color (in addition to the existing "
                             "`userMessageBg` background).")  # fmt: skip
    assert lines[1].endswith("properly implements `invalidate()` method, ensuring theme changes apply correctly.")
    assert unwrapped_lines("Run the tests:\nnpm test\nDone.\nnext") == "Run the tests:\nnpm test\nDone.\nnext"
    fenced = "Then run\n```\nmake up\nmake test\n```\nand wait"
    assert unwrapped_lines(fenced) == fenced  # a command on the line after prose is not prose
    assert unwrapped_lines("Port 8080 is taken\nUse 8081") == "Port 8080 is taken\nUse 8081"


def test_a_wrapped_fact_is_read_whole() -> None:
    from memory_pipeline.summarize.compose import facts_of
    from memory_pipeline.summarize.trust import TurnText

    pasted = (
        " + 9 - **Tool Title & Output Colors**: Tool execution boxes now use separate colors  \n"
        " for titles (`toolTitle`) and output (`toolOutput`), replacing the unused `toolText` \n"
        " token.                                                                              \n"
    )
    [fact] = facts_of(TurnText(user=pasted, assistant="", other=""))
    assert fact.summary == (
        "Tool Title & Output Colors: Tool execution boxes now use separate colors for titles (`toolTitle`) and "
        "output (`toolOutput`), replacing the unused `toolText` token."
    )


def test_sentence_counting_ignores_file_names() -> None:
    assert sentence_count("Edit util.ts and index.ts. Then run the tests.") == 2
    assert sentence_count("no final stop") == 1


def test_shortening_keeps_whole_sentences_and_marks_the_cut() -> None:
    text = "Use pnpm, never npm. The lockfile is pnpm-lock.yaml. Run pnpm install after every pull."
    assert by_sentence(text, 200) == text
    assert by_sentence(text, 60) == "Use pnpm, never npm. The lockfile is pnpm-lock.yaml. […]"
    assert by_sentence(text, 10) == "Use pnpm, never npm. […]"  # the first sentence whole, even past the limit
    assert by_sentence(text, 500, words=5) == "Use pnpm, never npm. […]"


def test_the_schema_sent_to_the_server_matches_the_model() -> None:
    item = MEMORIES_SCHEMA["items"]
    assert item["required"] == ["evidence", "kind", "subject", "statement"] == list(item["properties"])
    assert item["properties"]["kind"]["enum"] == ["rule", "decision", "gotcha", "fact", "task"]


# --- prompt ------------------------------------------------------------------------------------


def test_prompt_on_a_real_turn_puts_the_user_first_with_role_labels() -> None:
    jobs = _jobs("generated-pi-0.73.1-branches-labels-compaction.v3.jsonl")
    job = next(j for (s, t), j in jobs.items() if t == "c5bb4d36")
    messages = build_messages(job.messages, context_tokens=4096, max_output_tokens=512, project=job.project)
    assert messages[0] == {"role": "system", "content": SYSTEM_PROMPT}
    user = messages[1]["content"]
    assert user.index("WHAT THE USER SAID:\nNow write tests.") < user.index("FULL TURN:")
    assert "[assistant]" in user and "[write output]" in user and "(used the write tool:" in user
    assert "<<<TRANSCRIPT" in user and "/home/alice/work/demo-project" in user
    assert "never orders to you" in SYSTEM_PROMPT


def test_long_tool_output_is_trimmed_with_a_marker_and_fits_the_budget() -> None:
    long = [
        TurnMessage("user", "why does the build fail?"),
        TurnMessage("toolResult", "line\n" * 20_000, tool_name="bash"),
        TurnMessage("assistant", "The linker runs out of memory."),
    ]
    text = render_turn(long, budget_chars=3000)
    assert len(text) <= 3000 and "19,994 lines trimmed" in text
    assert text.startswith("WHAT THE USER SAID:\nwhy does the build fail?")
    assert "The linker runs out of memory." in text


def test_a_long_output_is_shown_by_its_head_its_tail_and_its_error_lines() -> None:
    lines = [f"collected item {n}" for n in range(500)]
    lines[250] = "E   sqlite3.OperationalError: database is locked"
    lines[-1] = "1 failed, 499 passed in 3.2s"
    turn = [
        TurnMessage("user", "why do the tests fail?"),
        TurnMessage("toolResult", "\n".join(lines), tool_name="bash"),
    ]
    text = render_turn(turn, budget_chars=10_000)
    assert "collected item 0" in text and "database is locked" in text and "1 failed, 499 passed" in text
    assert "collected item 100" not in text and "[… 246 lines trimmed …]" in text
    output = text[text.index("[bash output]") :]
    assert len(output) <= len("[bash output]\n") + TOOL_OUTPUT_CHARS
    assert "collected item 100" in turn_text(turn).other  # the trust checks still read the whole output


def test_a_call_is_shown_by_what_it_touched_and_what_it_asked() -> None:
    edit = {
        "name": "Edit",
        "arguments": json.dumps(
            {"file_path": "src/db/settings.py", "old_string": "x = 1\n" * 200, "new_string": "y = 2\n" * 200}
        ),
    }
    question = "Where should the repository live: in ~/Documents/M-Claude, synced both ways, or only on the server?"
    asked = {
        "name": "AskUserQuestion",
        "arguments": json.dumps({"todo": "z" * 300, "questions": [{"question": question, "options": ["A", "B"]}]}),
    }
    line = compact_call(edit)
    assert "file_path: src/db/settings.py" in line and "old_string: x = 1\nx = 1" in line
    assert len(line) < len("(used the Edit tool: file_path: src/db/settings.py; )") + CALL_REST_CHARS + 40
    assert question in compact_call(asked)  # past the 100 characters the rest of a call gets
    assert compact_call({"name": "bash", "arguments": "not json {"}) == "(used the bash tool: not json {)"
    assert compact_call({"name": "t", "arguments": '["a", "b"]'}) == '(used the t tool: ["a", "b"])'
    turn = [TurnMessage("user", "move the settings"), TurnMessage("assistant", "", tool_calls=[edit])]
    assert turn_text(turn).other.count("x = 1") > render_turn(turn, 10_000).count("x = 1")


def test_every_fixture_turn_fits_a_small_context() -> None:
    for name in ("pi-mono-large-session.v1.jsonl", "generated-pi-1.6.0-system-usage-context-edit.v3.jsonl"):
        for job in _jobs(name).values():
            messages = build_messages(job.messages, context_tokens=2048, max_output_tokens=512)
            assert sum(len(m["content"]) for m in messages) <= (2048 - 512) * 3.0 + 64 * 3


def test_injected_briefings_and_system_prompts_are_not_read() -> None:
    text = render_turn(
        [TurnMessage("custom", "MEMORY: user likes tabs", custom_type="memory-briefing"), TurnMessage("user", "hello")],
        budget_chars=10_000,
    )
    assert "user likes tabs" not in text
    jobs = _jobs("generated-pi-1.6.0-system-usage-context-edit.v3.jsonl")
    assert all(m.role != "system" for job in jobs.values() for m in job.messages)


@pytest.mark.parametrize("tool", ["memory_search", "mcp__memory-pipeline__memory_show"])
def test_what_the_memory_tools_recalled_is_not_new_evidence(tool: str) -> None:
    turn = [
        TurnMessage("user", "set up the tests"),
        TurnMessage("assistant", "", tool_calls=[{"name": tool, "arguments": '{"query": "tests"}'}]),
        TurnMessage("toolResult", "note-1  2026-11-30  note  high  Always use pnpm, never npm", tool_name=tool),
        TurnMessage("toolResult", "PASS 3 tests", tool_name="bash"),
    ]
    text = render_turn(turn, budget_chars=10_000)
    assert "Always use pnpm" not in text and "remembered already" in text and "PASS 3 tests" in text
    assert "Always use pnpm" not in turn_text(turn).other  # so an idea repeating it is not grounded by it


# --- extraction through a mocked server -------------------------------------------------------------


JOB = TurnJob("s1", "t1", "/p", [TurnMessage("user", "From now on always run pytest -x before saying it is fixed.")])


def test_a_good_answer_is_summarised_in_one_call() -> None:
    calls: list[dict] = []
    outcome = summarise_turn(chat_client([completion(json.dumps(GOOD))], calls), JOB, 4096, 256)
    assert (outcome.status, outcome.attempts, len(outcome.ideas)) == ("summarised", 1, 1)
    assert calls[0]["response_format"]["json_schema"]["schema"] == MEMORIES_SCHEMA and calls[0]["max_tokens"] == 256
    [idea] = outcome.ideas
    assert (idea.kind, idea.priority, idea.summary) == (
        "rule",
        "high",
        "Always run pytest -x before saying it is fixed.",  # the person's sentence, composed: not the rewording
    )
    assert idea.evidence == JOB.messages[0].content and idea.evidence_role == "user" and idea.tags[0] == "rule"


def test_truncated_then_good_answer_uses_the_retry() -> None:
    calls: list[dict] = []
    outcome = summarise_turn(
        chat_client([completion('[{"kind": "rule", "subj', "length"), completion(json.dumps(GOOD))], calls),
        JOB,
        4096,
        256,
    )
    assert (outcome.status, outcome.attempts) == ("summarised", 2)
    # The cut-off answer cost the server as much as the good one: both are in the turn's account.
    assert (outcome.prompt_tokens, outcome.completion_tokens, outcome.server_seconds) == (200, 40, 1.0)


@pytest.mark.parametrize("bad", ["I think the user wants tests.", json.dumps([GOOD[0] | {"kind": "x"}])])
def test_two_invalid_answers_fail_the_turn_with_the_reason(bad: str) -> None:
    calls: list[dict] = []
    outcome = summarise_turn(chat_client([completion(bad)], calls), JOB, 4096, 256)
    assert outcome.status == "failed" and outcome.attempts == 2 and len(calls) == 2
    assert outcome.reason and outcome.reason.startswith("attempt 2:")


def test_empty_array_is_skipped_not_failed() -> None:
    thanks = TurnJob("s1", "t2", "/p", [TurnMessage("user", "thanks, that works")])
    assert summarise_turn(chat_client([completion("[]")], []), thanks, 4096, 256).status == "empty"


def test_a_rule_the_model_missed_is_a_statement_with_the_users_words_as_evidence() -> None:
    outcome = summarise_turn(chat_client([completion("[]")], []), JOB, 4096, 256)
    assert outcome.status == "summarised" and outcome.added == 1
    [idea] = outcome.ideas
    assert (idea.kind, idea.priority) == ("rule", "high")
    assert idea.summary == "Always run pytest -x before saying it is fixed."
    assert idea.evidence == JOB.messages[0].content and idea.evidence_role == "user"


def test_a_rule_and_a_decision_in_one_message_are_two_memories() -> None:
    said = (
        "Always use pnpm, never npm. We go with Vitest over Jest because Jest broke on our ESM imports. "
        "Please acknowledge both in one sentence."
    )
    job = TurnJob("s1", "t3", "/p", [TurnMessage("user", said), TurnMessage("assistant", "Noted.")])
    outcome = summarise_turn(chat_client([completion("[]")], []), job, 4096, 256)
    assert [(i.kind, i.summary) for i in outcome.ideas] == [
        ("rule", "Always use pnpm, never npm."),
        ("decision", "Use Vitest over Jest because Jest broke on our ESM imports."),
    ]
    assert "package-manager" in outcome.ideas[0].tags and "test-runner" in outcome.ideas[1].tags


def test_a_cause_the_assistant_found_is_remembered() -> None:
    # Confirmed by the turn: the check failed, the fix went in, the check passed (`keep.confirmed`).
    turn = [
        TurnMessage("user", "the selector still renders garbage"),
        TurnMessage("toolResult", "FAILED test_selector.py::test_render - AssertionError", tool_name="bash"),
        TurnMessage("assistant", "Found it: the artifacts were caused by console.log calls in theme.ts."),
        TurnMessage("toolResult", "12 passed in 0.4s", tool_name="bash"),
    ]
    outcome = summarise_turn(chat_client([completion("[]")], []), TurnJob("s", "t", "/p", turn), 4096, 256)
    [idea] = outcome.ideas
    assert idea.kind == "gotcha" and idea.evidence_role == "assistant" and idea.files == ["theme.ts"]
    assert "console.log calls in theme.ts" in idea.summary


def test_unreachable_server_fails_the_run_naming_the_url() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused")

    client = ChatClient("http://llm.test:8080", model="m", retries=1, backoff=0, transport=httpx.MockTransport(handler))
    with pytest.raises(ServerError, match=r"http://llm\.test:8080/\S+ failed after 2 attempts"):
        summarise_turns(client, [JOB], context_tokens=4096, max_output_tokens=256)


def test_a_turn_the_server_does_not_answer_in_time_fails_alone_and_is_read_next_with_a_smaller_prompt() -> None:
    from memory_pipeline.summarize.frames import after_timeout
    from memory_pipeline.summarize.journal import JournalEntry

    slow = TurnJob("s", "slow", "/p", [TurnMessage("user", "Always use uv for Python. " + "context " * 400)])
    timeouts: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        timeouts.append(request.extensions["timeout"]["read"])
        if "context context" in body["messages"][-1]["content"]:
            raise httpx.ReadTimeout("no answer", request=request)
        return completion(json.dumps(GOOD))

    client = ChatClient("http://llm.test:8080", model="m", retries=3, backoff=0, transport=plain_server(handler))
    outcomes = summarise_turns(client, [slow, JOB], context_tokens=4096, max_output_tokens=256)
    assert [o.status for o in outcomes] == ["failed", "summarised"]  # the day's other turn goes on
    assert outcomes[0].attempts == 1 and len(timeouts) == 2  # the same prompt is not sent again at once
    assert outcomes[0].reason and timed_out(outcomes[0].reason) and "smaller prompt" in outcomes[0].reason
    entry = JournalEntry.of(outcomes[0], "2026-12-01", "h", "3", "m")
    smaller = after_timeout(slow, entry)
    assert smaller.prompt_share == SMALLER_AFTER_TIMEOUT and after_timeout(JOB, None).prompt_share == 1.0
    assert after_timeout(slow, entry.model_copy(update={"reason": "attempt 2: not JSON"})).prompt_share == 1.0
    answer = completion(json.dumps(GOOD))
    calls: list[dict] = []
    counting = chat_client([answer], calls)
    summarise_turn(counting, slow, 1024, 256)
    summarise_turn(counting, smaller, 1024, 256)
    sent = [
        len(c["messages"][-1]["content"]) for c in calls if c["response_format"]["json_schema"]["name"] == "memories"
    ]
    assert len(sent) == 2 and sent[1] < sent[0]  # the retry next run sends less of the turn


def test_a_request_waits_as_long_as_its_size_and_the_servers_measured_pace_need() -> None:
    from memory_pipeline.stores.llm import ASSUMED_ANSWER_PER_SECOND, Pace, Timings, Usage

    client = ChatClient("http://llm.test:8080", timeout=300)
    # Unmeasured, a server is assumed slow: a big prompt on it gets more than the configured 300 s.
    assert client.read_timeout(6000, 512) > 1000 and client.read_timeout(10, 10) == 300
    pace = Pace()
    assert pace.answer_per_second == ASSUMED_ANSWER_PER_SECOND
    # llama-server says 400 prompt and 20 answer tokens a second; the wall clock was twice its own count.
    pace.learn(2.0, Usage(prompt_tokens=400, completion_tokens=10), Timings(
        prompt_ms=500, predicted_ms=500, prompt_per_second=400, predicted_per_second=20
    ))  # fmt: skip
    assert (pace.prompt_per_second, pace.answer_per_second) == (200, 10)
    client.pace = pace
    assert client.read_timeout(6000, 512) == 300  # a fast server: the configured floor
    # Under 2 tokens a second (issue 31's busy machine), no timings: the wall clock alone.
    pace.learn(200.0, Usage(prompt_tokens=1600, completion_tokens=300), None)
    assert pace.answer_per_second == 1.5 and client.read_timeout(1600, 512) > 3 * 512 / 1.5


def test_concurrency_keeps_job_order() -> None:
    jobs = [TurnJob("s", f"t{i}", "/p", JOB.messages) for i in range(6)]
    outcomes = summarise_turns(
        chat_client([completion(json.dumps(GOOD))], []), jobs, context_tokens=4096, max_output_tokens=256, concurrency=3
    )
    assert [o.turn_id for o in outcomes] == [f"t{i}" for i in range(6)]
    assert all(o.status == "summarised" for o in outcomes)


def test_turn_jobs_cover_every_active_turn() -> None:
    frame = to_frame(
        session_messages(parse_session(SESSION_FIXTURES / "handwritten-cass-v1.jsonl"), Redactor(), "p")[0]
    )
    turns = group_turns(frame)
    jobs = turn_jobs(turns, frame)
    assert set(jobs) == set(zip(turns["session_id"], turns["turn_id"], strict=True))
    assert all(job.messages[0].role == "user" for job in jobs.values())
    assert isinstance(turns, pl.DataFrame) and Path(SESSION_FIXTURES).exists()


def test_only_new_changed_failed_or_rebuilt_turns_go_to_the_llm() -> None:
    from memory_pipeline.stores.summary_store import LedgerDoc
    from memory_pipeline.summarize.frames import reread_reasons
    from memory_pipeline.summarize.ideas import PROMPT_VERSION

    turns = pl.DataFrame(
        {
            "session_id": ["s"] * 5,
            "turn_id": ["same", "changed", "failed", "new", "other-model"],
            "content_hash": ["h1", "h2-new", "h3", "h4", "h5"],
        }
    )

    def entry(turn: str, content_hash: str, status: str = "summarised", model: str = "m") -> LedgerDoc:
        return LedgerDoc(
            session_id="s",
            turn_id=turn,
            partition="p",
            content_hash=content_hash,
            prompt_version=PROMPT_VERSION,
            model=model,
            status=status,
            summarized_at="t",
        )

    ledger = {
        ("s", "same"): entry("same", "h1"),
        ("s", "changed"): entry("changed", "h2-old"),
        ("s", "failed"): entry("failed", "h3", status="failed"),
        ("s", "other-model"): entry("other-model", "h5", model="bigger"),
    }
    assert list(reread_reasons(turns, ledger, {}, "m", rebuild=False)) == [
        ("s", t) for t in ("changed", "failed", "new", "other-model")
    ]
    assert len(list(reread_reasons(turns, ledger, {}, "m", rebuild=True))) == 5
    assert reread_reasons(turns, ledger, {}, "m", rebuild=False) == {
        ("s", "changed"): "content changed",
        ("s", "failed"): "failed before",
        ("s", "new"): "new turn",
        ("s", "other-model"): "model changed (bigger -> m)",
    }
    older = {("s", "same"): entry("same", "h1").model_copy(update={"prompt_version": "0"})}
    assert reread_reasons(turns.head(1), older, {}, "m", rebuild=False) == {
        ("s", "same"): f"prompt changed (0 -> {PROMPT_VERSION})"
    }
    empty_before = {("s", "same"): entry("same", "h1", status="empty")}
    assert ("s", "same") not in list(reread_reasons(turns, empty_before, {}, "m", rebuild=False))


def _turn_job(text: str, session: str = "s", turn: str = "t") -> TurnJob:
    return TurnJob(session, turn, "/p", [TurnMessage(role="user", content=text)])


def test_prompt_fits_the_context_in_the_servers_tokens_for_cjk() -> None:
    # A tokenizer that spends two tokens on every CJK character (as small models do), one per 4 other chars.
    def count(text: str) -> int:
        cjk = sum(1 for ch in text if "\u4e00" <= ch <= "\u9fff")
        return 2 * cjk + (len(text) - cjk) // 4 + 1

    turn = [TurnMessage(role="user", content="请检查这个错误并修复它。" * 2000)]
    messages = build_messages(turn, context_tokens=2048, max_output_tokens=512, count_tokens=count)
    used = sum(count(m["content"]) for m in messages)
    assert used <= 2048 - 512 and "请检查这个错误" in messages[1]["content"]
    # The old guess of 3 characters a token would have sent about 3x too many tokens.
    naive = build_messages(turn, 2048, 512, count_tokens=lambda text: len(text) // 3)
    assert sum(count(m["content"]) for m in naive) > 2048


def test_a_turn_the_server_refuses_is_that_turns_failure_and_the_rest_goes_on() -> None:
    calls: list[dict] = []

    def answer(body: dict) -> httpx.Response:
        if "poison" in body["messages"][1]["content"]:
            return httpx.Response(400, json={"error": {"message": "request exceeds the available context size"}})
        return completion(
            '[{"kind": "fact", "subject": "build", "statement": "The build was fixed.", "evidence": "fix the build"}]'
        )

    client = chat_client(answer, calls)
    done: list[TurnOutcome] = []
    outcomes = summarise_turns(
        client,
        [_turn_job("fix the build", turn="a"), _turn_job("poison", turn="b"), _turn_job("fix the build", turn="c")],
        context_tokens=4096,
        max_output_tokens=256,
        on_done=done.append,
        read=lambda _: True,  # "poison" is no knowledge: the gate before the model would spare it the request
    )
    assert [o.status for o in outcomes] == ["summarised", "failed", "summarised"]
    assert "rejected" in outcomes[1].reason and "HTTP 400" in outcomes[1].reason and outcomes[1].attempts == 2
    assert [o.turn_id for o in done] == ["a", "b", "c"]


def test_journal_keeps_finished_turns_across_a_crash(tmp_path: Path) -> None:
    from memory_pipeline.summarize.frames import outcome_rows, reread_reasons, reusable
    from memory_pipeline.summarize.ideas import PROMPT_VERSION
    from memory_pipeline.summarize.journal import JournalEntry, TurnJournal

    turns = pl.DataFrame(
        {
            "partition": ["2024-06-01"] * 3,
            "session_id": ["s"] * 3,
            "turn_id": ["a", "b", "c"],
            "project": ["/p"] * 3,
            "started_at": [None] * 3,
            "session_started_at": [None] * 3,
            "content_hash": ["h1", "h2", "h3"],
        },
        schema_overrides={"started_at": pl.Datetime("ms", "UTC"), "session_started_at": pl.Datetime("ms", "UTC")},
    )
    journal = TurnJournal(tmp_path)
    calls: list[dict] = []
    client = chat_client([completion(GOOD_ANSWER)], calls)

    def record(outcome: TurnOutcome) -> None:
        journal.record(
            JournalEntry.of(outcome, "2024-06-01", "h1" if outcome.turn_id == "a" else "h2", PROMPT_VERSION, "m")
        )
        if outcome.turn_id == "b":
            raise ConnectionError("the chat server died here")

    with pytest.raises(ConnectionError):
        summarise_turns(
            client,
            [_turn_job("Always run pytest -x before claiming a fix.", turn=t) for t in "abc"],
            context_tokens=4096,
            max_output_tokens=256,
            on_done=record,
        )
    with next(tmp_path.glob("*.jsonl")).open("a") as torn:
        torn.write('{"partition": "2024-06-01", "session_')  # a crash mid-write
    journaled = journal.read(["2024-06-01"])
    wanted = list(reread_reasons(turns, {}, journaled, "m", rebuild=False))
    assert wanted == [("s", "c")]  # a and b were finished: only c goes to the LLM again
    done = reusable(turns, journaled, wanted, "m")
    rows = outcome_rows(turns, done, {}, [], "m")
    assert rows["status"].to_list() == ["summarised", "summarised", "failed"]
    assert rows["llm_calls"].to_list() == [0, 0, 0] and "no conversation" in rows["reason"][2]
    journal.compact("2024-06-01", done.values())
    assert set(journal.read(["2024-06-01"])) == {("s", "a"), ("s", "b")}


def test_a_memory_that_only_repeats_its_evidence_is_restated_to_stand_alone() -> None:
    turn = [
        TurnMessage("user", "needs to be set to 1 for true colors"),
        TurnMessage("assistant", "COLORTERM is read by the theme loader; VS Code does not set it."),
    ]
    restated = json.dumps({"statement": "Set COLORTERM to 1 for true colours in VS Code."})
    calls: list[dict] = []
    outcome = summarise_turn(
        chat_client([completion("[]"), completion(restated)], calls), TurnJob("s", "t", "/p", turn), 4096, 256
    )
    [idea] = outcome.ideas
    assert idea.summary == "Set COLORTERM to 1 for true colours in VS Code." and outcome.restated == 1
    assert idea.evidence == "needs to be set to 1 for true colors" and idea.priority == "high"
    assert len(calls) == 2 and "needs to be set to 1" in calls[1]["messages"][1]["content"]


@pytest.mark.parametrize(
    "answer",
    [
        {"statement": "Set MY_FLAG to 1 in the kubernetes manifest for every pod."},  # not in the turn
        {"statement": "The user said it needs to be set to 1."},  # a claim about the user again
        {"statement": "needs to be set to 1 for true colors"},  # the same quote
        {"statement": "The context is about a setting that needs to be set to 1 for true colors."},  # its input
    ],
)
def test_a_restatement_the_turn_does_not_back_keeps_the_original(answer: dict) -> None:
    turn = [TurnMessage("user", "needs to be set to 1 for true colors"), TurnMessage("assistant", "Done.")]
    outcome = summarise_turn(
        chat_client([completion("[]"), completion(json.dumps(answer))], []), TurnJob("s", "t", "/p", turn), 4096, 256
    )
    [idea] = outcome.ideas
    assert idea.summary == "Needs to be set to 1 for true colors." and outcome.restated == 0


def test_a_restating_pass_cut_off_keeps_the_original_and_is_counted() -> None:
    turn = [TurnMessage("user", "needs to be set to 1 for true colors"), TurnMessage("assistant", "Done.")]
    cut = completion('{"statement": "Set COLORTERM to', "length")
    outcome = summarise_turn(chat_client([completion("[]"), cut], []), TurnJob("s", "t", "/p", turn), 4096, 256)
    [idea] = outcome.ideas
    assert idea.summary == "Needs to be set to 1 for true colors." and outcome.restated == 0
    # Two calls, both paid for by the server: the turn's account holds the cut-off one too.
    assert (outcome.attempts, outcome.completion_tokens, outcome.server_seconds) == (2, 40, 1.0)


def test_the_persons_own_words_decide_the_kind_of_what_they_state() -> None:
    said = "Rule for this project: always use pnpm, never npm."
    typed_as_decision = {"kind": "decision", "subject": "pnpm", "statement": "Always use pnpm, never npm.",
                         "evidence": said}  # fmt: skip
    job = TurnJob("s", "t", "/p", [TurnMessage("user", said), TurnMessage("assistant", "Noted.")])
    outcome = summarise_turn(chat_client([completion(json.dumps([typed_as_decision]))], []), job, 4096, 256)
    [idea] = outcome.ideas
    assert (idea.kind, idea.priority, idea.tags[0]) == ("rule", "high", "rule")


def test_a_memory_carries_the_agent_of_the_session_it_came_from() -> None:
    """The LLM's memories of a Codex turn are Codex's: the agent goes from the turn to its outcome and to every
    memory-summary document, so search can filter by it."""
    from memory_pipeline.summarize.frames import outcome_rows, summary_documents
    from memory_pipeline.summarize.ideas import PROMPT_VERSION
    from memory_pipeline.summarize.journal import JournalEntry

    turns = pl.DataFrame(
        {
            "partition": ["2024-06-01"] * 2,
            "session_id": ["s", "c"],
            "turn_id": ["t", "t"],
            "project": ["/p"] * 2,
            "agent": ["pi", "codex"],
            "started_at": [None] * 2,
            "session_started_at": [None] * 2,
            "content_hash": ["h1", "h2"],
        },
        schema_overrides={"started_at": pl.Datetime("ms", "UTC"), "session_started_at": pl.Datetime("ms", "UTC")},
    )
    jobs = [_turn_job("Always run pytest -x before claiming a fix.", session=s) for s in ("s", "c")]
    done = summarise_turns(
        chat_client([completion(GOOD_ANSWER), completion(GOOD_ANSWER)], []),
        jobs,
        context_tokens=4096,
        max_output_tokens=256,
    )
    entries = {(o.session_id, o.turn_id): JournalEntry.of(o, "2024-06-01", "h", PROMPT_VERSION, "m") for o in done}
    rows = outcome_rows(turns, entries, {}, [], "m")
    assert rows["agent"].to_list() == ["pi", "codex"] and rows["status"].to_list() == ["summarised"] * 2
    documents = summary_documents(rows)
    assert documents.height >= 2
    assert {(d["session_id"], d["agent"]) for d in documents.iter_rows(named=True)} == {("s", "pi"), ("c", "codex")}


def test_one_memory_said_alike_several_times_in_a_turn_is_kept_once() -> None:
    # Seen on the labelled set (L000531, 2026-12-04): "Bullet in markdown should be same as in line code in
    # markdown." stored three times for one turn, beside the link-text rule.
    from memory_pipeline.language.kinds import Kind
    from memory_pipeline.summarize.compose import distinct, make_idea

    said = "Bullet in markdown should be same as in line code in markdown"
    bullet = make_idea(Kind.RULE, said, said, "user")
    again = make_idea(Kind.RULE, said.upper() + "!", said, "user")
    link = make_idea(Kind.RULE, "Link text should be same as accent.", "Link text should be same as accent", "user")
    assert bullet and again and link and bullet.summary != again.summary
    assert [i.summary for i in distinct([bullet, link, again, bullet])] == [bullet.summary, link.summary]
    as_decision = make_idea(Kind.DECISION, said, said, "user")
    assert as_decision and [i.kind for i in distinct([bullet, as_decision])] == ["rule", "decision"]


def test_a_turn_the_gate_finds_empty_is_never_sent_to_the_model() -> None:
    """The gate before the model (trained weights, turn_gate.json): an acknowledgement after a tool loop costs no
    request; a stated rule is read by the model."""
    from memory_pipeline.summarize.extract import UNREAD

    ack = [TurnMessage("user", "ok, continue"), TurnMessage("assistant", "Running the tests now.")]
    rule = [
        TurnMessage("user", "From now on always use pnpm, never npm, in this repo."),
        TurnMessage("assistant", "Noted."),
    ]
    said = "always use pnpm, never npm"
    drafted = json.dumps(
        [{"kind": "rule", "subject": "pnpm", "statement": "Always use pnpm, never npm.", "evidence": said}]
    )
    calls: list[dict] = []
    client = chat_client([completion(drafted)], calls)
    skipped, read = summarise_turns(
        client,
        [TurnJob("s", "a", "/p", ack), TurnJob("s", "b", "/p", rule)],
        context_tokens=4096,
        max_output_tokens=256,
    )
    assert (skipped.status, skipped.reason, skipped.attempts) == ("empty", UNREAD, 0)
    asked = [call["messages"][1]["content"] for call in calls]
    assert asked and all("pnpm" in text and "ok, continue" not in text for text in asked)
    assert read.status == "summarised" and read.ideas[0].kind == "rule"


# --- the person's words outlast what the model does with them ---------------------------------
# Seen in CI (stop 56): pi's 0.5B reply to "We decided to use Vitest instead of Jest, because …" varied from run to
# run, and with some replies the decision was not stored at all; sampling twenty replies here lost it three times.

DECIDED = "We decided to use Vitest instead of Jest, because Jest kept breaking on our ESM imports."
THE_DECISION = ("decision", "Use Vitest instead of Jest, because Jest kept breaking on our ESM imports.")


def _decided(reply: str) -> TurnJob:
    return TurnJob("s1", "t9", "/p", [TurnMessage("user", DECIDED), TurnMessage("assistant", reply)])


def test_a_turn_whose_answers_are_cut_off_keeps_the_persons_decision_and_is_read_again() -> None:
    from memory_pipeline.summarize.frames import outcome_rows, summary_documents
    from memory_pipeline.summarize.ideas import PROMPT_VERSION
    from memory_pipeline.summarize.journal import JournalEntry

    calls: list[dict] = []
    cut = completion('[{"kind": "decision", "subject": "Vitest", "statement": "Vitest is', "length")
    outcome = summarise_turn(chat_client([cut], calls), _decided("Here is a long guide to Vitest …"), 4096, 256)
    assert outcome.status == "failed" and len(calls) == 2 and "cut off" in (outcome.reason or "")
    assert [(i.kind, i.summary) for i in outcome.ideas] == [THE_DECISION]
    # Stored meanwhile, and failed in the ledger, so the next run reads it again (`frames.reread_reason`).
    turns = pl.DataFrame(
        {"partition": ["2024-06-01"], "session_id": ["s1"], "turn_id": ["t9"], "project": ["/p"], "agent": ["pi"]}
        | {"started_at": [None], "session_started_at": [None], "content_hash": ["h"]},
        schema_overrides={"started_at": pl.Datetime("ms", "UTC"), "session_started_at": pl.Datetime("ms", "UTC")},
    )
    entry = JournalEntry.of(outcome, "2024-06-01", "h", PROMPT_VERSION, "m")
    rows = outcome_rows(turns, {("s1", "t9"): entry}, {}, [], "m")
    assert rows["status"].to_list() == ["failed"]
    assert summary_documents(rows)["summary"].to_list() == [THE_DECISION[1]]


def test_a_decision_a_dropped_draft_covered_is_kept_in_the_persons_words() -> None:
    reply = (
        "Absolutely! You're right, Vitest is a good alternative for ESM imports, while Jest is a powerful testing "
        "framework that supports ES modules and can be more flexible. Vitest is also less prone to breaking on ESM "
        "imports."
    )
    # The model's draft cites the decision but says the reply (checked as unfaithful, dropped): the decision the
    # draft covered is not lost with it.
    draft = {"kind": "decision", "subject": "Vitest", "statement": reply, "evidence": DECIDED}
    outcome = summarise_turn(chat_client([completion(json.dumps([draft]))], []), _decided(reply), 4096, 256)
    assert [(i.kind, i.summary) for i in outcome.ideas] == [THE_DECISION]
    assert outcome.ideas[0].evidence == DECIDED and outcome.ideas[0].evidence_role == "user"


@pytest.mark.parametrize(
    "reworded",
    [
        "Using Vitest instead of Jest is a good choice because it provides a more robust testing framework.",
        "Use Vitest instead of Jest for the sake of breaking our ESM imports.",
    ],
)
def test_a_decision_the_model_gives_other_reasons_is_stored_as_the_person_gave_it(reworded: str) -> None:
    reply = f"{reworded} It handles ESM imports better."
    draft = {"kind": "decision", "subject": "Vitest", "statement": reworded, "evidence": DECIDED}
    calls: list[dict] = []
    outcome = summarise_turn(chat_client([completion(json.dumps([draft]))], calls), _decided(reply), 4096, 256)
    assert [(i.kind, i.summary) for i in outcome.ideas] == [THE_DECISION]
    assert len(calls) == 1  # composed from the person's sentence: no pass asked the model to restate it
