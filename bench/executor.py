"""Which executor runs `memory_job` for local runs: one day of the sample sessions, through a real Dagster
instance (runs, event log, asset records), with the multiprocess executor (Dagster's default: a process per
step) and the in-process one, in the same run.

uv run python -m bench executor

The first run reads the day's turns with the LLM; the measured runs after it find every turn in the journal
and the ledger, so what they take is the pipeline's own work plus the executor's overhead, not the model's.
"""

from __future__ import annotations

import os
import shutil
import statistics
import time
from pathlib import Path

from dagster import DagsterInstance, execute_job, in_process_executor, multiprocess_executor, reconstructable

from bench.results_file import table, write_section
from memory_pipeline.definitions import build_definitions
from memory_pipeline.partitions import register_days
from memory_pipeline.settings import isolated_settings, load_settings
from testkit.ingest_helpers import cli_env

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / ".work" / "executor"
SAMPLE = ROOT / "data" / "sessions" / "--work-demo-app--"
DAY = "2026-11-29"
RUNS = 3


def multiprocess_job():  # noqa: ANN201 - reconstructed by Dagster in each step's process
    return build_definitions(load_settings(), multiprocess_executor).resolve_job_def("memory_job_multiprocess")


def in_process_job():  # noqa: ANN201
    return build_definitions(load_settings(), in_process_executor).resolve_job_def("memory_job_in_process")


def _run(instance: DagsterInstance, job) -> float:  # noqa: ANN001
    begin = time.perf_counter()
    with execute_job(reconstructable(job), instance, tags={"dagster/partition": DAY}) as result:
        assert result.success, f"{job.__name__} failed"
    return time.perf_counter() - begin


def main(flags: list[str]) -> None:
    shutil.rmtree(WORK, ignore_errors=True)
    settings = isolated_settings(load_settings(), WORK, sessions_dir=WORK / "sessions")
    shutil.copytree(SAMPLE, settings.sessions_dir / SAMPLE.name)
    os.environ.update(cli_env(settings))  # what the reconstructed job sees, in this process and in each step's
    (WORK / "dagster").mkdir(parents=True)
    with DagsterInstance.local_temp(str(WORK / "dagster")) as instance:
        register_days(instance, [DAY])
        first = _run(instance, in_process_job)  # reads the turns with the LLM once
        times = {job.__name__: [_run(instance, job) for _ in range(RUNS)] for job in (multiprocess_job, in_process_job)}
        steps = len(in_process_job().nodes_in_topological_order)
    multi, single = statistics.median(times["multiprocess_job"]), statistics.median(times["in_process_job"])
    rows = [
        ["multiprocess (a process per step)", f"{multi:.1f}", ", ".join(f"{t:.1f}" for t in times["multiprocess_job"])],
        ["in-process", f"{single:.1f}", ", ".join(f"{t:.1f}" for t in times["in_process_job"])],
    ]
    body = (
        f"`memory_job` for {DAY} (the sample sessions of data/sessions/{SAMPLE.name}: {steps} steps), through a "
        f"local Dagster instance; first run with the LLM {first:.0f} s, then {RUNS} runs per executor with every turn "
        "already read (journal and ledger), so the time is the pipeline's own work plus the executor's.\n\n"
        + table(["executor", "median s", "runs s"], rows)
        + f"\n\nIn-process is {multi / single:.1f}x faster; the difference is the step processes' start-up "
        f"({(multi - single) / steps:.1f} s a step). `memory_job` runs in-process.\n"
    )
    write_section("executor", "uv run python -m bench executor", body)
    print(body)
