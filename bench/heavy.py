"""A heavy history on one machine: six months of pi, Claude Code and Codex sessions with long tool outputs.

    uv run python -m bench heavy                # the history, the run without the chat model, a summarising sample
    uv run python -m bench heavy --sample=6     # turns in the summarising sample (default 4)
    uv run python -m bench heavy --first-briefing   # with the chat model: minutes until the last week is summarised

The history (testkit/corpora/heavy_corpus.py: at least 300 sessions, at least 150 MB, fixed seed) is built once
under bench/.work/heavy/history and reused. Measured, on the local Elasticsearch and embedding server:

- each stage on one core, in this process, over every file: the reader (parse) and the message rows with every
  text redacted (rows + redaction), MB/s and rows/s;
- `memory-pipeline backfill --no-llm` as a person runs it (a new process, its own state folder): the time until
  every day is indexed, observed and embedded (searchable), the time until the newest day is, the lines the
  person sees meanwhile (stderr, not a terminal: a plain line each), and each step's own time from the runs'
  Dagster records (index and embeddings: documents/s and texts/s);
- the summarising stage (the chat model) on a sample of the newest day's turns only: its turns/s, from which the
  time to the first useful briefing (the last seven days' turns) and to the whole history's summaries is
  computed, not measured.

The history's days (2021-01..06) are deleted from the shared indices before and after the run.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from datetime import date, timedelta
from pathlib import Path

from bench.baseline import load
from bench.results_file import table, write_section
from memory_pipeline.sessions.messages import session_messages
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.sessions.sources import parse_any
from memory_pipeline.settings import Settings, isolated_settings, load_settings
from memory_pipeline.stores.elasticsearch import delete_days, make_client
from memory_pipeline.stores.indices import OBSERVATION_INDEX, PIPELINE_INDICES, RAW_INDEX, SUMMARY_INDEX
from testkit.corpora.heavy_corpus import Heavy, build
from testkit.ingest_helpers import cli_env

WORK = Path(__file__).with_name(".work") / "heavy"
TARGET_MB_S = 10.0
BRIEFING_DAYS = 7


def stage_rates(heavy: Heavy) -> dict[str, dict[str, float]]:
    """Parse and rows + redaction on one core over every file of the history: bytes, rows and seconds."""
    totals: dict[str, Counter[str]] = defaultdict(Counter)
    redactor = Redactor()
    for agent, paths in heavy.files.items():
        for path in paths:
            begin = time.perf_counter()
            session = parse_any(path)
            parsed = time.perf_counter()
            rows, _ = session_messages(session, redactor, "x")
            done = time.perf_counter()
            for key in (agent, "all"):
                totals[key]["bytes"] += path.stat().st_size
                totals[key]["entries"] += len(rows)
                totals[key]["parse"] += parsed - begin
                totals[key]["rows"] += done - parsed
    return {k: dict(v) for k, v in totals.items()}


def _stream(pipe, lines: list[tuple[float, str]], began: float, echo) -> None:  # noqa: ANN001
    for line in iter(pipe.readline, ""):
        lines.append((time.perf_counter() - began, line.rstrip("\n")))
        echo(line.rstrip("\n"))


def backfill(settings: Settings) -> tuple[float, list[tuple[float, str]], list[tuple[float, str]], int]:
    """`memory-pipeline backfill --no-llm` in a new process: seconds, its stdout and stderr lines (each with the
    second it came), exit code."""
    env = cli_env(settings, PYTHONUNBUFFERED="1")
    argv = [sys.executable, "-m", "memory_pipeline", "backfill", "--no-llm"]
    began = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out: list[tuple[float, str]] = []
    err: list[tuple[float, str]] = []
    readers = [
        threading.Thread(target=_stream, args=(proc.stdout, out, began, lambda s: print(s, flush=True))),
        threading.Thread(target=_stream, args=(proc.stderr, err, began, lambda s: print(s, file=sys.stderr))),
    ]
    for reader in readers:
        reader.start()
    code = proc.wait()
    for reader in readers:
        reader.join()
    return time.perf_counter() - began, out, err, code


def step_times(settings: Settings) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Seconds of each step summed over the backfill's runs, and each asset's numeric metadata summed."""
    from dagster import DagsterEventType

    from memory_pipeline.instance import open_instance

    seconds: Counter[str] = Counter()
    meta: dict[str, Counter[str]] = defaultdict(Counter)
    with open_instance(settings) as instance:
        for run in instance.get_runs():
            for stat in instance.get_run_step_stats(run.run_id):
                if stat.start_time and stat.end_time:
                    seconds[stat.step_key] += stat.end_time - stat.start_time
            records = instance.get_records_for_run(run.run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION)
            seen: set[str] = set()
            for record in records.records:
                event = record.event_log_entry.dagster_event
                materialization = event.event_specific_data.materialization
                asset = materialization.asset_key.path[-1]
                if asset in seen:  # a range run reports the run's whole metadata once per day: count it once
                    continue
                seen.add(asset)
                for key, value in materialization.metadata.items():
                    if isinstance(value.value, int | float) and not isinstance(value.value, bool):
                        meta[asset][key] += value.value
    return dict(seconds), {k: dict(v) for k, v in meta.items()}


