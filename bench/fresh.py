"""Turn end → found by search, through the fast path: how long after pi's extension tells the service a turn
ended does `search` find that turn, on the embedded default (local Elasticsearch and embedding server).

uv run python -m bench fresh              # 50 turns
uv run python -m bench fresh --turns=100
uv run python -m bench fresh --with-llm-run [--turns=50 --seed-turns=20 --wait=1500]   # section `fresh_llm`

Then, over the memory those turns made, the command line's latency (section `cli`): `search` and `briefing` as
a person or a hook runs them, with the service up (the command asks it) and without (in-process), and `--help`;
each a new process, as in use.

Each turn is appended to a pi session file as pi writes it (a user message with a word found nowhere else, the
assistant's reply); a new session every ten turns, all in one project and day. The clock starts when the turn
is on disk and `POST /api/v1/ingest` is sent (what the extension does at `turn_end`) and stops when
`GET /api/v1/search` for that word returns the turn. No chat model is involved: the fast path runs the
LLM-free assets. The batch path's figure beside it is what the sensor waits by design before its run starts
(debounce plus tick), with the same run after it.

With `--with-llm-run` (its own section, `fresh_llm`: it takes as long as the chat model takes, so the quick
figure above stays quick), the same turns are measured while the day's LLM run is going: the day is seeded
first with earlier sessions (`--seed-turns`, each a turn the turn gate sends to the model), then `memory-pipeline
backfill` of that day with the chat model is started, as the sensor's run would be (the service's Dagster
instance); measuring begins once it reads turns (`llm_ideas` holds the day's `llm` lock and has let the
LLM-free one go). The section counts how many measured turns fell inside `llm_ideas`' step window (its events),
says whether the run finished (or was stopped with Ctrl-C after `--wait` seconds past the measurement), checks
that nothing was written twice, and records the load average.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx

from bench.results_file import table, write_section
from memory_pipeline.resources import SessionsResource
from memory_pipeline.settings import isolated_settings, load_settings
from testkit.ingest_helpers import cli_env

WORK = Path(__file__).with_name(".work") / "fresh"
PROJECT = "/work/fresh-bench"
SENSOR_TICK = 30  # the sensor's minimum interval (sensors.py)


def _entry(kind: str, parent: str | None, **fields: object) -> tuple[str, str]:
    entry_id = uuid.uuid4().hex[:8]
    now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return entry_id, json.dumps({"type": kind, "id": entry_id, "parentId": parent, "timestamp": now, **fields})


def _write_turn(path: Path, parent: str | None, asked: str, answered: str) -> str:
    """Append one turn (the user's message, the assistant's reply) to the session file; the last entry id."""
    stamp = int(time.time() * 1000)
    user_id, user = _entry(
        "message", parent, message={"role": "user", "content": [{"type": "text", "text": asked}], "timestamp": stamp}
    )
    reply = {
        "role": "assistant",
        "content": [{"type": "text", "text": answered}],
        "model": "bench",
        "stopReason": "stop",
        "timestamp": stamp + 1,
    }
    reply_id, answer = _entry("message", user_id, message=reply)
    with path.open("a") as handle:
        handle.write(user + "\n" + answer + "\n")
    return reply_id


def _turn(path: Path, parent: str | None, word: str, index: int) -> str:
    asked = f"Turn {index}: why does the {word} job fail on the staging cluster?"
    return _write_turn(path, parent, asked, f"The {word} job fails because its queue name changed.")


@dataclass
class Found:
    """One measured turn: when it was posted (epoch seconds), how long until search found it, how long the day's
    LLM-free run took, and whether the day's LLM lock was held when it was posted and when it was found."""

    posted: float
    seconds: float
    run: float
    llm_held: bool = False


def _session(folder: Path) -> Path:
    """A new pi session file of the bench's project (its header), started now."""
    session = str(uuid.uuid4())
    path = folder / f"{session}.jsonl"
    now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    path.write_text(
        json.dumps({"type": "session", "version": 3, "id": session, "timestamp": now, "cwd": PROJECT}) + "\n"
    )
    return path


