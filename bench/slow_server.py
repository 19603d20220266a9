"""Summarising on a slow machine (`python -m bench slow_server`): days of the rough corpus through the whole job,
with the chat server behind a proxy that slows it to a busy 2-core machine's pace (issue 31: 8-16 prompt
tokens a second, under 2 of answer).

    uv run python -m bench slow_server                     # the rough corpus's one-turn days (about 10 minutes)
    uv run python -m bench slow_server --day=2026-03-10    # its big day (20 turns: an hour or more)

The proxy forwards every request to the real local chat server and holds each chat answer until
`prompt tokens / PROMPT_PER_SECOND + answer tokens / ANSWER_PER_SECOND` seconds have passed; it adds the local
servers' key itself. The run's shortest read timeout (LLAMA_TIMEOUT) is set to `FLOOR` seconds, below what
one slowed request takes, as a fixed 300 s was below what a 6k-token prompt took on that machine: the
client must find the time from the request's size and the pace it measures. Passes when every run
succeeds and every turn is read or listed for retry with its reason.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
from dagster import instance_for_test

from bench.results_file import table, write_section
from memory_pipeline.backfill import day_ranges, plan_backfill, run_backfill
from memory_pipeline.definitions import build_definitions
from memory_pipeline.partitions import ordered_days
from memory_pipeline.settings import Settings, isolated_settings, load_settings
from memory_pipeline.stores.elasticsearch import delete_days, make_client
from memory_pipeline.stores.indices import PIPELINE_INDICES

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "bench" / "corpus" / "rough" / "sessions"
WORK = ROOT / "bench" / ".work" / "slow_server"
SMALL_DAYS = ["2019-05-02", "9999-12-31"]
PROMPT_PER_SECOND = 12.0
ANSWER_PER_SECOND = 1.8
FLOOR = 30.0
RUN_CONFIG = {"ops": {"llm_ideas": {"config": {"context_tokens": 2048, "max_output_tokens": 384}}}}


class SlowProxy:
    """An HTTP proxy on 127.0.0.1 in front of `upstream` that paces chat answers; it logs each one."""

    def __init__(self, upstream: str, api_key: str | None) -> None:
        self.upstream, self.api_key = upstream.rstrip("/"), api_key
        self.answers: list[dict[str, float]] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _forward(self, method: str) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) if method == "POST" else None
                headers = {"Content-Type": "application/json"}
                if proxy.api_key:
                    headers["Authorization"] = f"Bearer {proxy.api_key}"
                begin = time.perf_counter()
                answer = httpx.request(method, proxy.upstream + self.path, content=body, headers=headers, timeout=None)
                if self.path.startswith("/v1/chat/completions") and answer.status_code == 200:
                    usage = answer.json().get("usage") or {}
                    due = (
                        usage.get("prompt_tokens", 0) / PROMPT_PER_SECOND
                        + usage.get("completion_tokens", 0) / ANSWER_PER_SECOND
                    )
                    time.sleep(max(0.0, due - (time.perf_counter() - begin)))
                    proxy.answers.append(
                        {
                            "prompt_tokens": usage.get("prompt_tokens", 0),
                            "completion_tokens": usage.get("completion_tokens", 0),
                            "seconds": time.perf_counter() - begin,
                        }
                    )
                self.send_response(answer.status_code)
                self.send_header("Content-Type", answer.headers.get("content-type", "application/json"))
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                try:
                    self.wfile.write(answer.content)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting: what a timeout looks like from here

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                self._forward("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._forward("POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> SlowProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _copy_days(settings: Settings, days: list[str]) -> None:
    """The corpus's session files that start on `days` (by their names), into the work folder."""
    shutil.rmtree(WORK, ignore_errors=True)
    for path in CORPUS.rglob("*.jsonl"):
        if any(path.name.startswith(day) for day in days) and not path.is_symlink():
            target = settings.sessions_dir / path.relative_to(CORPUS)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)


def main(flags: list[str]) -> None:
    days = [f.split("=", 1)[1] for f in flags if f.startswith("--day=")] or SMALL_DAYS
    base = load_settings()
    with SlowProxy(base.chat_url, base.api_key("chat")) as proxy:
        settings = isolated_settings(base, WORK, llama_url=proxy.url, llama_timeout=FLOOR)
        _copy_days(settings, days)
        with make_client(settings) as es:
            delete_days(es, PIPELINE_INDICES, days)
        definitions = build_definitions(settings)
        begin = time.perf_counter()
        with instance_for_test() as instance:
            plan = plan_backfill(instance, settings.sessions_dir, everything=True)
            results = [
                run_backfill(instance, first, last, definitions, RUN_CONFIG, log_level="WARNING")
                for first, last in day_ranges(plan.todo, ordered_days(instance))
            ]
        wall = time.perf_counter() - begin
    ideas = [
        {k: v.value for k, v in ev.materialization.metadata.items()}
        for r in results
        for ev in r.get_asset_materialization_events()
        if ev.asset_key.path[-1] == "llm_ideas"
    ]
    turns = sum(m["turns"] for m in ideas)
    failed = sum(m["failed"] for m in ideas)
    outcomes = Counter({k: sum(m[k] for m in ideas) for k in ("summarised", "skipped_empty", "failed", "timed_out")})
    slowest = max((a["seconds"] for a in proxy.answers), default=0.0)
    answer_tokens = sum(a["completion_tokens"] for a in proxy.answers)
    answer_seconds = sum(a["seconds"] for a in proxy.answers)
    row = [
        ", ".join(plan.todo),
        f"{sum(r.success for r in results)}/{len(results)}",
        turns,
        outcomes["summarised"],
        outcomes["skipped_empty"],
        f"{failed} ({outcomes['timed_out']} timed out)",
        len(proxy.answers),
        f"{answer_tokens / answer_seconds:.2f}" if answer_seconds else "-",
        f"{slowest:.0f}",
        f"{wall:.0f}",
    ]
    listed = [str(f) for m in ideas for f in m["failures"]]
    body = (
        f"Days of the rough corpus (`bench/corpus/rough`) through `memory_job`, the chat server behind a proxy "
        f"that holds each answer until {PROMPT_PER_SECOND:g} prompt and {ANSWER_PER_SECOND:g} answer tokens a "
        f"second have passed (issue 31's busy machine: 8-16 and under 2), with LLAMA_TIMEOUT={FLOOR:g} s, below "
        "the time one slowed answer takes. Done when every run succeeds and every turn is read or listed for "
        "retry.\n\n"
        + table(
            [
                "days",
                "runs succeeded",
                "turns",
                "summarised",
                "nothing to keep",
                "failed, listed for retry",
                "chat answers",
                "answer tokens per second waited",
                "slowest answer s",
                "wall s",
            ],
            [row],
        )
        + ("\n\nListed for retry: " + "; ".join(listed[:10]) if listed else "")
        + "\n"
    )
    command = "uv run python -m bench slow_server" + ("" if days == SMALL_DAYS else f" --day={days[0]}")
    write_section("slow_server", command, body)
    print(body)
    assert all(r.success for r in results), "a day failed on the slow server"
    assert outcomes["summarised"] + outcomes["skipped_empty"] + failed == turns