def searchable(settings: Settings, days: list[str]) -> tuple[int, int]:
    """(memory-raw documents, observations with a vector) of the history's days, as search sees them."""
    with make_client(settings, request_timeout=120) as client:
        client.indices.refresh(index=[RAW_INDEX, OBSERVATION_INDEX])
        raw = client.count(index=RAW_INDEX, query={"terms": {"partition": days}})["count"]
        vectors = client.count(
            index=OBSERVATION_INDEX,
            query={"bool": {"filter": [{"terms": {"partition": days}}, {"exists": {"field": "embed_hash"}}]}},
        )["count"]
    return raw, vectors


def days_of(heavy: Heavy) -> dict[Path, str]:
    """Each file's day (partition), as the pipeline reads it."""
    from memory_pipeline.sessions.discovery import agent_roots, scan_sessions

    roots = agent_roots(heavy.root / "sessions", heavy.root / "claude-projects", heavy.root / "codex-sessions")
    return {f.path: f.partition for f in scan_sessions(roots)[0]}


def turns_of(paths: list[Path], day: str) -> tuple[int, list]:
    """(active-path turns, what the chat model reads for each) of these files."""
    from memory_pipeline.sessions.messages import to_frame
    from memory_pipeline.sessions.turns import group_turns
    from memory_pipeline.summarize.frames import turn_jobs

    count, jobs = 0, []
    for path in paths:
        frame = to_frame(session_messages(parse_any(path), Redactor(), day)[0])
        grouped = group_turns(frame)
        count += grouped.height
        jobs += list(turn_jobs(grouped, frame).values())
    return count, jobs