def _measure(
    http: httpx.Client, base: str, token: dict[str, str], folder: Path, turns: int, held: Callable[[], bool] = bool
) -> list[Found]:
    """Append `turns` turns (a new session every ten), post each as the extension does at `turn_end` and wait
    until search finds it; `held` says whether the day's LLM lock is held (checked at post and at found)."""
    measured: list[Found] = []
    path, parent = folder / "none.jsonl", None
    for index in range(turns):
        if index % 10 == 0:
            path, parent = _session(folder), None
        word = f"zq{uuid.uuid4().hex[:10]}"
        parent = _turn(path, parent, word, index)
        posted, began, before = time.time(), time.perf_counter(), held()
        accepted = http.post(f"{base}/api/v1/ingest", json={"session_file": str(path)}, headers=token)
        accepted.raise_for_status()
        while True:
            found = http.get(f"{base}/api/v1/search", params={"q": word, "project": PROJECT, "k": 3}).json()
            if any(word in m["summary"] for m in found["data"]):
                break
            if time.perf_counter() - began > 300:
                raise RuntimeError(f"turn {index} not found in 300 s: {http.get(f'{base}/api/v1/ingest').text}")
            time.sleep(0.1)
        seconds = time.perf_counter() - began
        days = http.get(f"{base}/api/v1/ingest").json()
        measured.append(Found(posted, seconds, max(d["seconds"] or 0 for d in days), before and held()))
        print(f"turn {index}: found after {seconds:.1f} s", flush=True)
    return measured


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(0.95 * len(ordered)) - 1)]


def main(flags: list[str]) -> None:
    turns = next((int(f.split("=", 1)[1]) for f in flags if f.startswith("--turns=")), 50)
    if "--with-llm-run" in flags:
        _with_llm_run(turns, flags)
        return
    from testkit.servers import memory_service

    shutil.rmtree(WORK, ignore_errors=True)
    settings = isolated_settings(load_settings(), WORK, sessions_dir=WORK / "sessions")
    folder = settings.sessions_dir / "--work-fresh-bench--"
    folder.mkdir(parents=True)
    token = {"X-Memory-Token": settings.service_token()}
    with memory_service(settings) as base, httpx.Client(timeout=30) as http:
        measured = _measure(http, base, token, folder, turns)
        _cli_latency(settings, base)
    seconds, runs = [m.seconds for m in measured], [m.run for m in measured]
    p50, p95 = statistics.median(seconds), _p95(seconds)
    debounce = SessionsResource.model_fields["debounce_seconds"].default
    rows = [
        ["fast path (turn end → found by search)", f"{p50:.1f}", f"{p95:.1f}", f"{max(seconds):.1f}"],
        ["of which the day's LLM-free run", f"{statistics.median(runs):.1f}", "", ""],
        ["batch path, before its run starts (sensor debounce + tick, by design)", f"{debounce}", "", ""],
        ["batch path, floor (the wait above + the same run)", f"{debounce + statistics.median(runs):.1f}", "",
         f"{debounce + SENSOR_TICK + max(runs):.1f}"],
    ]  # fmt: skip
    text = (
        f"{turns} turns appended to pi session files (10 per session, one project and day), each posted to "
        "`POST /api/v1/ingest` as the extension does at `turn_end`, then searched for a word only it holds, on the "
        "embedded default (no chat model: the fast path runs the LLM-free assets). Seconds.\n\n"
        + table(["path", "p50 s", "p95 s", "max s"], rows)
        + "\n\nGoal: p95 < 15 s. The batch path's LLM run (about 10 s a turn here) comes after its wait in any case;"
        " the fast path does not wait for it."
    )
    write_section("fresh", f"uv run python -m bench fresh --turns={turns}", text)
    print(text)


def _timed(argv: list[str], env: dict[str, str], times: int) -> tuple[float, float]:
    took = []
    for _ in range(times):
        began = time.perf_counter()
        subprocess.run(argv, env=env, capture_output=True, check=True, timeout=300)
        took.append(time.perf_counter() - began)
    took.sort()
    return statistics.median(took), took[max(0, int(0.95 * len(took)) - 1)]


def _cli_latency(settings, base: str) -> None:  # noqa: ANN001
    from testkit.servers import free_port

    cli = [sys.executable, "-m", "memory_pipeline"]
    up = cli_env(settings, MEMORY_SERVICE_URL=base)
    down = cli_env(settings, MEMORY_SERVICE_URL=f"http://127.0.0.1:{free_port()}")
    search = [*cli, "search", "why does the job fail on staging", "--project", PROJECT]
    briefing = [*cli, "briefing", "fix the staging job", "--project", PROJECT]
    rows = []
    for name, argv in (("search", search), ("briefing", briefing)):
        fast, slow = _timed(argv, up, 20), _timed(argv, down, 5)
        rows.append([f"`{name}`, service up", f"{fast[0]:.2f}", f"{fast[1]:.2f}"])
        rows.append([f"`{name}`, in-process (no service)", f"{slow[0]:.2f}", f"{slow[1]:.2f}"])
    shown = _timed([*cli, "--help"], up, 20)
    rows.append(["`--help`", f"{shown[0]:.2f}", f"{shown[1]:.2f}"])
    text = (
        "Each a new `python -m memory_pipeline` process over the memory the `fresh` run made (50 turns), as a "
        "person or a hook runs it; `search` and `briefing` ask the running service when it serves the same memory "
        "(its /health names it), else search in-process. Seconds, 20 runs each (5 in-process).\n\n"
        + table(["command", "p50 s", "p95 s"], rows)
        + "\n\nGoals: `search` and `briefing` < 1 s with the service up; `--help` < 0.5 s."
    )
    write_section("cli", "uv run python -m bench fresh", text)
    print(text)


