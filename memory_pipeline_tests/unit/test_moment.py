"""Recall at each moment of a session (search/moment.py), its ledger (stores/injections.py) and the Claude Code
hook's protocol (service/hooks/claude_code.py): pure choices over a stand-in search, files in tmp_path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_pipeline.reflect.workspace import ensure_project_dir
from memory_pipeline.search.briefing import (
    HEADER,
    Parts,
    line_key,
    naming_first,
    outdated,
    parts_named,
    replaced_turns,
    says_something,
    tokens,
)
from memory_pipeline.search.models import Filters, Row
from memory_pipeline.search.moment import (
    PROMPT_HEADER,
    Moment,
    choose,
    raised_first,
    recall,
    same_command_first,
    start_parts,
)
from memory_pipeline.service.hooks.claude_code import HookPayload, context_output, moment_of, parse
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.stores.injections import InjectedLine, Injection, InjectionLedger

PROJECT = "/work/shop"


def _row(doc_id: str, priority: str, text: str, **extra: object) -> Row:
    fields: dict = {"id": doc_id, "kind": "summary", "time": "2026-11-30T10:00:00Z", "priority": priority,
                    "summary": text, "project": PROJECT, "session_id": "s1", "turn_id": "t1"}  # fmt: skip
    return Row(**(fields | extra))


class _Search:
    """The newest memories by priority and kind, and a fixed list of matches for any prompt."""

    def __init__(self, high: list[Row], newest: list[Row], matches: dict[str, list[Row]]) -> None:
        self.high, self.newest, self.matches, self.queries = high, newest, matches, []
        self.demoted: set[str] = set()
        self.raised: set[str] = set()

    def learned(self, project: str | None) -> tuple[set[str], set[str]]:
        assert project == PROJECT
        return self.demoted, self.raised

    def recent(self, filters: Filters, k: int = 10) -> list[Row]:
        assert filters.project == PROJECT
        return (self.high if filters.priority == ("high",) else self.newest)[:k]

    def about_file(self, path: str, filters: Filters = Filters(), k: int = 3) -> list[Row]:
        return [_row("f9", "high", "src/theme.ts holds rgb triples only.", knowledge="gotcha")]

    def index(self, query: str, k: int = 10, filters: Filters = Filters()) -> list[Row]:
        self.queries.append(query)
        return self.matches.get(query, [])[:k] if filters.priority != ("high",) else []


def _workspace(tmp_path: Path) -> Path:
    folder = ensure_project_dir(tmp_path / "memory", PROJECT)
    (folder / "MEMORY.md").write_text("- Always use pnpm <!-- p-1 -->\n- Store timestamps in UTC\n")
    return tmp_path / "memory"


def _search() -> _Search:
    high = [_row("h1", "high", "Use Vitest, not Jest: ESM imports broke Jest.")]
    newest = [_row("n1", "medium", "The CI runs on GitHub Actions in .github/workflows/ci.yml."), high[0]]
    migrate = [_row("m1", "high", "Run make migrate after changing the schema.", strong=True)]
    meals = [_row("m2", "medium", "Meal plans are sent by the mailer in src/mail/plan.ts.", strong=True), *migrate]
    return _Search(high, newest, {"change the schema": migrate, "store when a meal plan was sent": meals})


def _ledger(tmp_path: Path) -> InjectionLedger:
    return InjectionLedger(tmp_path / "state" / "injected", Redactor.with_patterns([]))


def test_a_start_without_a_prompt_briefs_from_rules_important_and_recent_never_a_search(tmp_path: Path) -> None:
    search = _search()
    parts = start_parts(search, PROJECT, _workspace(tmp_path))  # type: ignore[arg-type]
    made = choose(parts, set(), "start", 800, first=True)
    assert search.queries == []  # no search for a placeholder prompt
    text = made.markdown
    assert text.startswith(HEADER) and "Always use pnpm" in text and "Store timestamps in UTC" in text
    assert text.index("Always use pnpm") < text.index("### Important") < text.index("h1") < text.index("n1")
    assert made.ids == ["p-1", "h1", "n1"] and text.count("`h1`") == 1  # the important one is not recent again
    assert len(made.keys) == 4 and line_key("- Store timestamps in UTC _(MEMORY.md)_\n", None) in made.keys


def test_no_line_twice_and_a_later_prompt_gets_only_what_is_new_within_its_budget(tmp_path: Path) -> None:
    search, workspace, ledger = _search(), _workspace(tmp_path), _ledger(tmp_path)
    start, _ = recall(search, ledger, Moment(session_id="s", event="start", project=PROJECT), workspace)  # type: ignore[arg-type]
    assert start.first and start.ids == ["p-1", "h1", "n1"]
    first = Moment(session_id="s", event="prompt", project=PROJECT, text="change the schema")
    one, _ = recall(search, ledger, first, workspace)  # type: ignore[arg-type]
    assert not one.first and one.ids == ["m1"] and one.markdown.startswith(PROMPT_HEADER)
    assert "### Important" not in one.markdown and "pnpm" not in one.markdown  # not repeated
    assert one.tokens == tokens(one.markdown) <= 300
    second = first.model_copy(update={"text": "store when a meal plan was sent"})
    two, _ = recall(search, ledger, second, workspace)  # type: ignore[arg-type]
    assert two.ids == ["m2"]  # m1 matched again, and was given already
    again, _ = recall(search, ledger, second, workspace)  # type: ignore[arg-type]
    assert again.markdown == "" and again.ids == []  # nothing new: nothing, and nothing recorded
    history = ledger.read("s")
    assert [(i.event, i.ids) for i in history.injections] == [("start", ["p-1", "h1", "n1"]), ("prompt", ["m1"]),
                                                              ("prompt", ["m2"])]  # fmt: skip
    keys = [line.key for i in history.injections for line in i.lines]
    assert len(keys) == len(set(keys)) == 6


def test_a_demoted_memory_is_never_injected_and_a_raised_one_comes_first(tmp_path: Path) -> None:
    search, workspace = _search(), _workspace(tmp_path)
    moment = Moment(session_id="d", event="prompt", project=PROJECT, text="store when a meal plan was sent")
    before, _ = recall(search, _ledger(tmp_path / "a"), moment, workspace)  # type: ignore[arg-type]
    assert "h1" in before.ids and "m1" in before.ids
    search.demoted = {"h1"}
    after, _ = recall(search, _ledger(tmp_path / "b"), moment, workspace)  # type: ignore[arg-type]
    assert "h1" not in after.ids and "`h1`" not in after.markdown  # contradicted twice: left out
    assert "m1" in after.ids and "m2" in after.ids  # the others as before
    parts = Parts([("related", [("- a\n", "a"), ("- b\n", "b"), ("- c\n", "c")])])
    assert [i for _, i in raised_first(parts, {"c"}).sections[0][1]] == ["c", "a", "b"]  # said again: first
    one_line = tokens(PROMPT_HEADER) + 12  # a budget of one line: the raised one is what is given
    assert choose(parts, set(), "prompt", one_line, first=False).ids == ["a"]
    assert choose(raised_first(parts, {"c"}), set(), "prompt", one_line, first=False).ids == ["c"]


def test_a_first_prompt_gets_the_whole_briefing_and_a_small_budget_is_kept(tmp_path: Path) -> None:
    search, workspace, ledger = _search(), _workspace(tmp_path), _ledger(tmp_path)
    moment = Moment(session_id="p", event="prompt", project=PROJECT, text="store when a meal plan was sent")
    made, _ = recall(search, ledger, moment, workspace)  # type: ignore[arg-type]
    assert made.first and made.markdown.startswith(HEADER) and "### Rules" in made.markdown
    assert "m1" in made.ids and "m2" in made.ids and "h1" in made.ids
    ledger_b = _ledger(tmp_path / "b")
    read = Moment(session_id="p", event="file", project=PROJECT, text="src/theme.ts")
    reminded, _ = recall(search, ledger_b, read, workspace)  # type: ignore[arg-type]
    assert reminded.ids == ["f9"] and reminded.markdown.startswith("[memory about src/theme.ts]")
    small, _ = recall(search, ledger_b, moment.model_copy(update={"tokens": 100}), workspace)  # type: ignore[arg-type]
    assert small.first  # a file reminder before it: the first prompt still gets the briefing
    assert 0 < small.tokens <= 100 and small.ids == ["p-1"]


def test_choose_leaves_out_what_was_given_by_key() -> None:
    rule = ("- Keep it short _(MEMORY.md)_\n", None)
    parts = Parts([("rules", [rule]), ("related", [("- **high** x _(id `a`)_\n", "a")])])
    assert choose(parts, {line_key(*rule)}, "prompt", 300, first=False).keys == ["a"]
    assert choose(parts, {"a", line_key(*rule)}, "prompt", 300, first=False).markdown == ""


def test_the_ledger_redacts_skips_a_torn_line_and_names_it(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    item = Injection(session_id="../../s 1", agent="pi", event="prompt", text=f"deploy with {secret}", ids=["a"],
                     lines=[InjectedLine(key="a", text=f"token {secret}")], tokens=12)  # fmt: skip
    kept = ledger.record(item)
    assert secret not in kept.text and secret not in kept.lines[0].text
    [path] = list((tmp_path / "state" / "injected").glob("*.jsonl"))  # one file, inside the ledger's folder
    assert secret not in path.read_text()
    with path.open("a") as handle:
        handle.write('{"session_id": "../../s 1", "agent"')  # a crash cut this one short
    ledger.record(item)
    read = ledger.read("../../s 1")
    assert len(read.injections) == 2 and read.given == {"a"}
    assert path.read_text().count("\n") == 3  # the torn line, closed; each delivery one line
    assert len(read.problems) == 1 and f"{path}:2:" in read.problems[0]
    [summary] = ledger.sessions()
    assert (summary.deliveries, summary.lines, summary.tokens) == (2, 2, 24)
    assert ledger.read("never").injections == []


def test_a_forget_blanks_and_an_edit_rewrites_the_memorys_text_in_every_session_and_keep_the_rest(
    tmp_path: Path,
) -> None:
    ledger = _ledger(tmp_path)
    for session in ("s1", "s2"):
        ledger.record(Injection(session_id=session, agent="pi", event="start", ids=["gone", "kept"],
                                lines=[InjectedLine(key="gone", text="Use pnpm, never npm."),
                                       InjectedLine(key="kept", text="The dev server is on 5173.")]))  # fmt: skip
    other = tmp_path / "state" / "injected" / "s3.jsonl"
    ledger.record(Injection(session_id="s3", agent="pi", event="start", ids=["kept"],
                            lines=[InjectedLine(key="kept", text="The dev server is on 5173.")]))  # fmt: skip
    untouched = other.read_bytes()
    with (tmp_path / "state" / "injected" / "s2.jsonl").open("a") as handle:
        handle.write('{"session_id": "s2", "agent"\n')  # torn: kept as it is
    assert ledger.forget("gone") == 2
    for session in ("s1", "s2"):
        read = ledger.read(session)
        [gone, kept] = read.injections[0].lines
        assert (gone.key, gone.text, gone.forgotten) == ("gone", "", True) and read.given == {"gone", "kept"}
        assert (kept.text, kept.forgotten) == ("The dev server is on 5173.", False)
        assert "pnpm" not in (tmp_path / "state" / "injected" / f"{session}.jsonl").read_text()
    assert len(ledger.read("s2").problems) == 1  # the torn line is still there, still named
    assert other.read_bytes() == untouched  # a session never given it is not rewritten
    assert ledger.forget("gone") == 0 and ledger.forget("never-given") == 0
    # An edit: the person's text (redacted) where it was given, said to be edited; a forgotten line stays blank.
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    assert ledger.edited("kept", f"The dev server is on 3000 (token {secret}).") == 3
    assert ledger.edited("gone", "Use npm.") == 0
    for session in ("s1", "s2", "s3"):
        kept = next(x for x in ledger.read(session).injections[0].lines if x.key == "kept")
        assert kept.edited and "3000" in kept.text and secret not in kept.text
    assert "npm." not in (tmp_path / "state" / "injected" / "s1.jsonl").read_text()


def test_claude_codes_payloads_become_moments() -> None:
    start = moment_of(HookPayload(hook_event_name="SessionStart", session_id="c1", cwd=PROJECT), tokens=600)
    assert start and (start.event, start.text, start.tokens, start.project) == ("start", "", 600, PROJECT)
    prompt = moment_of(parse(json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "c1", "cwd": PROJECT,
                                         "prompt": "fix the build", "source": "x"})), tokens=600)  # fmt: skip
    assert prompt and (prompt.event, prompt.text, prompt.tokens, prompt.agent) == ("prompt", "fix the build", None,
                                                                                    "claude-code")  # fmt: skip
    assert moment_of(HookPayload(hook_event_name="PreToolUse", session_id="c1")) is None
    nameless = moment_of(HookPayload(hook_event_name="SessionStart", cwd=PROJECT))
    assert nameless and nameless.session_id.startswith("claude-code-")
    with pytest.raises(ValueError, match="not Claude Code's JSON"):
        parse("{not json")
    assert len(Moment(session_id="c1", event="prompt", text="log " * 100_000).text) == 20_000  # clipped, not refused
    assert json.loads(context_output("SessionStart", "x")) == {
        "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "x"}
    }


def test_the_service_recalls_records_and_shows_what_a_session_was_given(tmp_path: Path) -> None:
    from contextlib import contextmanager

    from fastapi.testclient import TestClient

    from memory_pipeline.service.app import create_app
    from memory_pipeline.settings import load_settings
    from memory_pipeline_tests.unit.test_service import FakeSearch

    settings = load_settings(memory_workspace=_workspace(tmp_path), memory_pipeline_state_dir=tmp_path / "state")

    @contextmanager
    def opened(_settings):  # noqa: ANN001, ANN202
        yield FakeSearch()

    with TestClient(create_app(settings, opened), base_url="http://127.0.0.1") as client:
        moment = {"session_id": "web-1", "agent": "pi", "event": "start", "project": PROJECT}
        assert client.post("/api/v1/recall", json=moment).status_code == 403  # recording is a write: the token
        client.headers["X-Memory-Token"] = settings.service_token()
        assert client.post("/api/v1/recall", json=moment | {"event": "later"}).status_code == 422
        start = client.post("/api/v1/recall", json=moment).json()
        assert start["first"] and "Always use pnpm" in start["markdown"] and "m1" in start["ids"]
        again = client.post("/api/v1/recall", json=moment | {"event": "prompt", "text": "fix the build"}).json()
        assert not again["first"] and "Always use pnpm" not in again["markdown"]
        assert not set(again["ids"]) & set(start["ids"])  # never a line twice
        ledger = client.get("/api/v1/injected", params={"session_id": "web-1"}).json()
        assert ledger["injections"][0]["ids"] == start["ids"] and ledger["injections"][0]["event"] == "start"
        assert [s["session_id"] for s in client.get("/api/v1/injected/sessions").json()] == ["web-1"]
        page = client.get("/injected", params={"session_id": "web-1"}).text
        assert "m1" in page and "<script>alert(1)" not in page  # session content is shown as text
        # A MEMORY.md rule's line names its proposal and opens the Review page (it is no memory of its own).
        assert 'href="/review" title="A MEMORY.md rule' in page and 'href="/m/p-1"' not in page
        assert "web-1" in client.get("/injected").text
        rules = client.get("/api/v1/rules", params={"project": PROJECT}).json()
        assert "Always use pnpm" in rules["markdown"] and rules["ids"] == ["p-1"]


def test_a_failing_command_recalls_only_what_is_known_about_failures(tmp_path: Path) -> None:
    gotcha = _row("g1", "high", "make migrate fails without DATABASE_URL: export it first.", knowledge="gotcha",
                  strong=True)  # fmt: skip
    failed = _row("o1", "low", "Asked: migrate. Failed: make migrate exited 2. Outcome: fixed.", kind="observation",
                  strong=True)  # fmt: skip
    asked = _row("o2", "low", "Asked: what does make migrate do. Outcome: explained.", kind="observation", strong=True)
    fact = _row("f1", "medium", "The schema lives in db/schema.sql.", knowledge="fact", strong=True)
    guess = _row("g2", "high", "make test needs Docker.", knowledge="gotcha")  # below the relevance floor
    search = _Search([], [], {"make migrate": [gotcha, failed, asked, fact, guess]})
    ledger = _ledger(tmp_path)
    moment = Moment(session_id="e", event="error", project=PROJECT, text="make migrate")
    made, _ = recall(search, ledger, moment, None)  # type: ignore[arg-type]
    assert made.ids == ["g1", "o1"] and made.tokens <= 200 and "Known about this command" in made.markdown
    again, _ = recall(search, ledger, moment, None)  # type: ignore[arg-type]
    assert again.markdown == ""  # the same failure again: nothing twice


def test_a_files_reminder_is_given_once_per_session_as_the_ledger_tells_a_hook(tmp_path: Path) -> None:
    search, ledger = _search(), _ledger(tmp_path)
    read = Moment(session_id="c", agent="claude-code", event="file", project=PROJECT, text="/work/shop/src/theme.ts")
    first, _ = recall(search, ledger, read, None)  # type: ignore[arg-type]
    assert first.ids == ["f9"] and first.markdown.startswith("[memory about src/theme.ts]")
    again, _ = recall(search, ledger, read, None)  # type: ignore[arg-type]
    assert again.markdown == "" and again.ids == []  # a second Read of it: a process with only the ledger to ask
    other, _ = recall(search, ledger, read.model_copy(update={"session_id": "d"}), None)  # type: ignore[arg-type]
    assert other.ids == ["f9"]  # another session reads it for the first time
    history = ledger.read("c")
    assert [(i.event, i.agent, i.text, i.ids) for i in history.injections] == [
        ("file", "claude-code", "/work/shop/src/theme.ts", ["f9"])
    ]
    assert history.answered("file") == {"/work/shop/src/theme.ts"} and history.answered("error") == set()


def test_a_failing_command_is_given_the_trap_of_its_own_part_first() -> None:
    said = '`pnpm vitest run src/{c}` fails with "expected 2024-03-31, got 2024-04-01": set `{C}_FAKE_CLOCK=1`.'
    pilots = _row("g1", "medium", said.format(c="pilots", C="PILOTS"), knowledge="gotcha")
    tariffs = _row("g2", "medium", said.format(c="tariffs", C="TARIFFS"), knowledge="gotcha")
    other = _row("g3", "medium", "Golden files are regenerated with `UPDATE_GOLDEN=1`.", knowledge="gotcha")
    command = "pnpm vitest run src/tariffs\nFAILED: assertion failed: expected 2024-03-31, got 2024-04-01"
    assert [r.id for r in same_command_first([pilots, other, tariffs], command)] == ["g2", "g1", "g3"]
    assert [r.id for r in same_command_first([pilots, other], "make build")] == ["g1", "g3"]  # order kept


def test_a_prompt_gets_the_earlier_answer_about_its_own_part_and_no_empty_observation(tmp_path: Path) -> None:
    # bench needs (ledger-api): the planting turn's observation held the port, but an earlier session's same
    # words about another service ranked above it, and observations that said nothing took the budget.
    prompt = "I want to curl the fees service locally, how do I reach it?"
    obs = {"kind": "observation", "knowledge": "", "strong": True}
    asked = "Asked: I want to curl the {s} service locally, how do I reach it?"
    nothing = _row("o1", "low", asked.format(s="fees") + " Outcome: Done; the tests pass.", **obs)
    other = _row(
        "o2", "low", asked.format(s="subscriptions") + " Outcome: The subscriptions service listens on port 9572 "
        "locally; it is set in `config/subscriptions.env`.", **obs,
    )  # fmt: skip
    answer = _row(
        "o3", "low", "Asked: what port does the fees service listen on locally? Tools: read. Files: config/fees.env. "
        "Outcome: The fees service listens on port 8612 locally; it is set in `config/fees.env`.", **obs,
    )  # fmt: skip
    assert not says_something(nothing) and says_something(other) and says_something(answer)
    assert says_something(_row("m", "medium", "Deploys are manual."))  # a memory is always worth its line
    assert parts_named(prompt, [other, answer]) == {"fees"}
    assert [r.id for r in naming_first([other, answer], {"fees"})] == ["o3", "o2"]
    search = _Search([], [], {prompt: [nothing, other, answer]})
    ledger, workspace = _ledger(tmp_path), _workspace(tmp_path)
    recall(search, ledger, Moment(session_id="s", event="prompt", project=PROJECT, text="hello"), workspace)  # type: ignore[arg-type]
    later, _ = recall(search, ledger, Moment(session_id="s", event="prompt", project=PROJECT, text=prompt), workspace)  # type: ignore[arg-type]
    assert later.ids == ["o3", "o2"]


def test_the_observation_of_a_turn_whose_decision_was_replaced_earns_no_line(tmp_path: Path) -> None:
    # bench needs with the embedded model: a correction's observation ("no, subscriptions uses rq-scheduler")
    # was shown two months after the move to celery-beat had replaced the decision that turn made.
    prompt = "schedule the subscriptions cleanup"
    turn = {"session_id": "s7", "turn_id": "t3"}
    old = _row("d1", "high", "Subscriptions uses rq-scheduler for scheduling.", knowledge="decision",
               superseded_by="d2", strong=True, **turn)  # fmt: skip
    new = _row("d2", "high", "Scheduling in subscriptions moved from rq-scheduler to celery-beat.",
               knowledge="decision", strong=True)  # fmt: skip
    said = "Asked: no, subscriptions uses rq-scheduler for scheduling Files: app/subscriptions/service.py."
    seen = _row("o1", "low", said, kind="observation", knowledge="", strong=True, **turn)
    other = _row("o2", "low", said.replace("no, ", ""), kind="observation", knowledge="", strong=True)
    assert replaced_turns([old, new, seen, other]) == {("s7", "t3")}
    search = _Search([], [], {prompt: [old, new, seen, other]})
    got, _ = recall(search, _ledger(tmp_path), Moment(session_id="s", event="prompt", project=PROJECT, text=prompt),
                    _workspace(tmp_path))  # type: ignore[arg-type]  # fmt: skip
    assert "d2" in got.ids and "o2" in got.ids and "o1" not in got.ids and "d1" not in got.ids
    # Without its turn's memory among the matches, the newer move still says the observation is outdated.
    moved = _row("d3", "high", "We're moving scheduling in subscriptions from rq-scheduler to celery-beat.",
                 knowledge="decision", time="2026-12-01T10:00:00Z", strong=True)  # fmt: skip
    assert outdated(seen, [moved]) and not outdated(seen, [new])  # d2 names no move the lexicon reads
    assert not outdated(_row("o3", "low", "Asked: taxes uses rq-scheduler for scheduling", kind="observation"), [moved])
    later = _row("o4", "low", said, kind="observation", time="2026-12-02T10:00:00Z")
    assert not outdated(later, [moved])  # said again after the move: not the move's to hide
    search = _Search([], [], {prompt: [moved, seen]})
    got, _ = recall(search, _ledger(tmp_path), Moment(session_id="s2", event="prompt", project=PROJECT, text=prompt),
                    _workspace(tmp_path))  # type: ignore[arg-type]  # fmt: skip
    assert "d3" in got.ids and "o1" not in got.ids
    # The move among the newest important memories only (not the prompt's matches) says it as well.
    search = _Search([moved], [], {prompt: [seen, other]})
    got, _ = recall(search, _ledger(tmp_path), Moment(session_id="s3", event="prompt", project=PROJECT, text=prompt),
                    _workspace(tmp_path))  # type: ignore[arg-type]  # fmt: skip
    assert "d3" in got.ids and "o1" not in got.ids and "o2" not in got.ids
