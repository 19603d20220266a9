"""Needs met when they arise: does each step of a later session get, at or before it, what it needs from the
earlier sessions, in a small budget, without stale or unfounded lines?

    uv run python -m bench needs                      # baseline, ceiling, LLM-free on the held-out project
    uv run python -m bench needs --model              # and the embedded model's row (hours on 2 cores)
    uv run python -m bench needs --split=tune         # the two tune projects (tune there, report held out)
    uv run python -m bench needs --all                # every project (--split=all)
    uv run python -m bench needs --dump=/tmp/needs.json   # and every delivered line beside its session's needs
    uv run python -m bench needs --service=http://127.0.0.1:8765   # deliver through POST /api/v1/recall
    uv run python -m bench needs --serve              # and rows through the service run here (needs_served.py)
    uv run python -m bench needs --day-by-day         # one run a day instead of the store as of each day
    uv run python -m bench needs --delivery=bench.needs:claude_code_today   # any DeliveryMaker, in process

The corpus (bench/corpus/needs, labels bench/labels/needs.json, both made and frozen by
testkit/corpora/make_needs_corpus.py before this file existed): three projects of 100 pi sessions over six
months, 194 pieces of knowledge each, later sessions as steps (prompt, file read, failing command) with the
needs that arise at each. The held-out third is one whole project (`held_out_project` in the labels).

The sessions go through the pipeline's own assets, and each later session is replayed as the pi extension and
the Claude Code hooks see it: `start`, then every prompt, every file read and every failing command, each an
event given to a delivery function (`Delivery`: a `RecallEvent` in, a `Delivered` out), built from the
sessions before it only. By default the history is ingested once (one range run of the recall assets) and
each session replayed against the store as of the start of its day (`AsOf` bounds every search to memories
established before it); `--day-by-day` (and `--service`, whose searches the bench cannot bound, and the
embedded model's row, whose reflections are dated) runs the assets one day at a time and replays each day's
sessions before that day is ingested (about 25 s a day here, so 40 minutes a row).

The default delivery is what the product does today for pi: the briefing (`build_briefing`, 800 tokens) at
the first prompt, nothing at later prompts, what earlier sessions recorded about a file once per file read
(`about_file`), nothing on errors (`claude_code_today` is the Claude Code hooks'). `--service=URL` sends each
event to `POST URL/api/v1/recall` ({session_id, agent, event, project, text} -> {markdown, ids, tokens}).

Measured per row, over the later sessions:
- coverage: needs named by a line delivered at or before their step (a line names a need when it holds
  every word of one of its `match` sets);
- tokens injected per session, and lines no need of the session used;
- harmful lines: a replaced decision shown as current (its `stale` words, not its successor's), or a port
  shown for a service with another number than the one its evidence gave;
- added latency per prompt (the delivery's own time at each prompt event, p50 and p95).

Rows: `baseline` (the project's last user messages, newest first, at the first prompt, within the
budget), `ceiling` (every labelled piece written as a perfect memory on the day it was planted, a replaced one
marked superseded, beside the LLM-free run's observations: the same delivery selects), `llm-free` (ingest,
observations, embeddings), `embedded model` (the whole daily job with the chat model, a day at a time, each
later session replayed before its day; only with --model, through the endpoint with --serve).
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from dagster import materialize

from bench.needs_perfect import mark_replaced, perfect_memories
from bench.needs_served import ServedHere
from bench.next_session import LOCAL_MODEL, run_day
from bench.results_file import table, write_section
from memory_pipeline.partitions import RANGE_END, RANGE_START, instance_with_days
from memory_pipeline.resources import build_resources
from memory_pipeline.search.briefing import build_briefing, tokens
from memory_pipeline.search.engine import MemorySearch
from memory_pipeline.search.files import file_names
from memory_pipeline.search.models import Filters
from memory_pipeline.search.open import open_search
from memory_pipeline.search.render import file_text
from memory_pipeline.sessions.discovery import scan_sessions
from memory_pipeline.settings import Settings, isolated_settings, load_settings
from memory_pipeline.stores.elasticsearch import delete_days, delete_matching, make_client
from memory_pipeline.stores.indices import PIPELINE_INDICES, SUMMARY_INDEX
from memory_pipeline.stores.summary_store import OWN_WORDS
from testkit.corpora.make_needs_corpus import LABELS_FILE, OUT
from testkit.ingest_helpers import LLM_FREE_RUN_ASSETS, RECALL_ASSETS, recall_history
from testkit.needs import (
    AsOf,
    Delivered,
    Delivery,
    DeliveryMaker,
    RecallEvent,
    Scored,
    before,
    ceiling_of,
    replay,
    score,
    service,
)

BUDGET = 1500  # tokens a session may be given in all (the acceptance)
BRIEFING_TOKENS = 800  # what the pi extension asks the briefing for (MEMORY_BRIEFING_TOKENS)


def today(search: MemorySearch, settings: Settings) -> Delivery:
    """What the product delivers today: the pi extension's briefing at a session's first prompt, nothing at
    later prompts or on errors, and a file's memories once per file per session."""
    briefed: set[str] = set()
    recalled: set[tuple[str, str]] = set()

    def deliver(event: RecallEvent) -> Delivered:
        if event.event == "prompt" and event.session_id not in briefed:
            briefed.add(event.session_id)
            made = build_briefing(
                search, event.text, BRIEFING_TOKENS, event.project, workspace=settings.memory_workspace
            )
            return Delivered(markdown=made.markdown, ids=made.ids, tokens=tokens(made.markdown))
        if event.event == "file" and (event.session_id, event.text) not in recalled:
            recalled.add((event.session_id, event.text))
            rows = search.about_file(event.text, filters=Filters(project=event.project))
            names = file_names(event.text, event.project)
            text = file_text(rows, names[0] if names else event.text)
            return Delivered(markdown=text, ids=[r.id for r in rows], tokens=tokens(text) if text else 0)
        return Delivered()

    return deliver