# With the day's LLM run going (`--with-llm-run`): section `fresh_llm`.
WORK_LLM = Path(__file__).with_name(".work") / "fresh-llm"


def _flag(flags: list[str], name: str, default: int) -> int:
    return next((int(f.split("=", 1)[1]) for f in flags if f.startswith(f"{name}=")), default)


def _seed(folder: Path, turns: int) -> list[Path]:
    """Earlier sessions of the day for its LLM run to read: `turns` turns, ten a session, each a rule the person
    states and a cause the assistant found (each its own words), so the turn gate sends every one to the chat
    model (checked here: a turn the gate skips would cost the model nothing and end the run early)."""
    from memory_pipeline.summarize.trust import TurnText
    from memory_pipeline.summarize.turn_gate import may_hold_knowledge

    paths: list[Path] = []
    parent: str | None = None
    for index in range(turns):
        if index % 10 == 0:
            paths.append(_session(folder))
            parent = None
        word = f"svc{uuid.uuid4().hex[:8]}"
        said = (
            f"From now on the {word} worker must read its queue name from `config/{word}.toml`, never from the "
            f"environment: we replaced the old `QUEUE_{index}` variable because deploys kept losing it."
        )
        answered = (
            f"Found the cause: the {word} worker failed because `QUEUE_{index}` was unset after the deploy. I moved "
            f"the name to `config/{word}.toml` and the worker's tests pass again."
        )
        if not may_hold_knowledge(TurnText(user=said, assistant=answered, other="")):
            raise RuntimeError(f"the turn gate would not send seed turn {index} to the model: {said}")
        parent = _write_turn(paths[-1], parent, said, answered)
    return paths