def summarising_sample(settings: Settings, heavy: Heavy, size: int) -> dict[str, object]:
    """The summarising stage (extraction with the chat model, as `llm_ideas` runs it: gate, prompt, retry) on
    `size` turns of the newest day's sessions: turns, seconds, statuses, model; and the last week's turns."""
    from memory_pipeline.assets.summarize import LlmIdeasConfig
    from memory_pipeline.stores.llm import chat_client
    from memory_pipeline.summarize.extract import summarise_turns

    day_of = days_of(heavy)
    newest = date.fromisoformat(heavy.days[-1])
    week = {(newest - timedelta(days=d)).isoformat() for d in range(BRIEFING_DAYS)}
    week_turns, _ = turns_of([p for p, d in day_of.items() if d in week], "x")
    _, jobs = turns_of(sorted(p for p, d in day_of.items() if d == heavy.days[-1]), heavy.days[-1])
    jobs = jobs[:: max(1, len(jobs) // size)][:size]
    config = LlmIdeasConfig()
    with chat_client(settings, timeout=900) as client:
        model = client.model_id()
        context = client.context_size() or 4096
        begin = time.perf_counter()
        outcomes = summarise_turns(
            client, jobs, context_tokens=context, max_output_tokens=config.max_output_tokens, concurrency=1
        )
        seconds = time.perf_counter() - begin
    return {
        "turns": len(jobs),
        "seconds": seconds,
        "statuses": dict(Counter(o.status for o in outcomes)),
        "model": model,
        "load": load(),
        "week_turns": week_turns,
        "week_bytes": sum(p.stat().st_size for p, d in day_of.items() if d in week),
    }


def _reset(settings: Settings, days: list[str]) -> None:
    with make_client(settings, request_timeout=120) as client:
        delete_days(client, PIPELINE_INDICES, days)


def first_briefing(settings: Settings, heavy: Heavy) -> dict[str, object]:
    """`memory-pipeline backfill` with the chat model, as a person starts it on this history (a new process, the
    most recent days first): the seconds until the runs holding the newest seven days with sessions have ended,
    each run's end, and then the memories of those days in memory-summary by kind and priority; the backfill is
    stopped there (Ctrl-C, as a person would)."""
    env = cli_env(settings, PYTHONUNBUFFERED="1")
    week = set(sorted(heavy.days)[-BRIEFING_DAYS:])
    began = time.perf_counter()
    argv = [sys.executable, "-m", "memory_pipeline", "backfill"]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out: list[tuple[float, str]] = []
    err: list[tuple[float, str]] = []
    readers = [
        threading.Thread(target=_stream, args=(proc.stdout, out, began, lambda s: print(s, flush=True)), daemon=True),
        threading.Thread(target=_stream, args=(proc.stderr, err, began, lambda s: None), daemon=True),
    ]
    for reader in readers:
        reader.start()
    done: set[str] = set()
    while proc.poll() is None and not week <= done:
        time.sleep(1)
        for _, line in _run_ends(out):
            first, last = line.split(": run ")[0].strip().split("..")
            if line.rstrip().endswith("success"):
                done |= {d for d in heavy.days if first <= d <= last}
    seconds = time.perf_counter() - began
    ends = _run_ends(out)
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
    with make_client(settings, request_timeout=120) as client:
        client.indices.refresh(index=SUMMARY_INDEX)
        answer = client.search(
            index=SUMMARY_INDEX,
            size=0,
            query={"terms": {"partition": sorted(week)}},
            aggs={"kind": {"terms": {"field": "kind"}}, "priority": {"terms": {"field": "priority"}}},
        )
    return {
        "seconds": seconds,
        "complete": week <= done,
        "week": sorted(week),
        "runs": [(round(second, 1), line) for second, line in ends],
        "memories": answer["hits"]["total"]["value"],
        "kinds": {b["key"]: b["doc_count"] for b in answer["aggregations"]["kind"]["buckets"]},
        "priorities": {b["key"]: b["doc_count"] for b in answer["aggregations"]["priority"]["buckets"]},
        "load": load(),
    }


def _from_nothing(heavy: Heavy) -> Settings:
    """Settings that read only this history, in a new state folder, its days deleted from the shared indices."""
    settings = isolated_settings(
        load_settings(),
        WORK,
        sessions_dir=heavy.root / "sessions",
        claude_projects_dir=heavy.root / "claude-projects",
        codex_sessions_dir=heavy.root / "codex-sessions",
    )
    shutil.rmtree(WORK / "state", ignore_errors=True)
    shutil.rmtree(WORK / "memory", ignore_errors=True)
    _reset(settings, heavy.days)
    return settings


def main_first_briefing(heavy: Heavy) -> None:
    """`--first-briefing`: the time until the last week's memories exist, with the chat model, from nothing."""
    settings = _from_nothing(heavy)
    load_before = load()
    found = first_briefing(settings, heavy)
    _reset(settings, heavy.days)
    shutil.rmtree(WORK / "state", ignore_errors=True)
    minutes = float(found["seconds"]) / 60  # type: ignore[arg-type]
    runs = "\n".join(f"{second:7.1f} s  {line}" for second, line in found["runs"])  # type: ignore[union-attr]
    body = (
        f"History as in section heavy ({heavy.sessions} sessions, {heavy.size / 2**20:.0f} MB, {len(heavy.days)} "
        f"days). `memory-pipeline backfill` with the chat model, from nothing (a new state folder, the history's "
        f"days deleted from the indices), as a person starts it: the most recent day alone, then the next 2, then "
        f"4 … Load average before: {load_before}; when the week was done: {found['load']}.\n\n"
        f"The newest {BRIEFING_DAYS} days with sessions ({found['week'][0]} .. {found['week'][-1]}) summarised "  # type: ignore[index]
        f"and searchable after **{found['seconds']:.0f} s = {minutes:.1f} min** "
        f"(target 15 min: {'met' if found['complete'] and minutes <= 15 else 'NOT met'}); then the backfill was "
        f"stopped. Their memories in memory-summary then: {found['memories']} (kinds {found['kinds']}, "
        f"priorities {found['priorities']}).\n\nEach run's end (seconds since the command started):\n\n"
        f"```\n{runs}\n```"
    )
    write_section("heavy (first briefing)", "uv run python -m bench heavy --first-briefing", body)
    print(body)


def main(flags: list[str]) -> None:
    if "--first-briefing" in flags:
        main_first_briefing(build(WORK / "history"))
        return
    sample = next((int(f.split("=", 1)[1]) for f in flags if f.startswith("--sample=")), 4)
    begin = time.perf_counter()
    heavy = build(WORK / "history")
    built = time.perf_counter() - begin
    size_mb = heavy.size / 2**20
    print(f"history: {heavy.sessions} sessions, {size_mb:.0f} MB, {len(heavy.days)} days ({built:.0f} s)", flush=True)

    load_stages = load()
    stages = stage_rates(heavy)
    print(f"stages on one core: {stages['all']}", flush=True)

    settings = _from_nothing(heavy)
    load_run = load()
    seconds, out, err, code = backfill(settings)
    load_after = load()
    assert code == 0, f"backfill failed ({code}): {err[-5:]}"
    raw_docs, vectors = searchable(settings, heavy.days)
    steps, meta = step_times(settings)

    llm = summarising_sample(settings, heavy, sample)
    _reset(settings, heavy.days)
    shutil.rmtree(WORK / "state", ignore_errors=True)

    write(heavy, stages, load_stages, seconds, out, err, (load_run, load_after), (raw_docs, vectors), steps, meta, llm)


def _run_ends(out: list[tuple[float, str]]) -> list[tuple[float, str]]:
    """When each run ended (newest day alone, then 2, 4, 8… days), and its line."""
    return [(second, line) for second, line in out if ": run " in line]


def write(  # noqa: PLR0913
    heavy: Heavy,
    stages: dict[str, dict[str, float]],
    load_stages: str,
    seconds: float,
    out: list[tuple[float, str]],
    err: list[tuple[float, str]],
    loads: tuple[str, str],
    counts: tuple[int, int],
    steps: dict[str, float],
    meta: dict[str, dict[str, float]],
    llm: dict[str, object],
) -> None:
    size_mb = heavy.size / 2**20
    mb_s = size_mb / seconds
    stage_rows = []
    for key in ("pi", "claude-code", "codex", "all"):
        t = stages[key]
        stage_rows.append(
            [
                key,
                f"{t['bytes'] / 2**20:.0f}",
                f"{t['entries']:,.0f}",
                f"{t['bytes'] / 2**20 / t['parse']:.1f} MB/s",
                f"{t['bytes'] / 2**20 / t['rows']:.1f} MB/s, {t['entries'] / t['rows']:,.0f} rows/s",
                f"{t['bytes'] / 2**20 / (t['parse'] + t['rows']):.1f} MB/s",
            ]
        )
    messages = meta.get("raw_messages", {}).get("messages", 0)
    documents = meta.get("memory_raw_index", {}).get("documents", 0)
    observations = meta.get("turn_observations", {}).get("observations", 0)
    embedded = meta.get("embeddings", {}).get("embedded", 0)
    turns = meta.get("turns", {}).get("turns", 0)
    per_step = {
        "session_files": "scan, fingerprints, manifest",
        "raw_messages": f"parse + rows + redaction, 2 processes: {messages:,.0f} rows",
        "turns": f"{turns:,.0f} turns",
        "memory_raw_index": f"bulk index + checks: {documents:,.0f} documents",
        "turn_observations": f"{observations:,.0f} observations",
        "memory_observations_index": "observations indexed + check",
        "embeddings": f"{embedded:,.0f} texts embedded",
        "es_dense_vector": "vectors written + checks",
    }
    step_rows = []
    for step, what in per_step.items():
        s = steps.get(step, 0.0)
        count = {"raw_messages": messages, "memory_raw_index": documents, "embeddings": embedded}.get(step)
        rate = f"{count / s:,.0f}/s" if count and s else ""
        step_rows.append([step, what, f"{s:.1f}", f"{size_mb / s:.1f}" if s else "", rate])
    other = seconds - sum(steps.get(s, 0.0) for s in per_step)
    step_rows.append(["(the rest)", "process start, plan, Dagster runs' own work", f"{other:.1f}", "", ""])
    ends = _run_ends(out)
    first_second, first_line = ends[0] if ends else (float("nan"), "")
    # The newest day alone, then 2 and 4 days: the first three runs are the last seven days (when they all
    # hold sessions; else the run that reaches past them).
    week_second = ends[min(2, len(ends) - 1)][0] if ends else float("nan")

    per_turn = float(llm["seconds"]) / max(1, int(llm["turns"]))  # type: ignore[arg-type]
    week_turns, week_bytes = int(llm["week_turns"]), int(llm["week_bytes"])  # type: ignore[call-overload]
    briefing_s = week_second + week_turns * per_turn
    full_s = turns * per_turn
    seen = [f"{s:6.1f} s  {line}" for s, line in sorted(out + err)]
    shown = seen if len(seen) <= 40 else [*seen[:25], f"… {len(seen) - 35} lines …", *seen[-10:]]
    agents = ", ".join(
        f"{agent} {len(paths)} sessions ({heavy.bytes_by_agent[agent] / 2**20:.0f} MB)"
        for agent, paths in heavy.files.items()
    )
    body = "\n\n".join(
        [
            f"History (testkit/corpora/heavy_corpus.py, seed 47): {heavy.sessions} sessions, **{size_mb:.0f} MB**, "
            f"{len(heavy.days)} days from {heavy.days[0]} to {heavy.days[-1]}: {agents}; the real fixtures' "
            "and bench corpora's sessions under new ids and days, tool results grown with real code and config, "
            "logs, listings and JSON (up to 200,000 characters each).",
            f"**Without the chat model** (`memory-pipeline backfill --no-llm`, a new process, load before "
            f"{loads[0]}, after {loads[1]}): every day searchable after **{seconds:.0f} s = {mb_s:.2f} MB/s end "
            f"to end** (target {TARGET_MB_S:.0f} MB/s: {'met' if mb_s >= TARGET_MB_S else 'NOT met'}); "
            f"{counts[0]:,} memory-raw documents and {counts[1]:,} observations with a vector in Elasticsearch "
            f"after it. The newest day was searchable after {first_second:.0f} s (`{first_line.strip()}`), the last "
            f"{BRIEFING_DAYS} days after {week_second:.0f} s.",
            "Each step, summed over the backfill's runs (Dagster's step records); MB/s of the whole history:",
            table(["step", "what", "seconds", "MB/s", "items/s"], step_rows),
            f"The pure stages on one core in the benchmark's process, every file (load {load_stages}):",
            table(["agent", "MB", "rows", "parse", "rows + redaction", "both"], stage_rows),
            "What the person sees meanwhile (stdout and stderr of the command, not a terminal, so a plain line "
            "each; seconds since it started):",
            "```\n" + "\n".join(shown) + "\n```",
            f"**With the chat model** ({llm['model']}, load {llm['load']}): the summarising stage (`summarise_turns`, "
            f"as `llm_ideas` calls it, gate included) on a sample of {llm['turns']} turns of the newest day, "
            f"{float(llm['seconds']):.0f} s: **{1 / per_turn:.3f} turns/s** ({llm['statuses']}). Computed from "
            f"that rate, not measured: the first useful briefing (the last {BRIEFING_DAYS} days: "
            f"{week_bytes / 2**20:.1f} MB, {week_turns:,} of the {turns:,.0f} turns) after about "
            f"**{briefing_s / 60:.0f} min** (the runs that made them searchable above, then their turns at that "
            "rate); the whole "
            f"history summarised after about **{full_s / 3600:.1f} h**.",
        ]
    )
    write_section("heavy", "uv run python -m bench heavy", body)
    print(body)


if __name__ == "__main__":
    main(sys.argv[1:])
    os._exit(0)
