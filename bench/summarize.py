"""Summarize figures: quality on hand-labelled turns, and throughput against the server's own time.

    uv run python -m bench summarize                          # the local chat server (LLAMA_URL if set)
    LLAMA_URL=http://big-box:8080 uv run python -m bench summarize   # any other server, same harness

Quality: bench/labels/summarize_turns.json lists real turns of the pi-mono fixture session, each marked
memorable (a rule, correction, decision or root cause) or not. The harness runs the pipeline's own
extraction (prompt, schema, validation, one retry) on each and counts how many memorable turns got at
least one idea and how many of the others were correctly left empty.

Throughput: the same turns, sequentially and with 2 in flight against a server started with 2 slots;
turns per second end to end next to the time the server itself reports (prompt + generation).
"""

from __future__ import annotations

import json
import shutil
import socket
import time
from pathlib import Path

import polars as pl

from bench.results_file import table, write_section
from memory_pipeline.local.runtime import LocalRuntime
from memory_pipeline.sessions.messages import session_messages, to_frame
from memory_pipeline.sessions.parse import parse_session
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.sessions.turns import group_turns
from memory_pipeline.settings import Settings, load_settings
from memory_pipeline.stores.llm import chat_client
from memory_pipeline.summarize.extract import TurnOutcome, summarise_turns
from memory_pipeline.summarize.frames import turn_jobs

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "memory_pipeline_tests" / "fixtures" / "pi-sessions"
LABELS = Path(__file__).with_name("labels") / "summarize_turns.json"
MAX_OUTPUT_TOKENS = 512


def labelled_jobs() -> tuple[list, list[dict]]:
    labels = json.loads(LABELS.read_text())["labels"]
    jobs = []
    for name in sorted({label["file"] for label in labels}):
        frame = to_frame(session_messages(parse_session(FIXTURES / name), Redactor(), "bench")[0])
        by_turn = {turn_id: job for (_, turn_id), job in turn_jobs(group_turns(frame), frame).items()}
        jobs += [by_turn[label["turn_id"]] for label in labels if label["file"] == name]
    return jobs, labels


def _run(settings: Settings, jobs: list, concurrency: int) -> tuple[list[TurnOutcome], float, str, int]:
    with chat_client(settings, timeout=600) as client:
        model = client.model_id()
        context = client.context_size() or 4096
        begin = time.perf_counter()
        outcomes = summarise_turns(
            client, jobs, context_tokens=context, max_output_tokens=MAX_OUTPUT_TOKENS, concurrency=concurrency
        )
        return outcomes, time.perf_counter() - begin, model, context


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main(argv: list[str]) -> None:
    settings = load_settings()
    jobs, labels = labelled_jobs()
    memorable = [label["memorable"] for label in labels]
    print(f"{len(jobs)} labelled turns ({sum(memorable)} memorable) against {settings.chat_url}", flush=True)
    sequential, seq_wall, model, context = _run(settings, jobs, concurrency=1)

    got_ideas = [bool(o.ideas) for o in sequential]
    hits = sum(1 for m, g in zip(memorable, got_ideas, strict=True) if m and g)
    correct_empty = sum(1 for m, o in zip(memorable, sequential, strict=True) if not m and o.status == "empty")
    failed = sum(o.status == "failed" for o in sequential)
    ideas = sum(len(o.ideas) for o in sequential)
    by_priority = pl.Series([i.priority.value for o in sequential for i in o.ideas], dtype=pl.String).value_counts()

    rows = []
    seq_server = sum(o.server_seconds for o in sequential)
    rows.append(
        [
            "sequential (1 slot, concurrency 1)",
            f"{len(jobs) / seq_wall:.3f}",
            f"{seq_wall:.0f}",
            f"{seq_server:.0f}",
            f"{(seq_wall - seq_server) / seq_wall:.1%}",
        ]
    )
    if settings.is_local("chat") and "--no-slots" not in argv:
        # The same turns against a private chat server started with 2 slots.
        work = ROOT / "bench" / ".work" / "slots"
        shutil.rmtree(work, ignore_errors=True)
        two = load_settings(
            memory_pipeline_state_dir=work,
            memory_pipeline_cache_dir=settings.memory_pipeline_cache_dir,
            local_es_port=_free_port(),
            local_llama_port=_free_port(),
            local_embed_port=_free_port(),
            local_llama_slots=2,
        )
        runtime = LocalRuntime(two, progress=lambda m: None)
        runtime.up(["chat"])
        try:
            parallel, par_wall, _, _ = _run(two, jobs, concurrency=2)
        finally:
            runtime.down()
            shutil.rmtree(work, ignore_errors=True)
        par_server = sum(o.server_seconds for o in parallel)
        # With 2 slots the server's own time overlaps: the ideal wall time is half its sum.
        rows.append(
            [
                "2 slots (concurrency 2)",
                f"{len(jobs) / par_wall:.3f}",
                f"{par_wall:.0f}",
                f"{par_server:.0f} (/2 = {par_server / 2:.0f})",
                f"{(par_wall - par_server / 2) / par_wall:.1%}",
            ]
        )

    body = "\n\n".join(
        [
            f"Model `{model}` at `{settings.chat_url}` (context {context} tokens per slot), prompt and schema of "
            f"`memory_pipeline/summarize`, temperature 0 then 0.3 on the one retry, "
            f"{MAX_OUTPUT_TOKENS} output tokens max.",
            f"Labelled set: {len(jobs)} real turns of `pi-mono-large-session.v1.jsonl` "
            f"(`bench/labels/summarize_turns.json`): {sum(memorable)} memorable, {len(jobs) - sum(memorable)} not.",
            table(
                ["quality", "result"],
                [
                    [
                        "memorable turns that got at least one idea",
                        f"{hits} / {sum(memorable)} ({hits / sum(memorable):.0%})",
                    ],
                    [
                        "other turns correctly left empty",
                        f"{correct_empty} / {len(jobs) - sum(memorable)} "
                        f"({correct_empty / (len(jobs) - sum(memorable)):.0%})",
                    ],
                    ["turns failed (invalid twice)", str(failed)],
                    ["ideas produced", f"{ideas} ({', '.join(f'{p}: {n}' for p, n in by_priority.iter_rows())})"],
                ],
            ),
            table(
                ["throughput", "turns/s end to end", "wall s", "server s (prompt + generation)", "pipeline overhead"],
                rows,
            ),
            "Overhead = the share of wall time not spent inside the server (prompt building, validation, HTTP); "
            "for 2 slots against half the server's summed time, the best a 2-slot server could do.",
        ]
    )
    write_section("summarize", "uv run python -m bench summarize", body)
    print(body)


if __name__ == "__main__":
    main([])