def claude_code_today(search: MemorySearch, settings: Settings) -> Delivery:
    """What the Claude Code hooks deliver today (`memory-pipeline hook claude-code`): at SessionStart the
    briefing for the words "(no prompt)", at every UserPromptSubmit the briefing for the prompt (800 tokens
    each), nothing on file reads or errors."""

    def deliver(event: RecallEvent) -> Delivered:
        if event.event not in ("start", "prompt"):
            return Delivered()
        made = build_briefing(
            search, event.text or "(no prompt)", BRIEFING_TOKENS, event.project, workspace=settings.memory_workspace
        )
        return Delivered(markdown=made.markdown, ids=made.ids, tokens=tokens(made.markdown))

    return deliver


def delivery_named(spec: str) -> DeliveryMaker:
    """An in-process delivery by its import path (`package.module:function`, a `DeliveryMaker`: given the
    search and the settings, it answers each event), replayed against the store as of each session like
    today's: a new delivery is measured before it is served, in minutes rather than a day-by-day run."""
    module, _, attr = spec.partition(":")
    if not attr:
        raise SystemExit(f"--delivery={spec}: expected package.module:function")
    return getattr(importlib.import_module(module), attr)


@dataclass
class Row:
    name: str
    scored: list[Scored] = field(default_factory=list)
    seconds: float = 0.0


def labels() -> dict:
    return json.loads(LABELS_FILE.read_text())


def chosen(truth: dict, split: str) -> list[dict]:
    """The later sessions of a split (`held_out`, `tune`, or `all`)."""
    return [s for s in truth["sessions"] if split == "all" or s["split"] == split]


def _user_messages(path: Path) -> tuple[str, str, list[str]]:
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    said = [
        block["text"]
        for entry in lines[1:]
        if entry.get("type") == "message" and entry["message"]["role"] == "user"
        for block in entry["message"]["content"]
        if block.get("type") == "text"
    ]
    return lines[0]["cwd"], lines[0]["timestamp"][:10], said


def run_baseline(truth: dict, sessions: list[dict]) -> Row:
    """The project's most recent user messages, newest first, whole, within the budget, at the first prompt."""
    row = Row("baseline (last user messages)")
    history = [_user_messages(path) for path in sorted((OUT / "sessions").rglob("*.jsonl"))]
    for session in sessions:
        before = sorted((day, said) for project, day, said in history if project == session["project"])
        newest = [m for day, said in reversed(before) if day < session["day"] for m in reversed(said)]
        text = "## Recent messages in this project\n"
        for message in newest:
            line = f"- {' '.join(message.split())}\n"
            if tokens(text + line) <= BUDGET:
                text += line

        row.scored.append(score(replay(session, _once(text)), truth["projects"][session["project"]]))
    return row