def _reading(llm_run: subprocess.Popen[bytes], locks: Path, day: str, log: Path) -> str:
    """Wait until the LLM run reads turns with the chat model (it holds the day's `llm` lock and has let the
    LLM-free one go: `llm_ideas` is waiting for the model); its run id (the lock's holder)."""
    from memory_pipeline.locks import LLM, day_held, lock_path

    deadline = time.monotonic() + 900
    while not (day_held(locks, day, LLM) and not day_held(locks, day)):
        if llm_run.poll() is not None:
            raise RuntimeError(f"the LLM run ended before reading: {log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            raise RuntimeError("the LLM run never reached its model's calls in 900 s")
        time.sleep(0.2)
    return lock_path(locks, day, LLM).read_text().split()[-1]


def _idle(http: httpx.Client, base: str) -> None:
    """Wait until the service's fast path has nothing queued or running (its last run done)."""
    for _ in range(600):
        if all(d["state"] in ("done", "failed") for d in http.get(f"{base}/api/v1/ingest").json()):
            return
        time.sleep(0.5)
    raise RuntimeError(f"the fast path never settled: {http.get(f'{base}/api/v1/ingest').text}")


def _counts(settings, sessions: list[str]) -> dict[str, int]:  # noqa: ANN001
    """Documents of the bench's sessions: raw messages, observations, summaries, distinct summaries (session,
    turn, text), ledger entries (turns the LLM run read)."""
    from memory_pipeline.stores.elasticsearch import make_client
    from memory_pipeline.stores.indices import LEDGER_INDEX, OBSERVATION_INDEX, RAW_INDEX, SUMMARY_INDEX

    mine = {"terms": {"session_id": sessions}}
    with make_client(settings) as es:
        es.indices.refresh(index=[RAW_INDEX, OBSERVATION_INDEX, SUMMARY_INDEX, LEDGER_INDEX])
        counts = {
            name: es.count(index=index, query=mine)["count"]
            for name, index in (
                ("raw", RAW_INDEX), ("observations", OBSERVATION_INDEX), ("summaries", SUMMARY_INDEX),
                ("ledger", LEDGER_INDEX),
            )
        }  # fmt: skip
        hits = es.search(index=SUMMARY_INDEX, query=mine, size=10_000, source=["session_id", "turn_id", "summary"])
    counts["distinct_summaries"] = len(
        {(h["_source"]["session_id"], h["_source"]["turn_id"], h["_source"]["summary"]) for h in hits["hits"]["hits"]}
    )
    return counts


@dataclass
class LlmRun:
    """The day's LLM run as its Dagster events tell it."""

    run_id: str
    status: str
    ended: str  # "finished" or "cancelled after N s"
    started: float  # llm_ideas' STEP_START (epoch seconds)
    stopped: float | None  # its STEP_SUCCESS or STEP_FAILURE, None if it never ended
    metadata: dict[str, object]


def _llm_run(settings, run_id: str, ended: str) -> LlmRun:  # noqa: ANN001
    from dagster import DagsterEventType

    from testkit.ingest_helpers import stored_instance

    with stored_instance(settings, settings.memory_pipeline_state_dir / "dagster") as instance:
        record = instance.get_run_by_id(run_id)
        logs = instance.all_logs(run_id)
        steps = [e for e in logs if e.dagster_event is not None and e.dagster_event.step_key == "llm_ideas"]
        starts = [e.timestamp for e in steps if e.dagster_event.event_type == DagsterEventType.STEP_START]
        ends = [
            e.timestamp
            for e in steps
            if e.dagster_event.event_type in (DagsterEventType.STEP_SUCCESS, DagsterEventType.STEP_FAILURE)
        ]
        metadata: dict[str, object] = {}
        for event in steps:
            if event.dagster_event.event_type == DagsterEventType.ASSET_MATERIALIZATION:
                found = event.dagster_event.event_specific_data.materialization.metadata
                metadata = {k: getattr(v, "value", v) for k, v in found.items()}
    return LlmRun(
        run_id, record.status.value if record else "unknown", ended, min(starts), max(ends) if ends else None, metadata
    )


def _with_llm_run(turns: int, flags: list[str]) -> None:
    """Turn end → found by search while the day's LLM run (`memory-pipeline backfill` of that day with the chat
    model, in the service's Dagster instance, as the sensor's runs are) reads the day's earlier turns."""
    import contextlib
    import os
    import signal

    from memory_pipeline.locks import LLM, day_held
    from testkit.servers import memory_service

    seeded, wait = _flag(flags, "--seed-turns", 60), _flag(flags, "--wait", 1200)
    shutil.rmtree(WORK_LLM, ignore_errors=True)
    settings = isolated_settings(load_settings(), WORK_LLM, sessions_dir=WORK_LLM / "sessions")
    folder = settings.sessions_dir / "--work-fresh-bench--"
    folder.mkdir(parents=True)
    _seed(folder, seeded)
    day, locks = datetime.now(UTC).date().isoformat(), settings.memory_pipeline_state_dir / "locks"
    token = {"X-Memory-Token": settings.service_token()}
    load = {"before": os.getloadavg()}
    log, out = WORK_LLM / "llm-run.log", WORK_LLM / "llm-run.json"
    backfill = [sys.executable, "-m", "memory_pipeline", "backfill", "--start", day, "--end", day, "--json"]
    with memory_service(settings) as base, httpx.Client(timeout=30) as http:
        with log.open("w") as stderr, out.open("w") as stdout:
            llm_run = subprocess.Popen(
                backfill, env=cli_env(settings), stdout=stdout, stderr=stderr, start_new_session=True
            )
        try:
            run_id = _reading(llm_run, locks, day, log)
            print(f"LLM run {run_id} is reading turns; measuring", flush=True)
            measured = _measure(http, base, token, folder, turns, lambda: day_held(locks, day, LLM))
            load["at the end of the measurement"] = os.getloadavg()
            _idle(http, base)
            sessions = [p.stem for p in folder.glob("*.jsonl")]
            during = _counts(settings, sessions)
            print(f"measured; waiting up to {wait} s for the LLM run", flush=True)
            try:
                llm_run.wait(timeout=wait)
                ended = "finished"
            except subprocess.TimeoutExpired:
                # Stopped as a person stops it (Ctrl-C): Dagster ends the run and records it; the turns read so
                # far are journaled, the rest are read by the day's next LLM run.
                os.killpg(llm_run.pid, signal.SIGINT)
                ended = f"cancelled (SIGINT, as Ctrl-C) after waiting {wait} s past the measurement"
                with contextlib.suppress(subprocess.TimeoutExpired):
                    llm_run.wait(180)  # else SIGTERM below
        finally:
            if llm_run.poll() is None:
                os.killpg(llm_run.pid, signal.SIGTERM)
                llm_run.wait(120)
        _idle(http, base)
    load["after the LLM run"] = os.getloadavg()
    after = _counts(settings, sessions)
    run = _llm_run(settings, run_id, ended)
    print(log.read_text()[-2000:] if llm_run.returncode else "", flush=True)
    _write_llm_section(turns, seeded, measured, run, llm_run.returncode, during, after, load)


def _write_llm_section(
    turns: int,
    seeded: int,
    measured: list[Found],
    run: LlmRun,
    returncode: int,
    during: dict[str, int],
    after: dict[str, int],
    load: dict[str, tuple[float, float, float]],
) -> None:
    seconds, runs = [m.seconds for m in measured], [m.run for m in measured]
    stopped = run.stopped or time.time()
    inside = sum(run.started <= m.posted and m.posted + m.seconds <= stopped for m in measured)
    held = sum(m.llm_held for m in measured)
    first, last = measured[0].posted, measured[-1].posted + measured[-1].seconds
    rows = [
        ["turn end → found by search, the day's LLM run going", f"{statistics.median(seconds):.1f}",
         f"{_p95(seconds):.1f}", f"{max(seconds):.1f}"],
        ["of which the day's LLM-free run", f"{statistics.median(runs):.1f}", f"{_p95(runs):.1f}", f"{max(runs):.1f}"],
    ]  # fmt: skip
    md = run.metadata
    expected_raw = 2 * (seeded + turns)
    duplicates = [
        f"raw messages {after['raw']} (expected {expected_raw}: 2 a turn)",
        f"observations {during['observations']} at the end of the measurement, {after['observations']} after the run",
        f"summaries {after['summaries']} ({after['distinct_summaries']} distinct by session, turn and text)",
        f"ledger entries {after['ledger']} (turns the LLM run recorded)",
    ]
    clean = (
        after["raw"] == expected_raw
        and after["observations"] == during["observations"]
        and after["summaries"] == after["distinct_summaries"]
    )
    loads = "; ".join(f"{when} {a:.2f} / {b:.2f} / {c:.2f}" for when, (a, b, c) in load.items())
    text = (
        f"{turns} turns appended to pi session files and posted to `POST /api/v1/ingest` as in `fresh`, on a day "
        f"seeded first with {seeded} earlier turns ({(seeded + 9) // 10} sessions, each turn a rule stated and a cause "
        "found, all passing the turn gate) and, while the turns are posted, that day's LLM run: `memory-pipeline "
        "backfill --start DAY --end DAY --json`, the whole job with the chat model (the 0.5B on CPU), in the "
        "service's Dagster instance as a sensor's run is. Measuring begins once the run reads turns (it holds the "
        "day's `llm` lock and has let the LLM-free lock go). Seconds.\n\n"
        + table(["path", "p50 s", "p95 s", "max s"], rows)
        + f"\n\n- Measured turns posted and found inside the LLM run's `llm_ideas` step (its STEP_START to its "
        f"{'STEP_SUCCESS/FAILURE' if run.stopped else 'cancellation'} in the run's events): **{inside} of {turns}**;"
        f" with the day's `llm` lock held when posted and when found: {held} of {turns}. `llm_ideas` ran "
        f"{stopped - run.started:.0f} s, from {first - run.started:.0f} s before the first measured turn to "
        f"{stopped - last:.0f} s after the last was found.\n"
        f"- The LLM run ({run.run_id[:8]}): {run.ended}, exit code {returncode}, Dagster status {run.status}; "
        f"`llm_ideas` attempted {md.get('attempted', '?')} turns, {md.get('llm_calls', '?')} model calls, "
        f"{md.get('summarised', '?')} summarised, {md.get('not_read_by_model', '?')} not read by the model, "
        f"{md.get('failed', '?')} failed.\n"
        f"- Duplicates after it ({'none' if clean else 'FOUND'}): " + "; ".join(duplicates) + ".\n"
        f"- Load average (1 / 5 / 15 min): {loads}. The 2 cores are shared with other sessions' work (tests, "
        "benches, the same chat model serving them) while this ran: the load is theirs too.\n\n"
        "Goal (issue 46): p95 < 15 s while an LLM run of the same day is going."
    )
    write_section(
        "fresh_llm", f"uv run python -m bench fresh --with-llm-run --turns={turns} --seed-turns={seeded}", text
    )
    print(text)