def _once(text: str) -> Delivery:
    """`text` at a session's first prompt, nothing after."""
    given: list[bool] = []

    def deliver(event: RecallEvent) -> Delivered:
        if event.event == "prompt" and not given:
            given.append(True)
            return Delivered(markdown=text, tokens=tokens(text))
        return Delivered()

    return deliver


@contextmanager
def corpus_copy(folder: Path, projects: set[str]) -> Iterator[Path]:
    """The chosen projects' session folders under `folder` (a run ingests only those)."""
    target = folder / "sessions"
    for project in projects:
        name = f"--{project.strip('/').replace('/', '-')}--"
        shutil.copytree(OUT / "sessions" / name, target / name)
    yield target


def run_pipeline(
    base: Settings, truth: dict, sessions: list[dict], name: str, assets: list, make: DeliveryMaker, perfect: bool
) -> Row:
    """The assets day by day over the chosen projects; each later session replayed before its day is
    ingested (with `perfect`, the labelled pieces written as memories on the days they were planted)."""
    row = Row(name)
    projects = {s["project"] for s in sessions}
    by_day = defaultdict(list)
    for session in sessions:
        by_day[session["day"]].append(session)
    with tempfile.TemporaryDirectory(prefix="needs-") as tmp, corpus_copy(Path(tmp), projects) as folder:
        settings = isolated_settings(base, Path(tmp), sessions_dir=folder)
        days = sorted({found.partition for found in scan_sessions(settings.sessions_dir)[0]})
        with make_client(settings) as es:
            delete_days(es, PIPELINE_INDICES, days)
        begin = time.perf_counter()
        done: list[str] = []
        marked: set[str] = set()
        with open_search(settings) as search, make_client(settings) as es:
            deliver = make(search, settings)
            for day in days:
                if perfect:
                    mark_replaced(es, truth, projects, day, marked)
                for session in by_day.get(day, []):
                    row.scored.append(score(replay(session, deliver), truth["projects"][session["project"]]))
                done.append(day)
                if perfect:
                    perfect_memories(es, truth, projects, [day])
                run_day(name, assets, settings, day, done)
                if len(done) % 10 == 0:
                    print(f"  {name}: {day} done ({len(done)}/{len(days)})", flush=True)
        row.seconds = time.perf_counter() - begin
    return row


def run_history(base: Settings, truth: dict, sessions: list[dict], makers: dict[str, DeliveryMaker]) -> list[Row]:
    """The LLM-free and the ceiling rows of each delivery of `makers` (keyed by what its rows' names end in)
    over one ingestion of the chosen projects: the history through the recall assets in one range run, each
    later session replayed against the store as of its day (`AsOf`); then every labelled piece written as a
    perfect memory, a second run embeds them, and each session is replayed again, a replaced piece marked
    superseded once its successor was planted before the session. A row's seconds are its replays' own."""
    projects = {s["project"] for s in sessions}
    ordered = sorted(sessions, key=lambda s: s["day"])
    free = {n: Row(f"llm-free{n}") for n in makers}
    ceiling = {n: Row(f"ceiling (perfect memories){n}") for n in makers}

    def replay_all(rows: dict[str, Row], search: object, settings: Settings, es: object = None) -> None:
        marked: set[str] = set()
        for session in ordered:
            if es is not None:  # the ceiling: a piece replaced before this session's day is marked so now
                mark_replaced(es, truth, projects, session["day"], marked)  # type: ignore[arg-type]
            for n, make in makers.items():
                begin = time.perf_counter()
                deliver = make(AsOf(search, before(session)), settings)  # type: ignore[arg-type]
                rows[n].scored.append(score(replay(session, deliver), truth["projects"][session["project"]]))
                rows[n].seconds += time.perf_counter() - begin

    with tempfile.TemporaryDirectory(prefix="needs-") as tmp, corpus_copy(Path(tmp), projects) as folder:
        settings = isolated_settings(base, Path(tmp), sessions_dir=folder)
        begin = time.perf_counter()
        # As a run without the chat model does it: with the memories the turns' own words compose to.
        days = recall_history(settings, LLM_FREE_RUN_ASSETS)
        print(f"  llm-free: {len(days)} days ingested in {time.perf_counter() - begin:.0f} s", flush=True)
        with open_search(settings) as search, make_client(settings) as es:
            replay_all(free, search, settings)
            # The ceiling's memories are the perfect ones alone.
            delete_matching(es, [SUMMARY_INDEX], {"term": {"model": OWN_WORDS}})
            perfect_memories(es, truth, projects, days)
            result = materialize(
                RECALL_ASSETS,
                resources=build_resources(settings),
                instance=instance_with_days(days),
                tags={RANGE_START: days[0], RANGE_END: days[-1]},
            )
            if not result.success:
                raise SystemExit("ceiling: the run that embeds the perfect memories failed")
            replay_all(ceiling, search, settings, es)
    return [*ceiling.values(), *free.values()]


def _share(part: float, whole: float) -> str:
    return f"{part / whole:.3f}" if whole else "-"


def figures(row: Row, baseline: Row | None) -> dict[str, str]:
    s = row.scored
    needs, met = sum(x.needs for x in s), sum(x.met for x in s)
    lines = sum(x.lines for x in s)
    ms = sorted(m for x in s for m in x.prompt_ms)
    p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))] if ms else 0.0
    coverage = met / needs if needs else 0.0
    base = baseline and sum(x.met for x in baseline.scored) / max(1, sum(x.needs for x in baseline.scored))
    return {
        "sessions": str(len(s)),
        "needs": str(needs),
        "coverage": f"{coverage:.3f}",
        "× baseline": f"{coverage / base:.2f}" if base else "-",
        "tokens a session": f"{statistics.mean(x.tokens for x in s):.0f}" if s else "-",
        "lines a session": f"{lines / len(s):.1f}" if s else "-",
        "unused lines": _share(sum(x.unused for x in s), lines),
        "stale": str(sum(x.stale for x in s)),
        "unsupported": str(sum(x.unsupported for x in s)),
        "ms a prompt p50 / p95": f"{statistics.median(ms):.0f} / {p95:.0f}" if ms else "-",
        "events timed out": str(sum(x.timed_out for x in s)),  # through the service: nothing in 5 s, as pi waits
    }


def by_kind(row: Row, truth: dict) -> list[str]:
    wanted: dict[str, int] = defaultdict(int)
    met: dict[str, int] = defaultdict(int)
    for x in row.scored:
        pieces = truth["projects"][x.session["project"]]
        for step in x.session["steps"]:
            for key in step["needs"]:
                kind = pieces[key]["kind"] + ("" if not pieces[key]["replaces"] else " (successor)")
                wanted[kind] += 1
                met[kind] += key not in x.missed
    return [_share(met[k], wanted[k]) for k in ("rule", "decision", "decision (successor)", "gotcha", "fact")]


def by_event(row: Row) -> list[str]:
    wanted: dict[str, int] = defaultdict(int)
    met: dict[str, int] = defaultdict(int)
    for x in row.scored:
        for step in x.session["steps"]:
            for key in step["needs"]:
                wanted[step["event"]] += 1
                met[step["event"]] += key not in x.missed
    return [_share(met[e], wanted[e]) for e in ("prompt", "file", "error")]


def _against(rows: list[Row]) -> str:
    """Each row's coverage as a share of the ceiling's through the same delivery (the acceptance asks 0.85 of
    it): a row named `…, endpoint` against `ceiling (perfect memories), endpoint`."""
    named = {r.name: r for r in rows}
    shares = []
    for row in rows:
        ceiling = named.get(ceiling_of(row.name, list(named)) or "")
        top = float(figures(ceiling, None)["coverage"]) if ceiling else 0.0
        if top and row is not ceiling:
            shares.append(f"{row.name} {float(figures(row, None)['coverage']) / top:.2f}")
    return (
        "Coverage as a share of the ceiling's (through the same delivery): " + ", ".join(shares) + "." if shares else ""
    )


def main(argv: list[str]) -> None:
    truth = labels()
    split = next(
        (a.split("=", 1)[1] for a in argv if a.startswith("--split=")), "all" if "--all" in argv else "held_out"
    )
    sessions = chosen(truth, split)
    scope = f"held out: {truth['held_out_project']}" if split == "held_out" else f"split: {split}"
    url = next((a.split("=", 1)[1] for a in argv if a.startswith("--service=")), None)
    named = next((a.split("=", 1)[1] for a in argv if a.startswith("--delivery=")), None)
    make = service(url) if url else delivery_named(named) if named else today
    delivery = (
        f"POST {url}/api/v1/recall"
        if url
        else f"`{named}`"
        if named
        else "today's (briefing at the first prompt, file recall on reads)"
    )
    makers = {"": make}
    served = ServedHere() if "--serve" in argv else None
    if served is not None:  # the endpoint's rows beside the others, over the same ingestion
        makers[", endpoint"] = served
        delivery += (
            "; rows marked endpoint: POST /api/v1/recall of the memory service (`needs_served.py`: the app "
            "`serve` runs, in this process on a free 127.0.0.1 port, its injection ledger deciding what a session "
            "was not given yet), every event an HTTP request"
        )
    base = load_settings()
    load_before = os.getloadavg()[0]  # the machine is shared: its load is part of the latency figures
    rows = [run_baseline(truth, sessions)]
    try:
        if url or "--day-by-day" in argv:  # the service reads the live store: only a day-by-day run is as of then
            for n, maker in makers.items():
                rows.append(
                    run_pipeline(base, truth, sessions, f"ceiling (perfect memories){n}", RECALL_ASSETS, maker, True)
                )
                rows.append(run_pipeline(base, truth, sessions, f"llm-free{n}", RECALL_ASSETS, maker, False))
        else:
            rows += run_history(base, truth, sessions, makers)
        if "--model" in argv:  # through the endpoint when it is served: the product's delivery, as the ceiling's row
            name, maker = ("embedded model, endpoint", served) if served is not None else ("embedded model", make)
            rows.append(run_pipeline(base, truth, sessions, name, LOCAL_MODEL, maker, False))
    finally:
        if served is not None:
            served.close()
    head = ["row", *figures(rows[0], None)]
    body = [[r.name, *figures(r, rows[0]).values()] for r in rows]
    kinds = [[r.name, *by_kind(r, truth)] for r in rows]
    events = [[r.name, *by_event(r)] for r in rows]
    pieces = sum(len(truth["projects"][p]) for p in {s["project"] for s in sessions})
    text = "\n\n".join(
        [
            f"Corpus `bench/corpus/needs` (labels `bench/labels/needs.json`), "
            f"{scope}: {len(sessions)} later "
            f"sessions, {sum(len(st['needs']) for s in sessions for st in s['steps'])} needs, {pieces} pieces of "
            f"knowledge. Delivery: {delivery}. Budget {BUDGET} tokens a session.",
            table(head, body),
            "Coverage by the kind of need, and by the step where it arises:",
            table(["row", "rule", "decision", "decision (successor)", "gotcha", "fact"], kinds),
            table(["row", "prompt", "file", "error"], events),
            _against(rows),
            "Seconds replaying (and, day by day, ingesting) the history: "
            + ", ".join(f"{r.name} {r.seconds:.0f}" for r in rows[1:])
            + "."
            + ("" if "--model" in argv else " The embedded model's row is not run here (`--model`: hours on 2 cores).")
            + f" Load average (1 min) {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end.",
        ]
    )
    dump = next((a.split("=", 1)[1] for a in argv if a.startswith("--dump=")), None)
    if dump:  # what each session was given beside what it needed, for a reader (outside the results file)
        given = {
            r.name: [
                {"session_id": x.session["session_id"], "steps": x.session["steps"], "missed": x.missed}
                | {"delivered": x.delivered}
                for x in r.scored
            ]
            for r in rows
        }
        Path(dump).write_text(json.dumps(given, indent=1))
        argv = [a for a in argv if not a.startswith("--dump=")]
    # Each split its own section: a tune run does not replace the held-out figures.
    section = "needs" if split == "held_out" else f"needs_{split}"
    write_section(section, " ".join(["uv run python -m bench needs", *argv]), text)
    print(table(head, body))
