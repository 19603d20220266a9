"""Every agent's reader, measured beside pi's in one run.

    uv run python -m bench sources

- Parse rate (MB/s, messages/s) of each source's reader over its fixtures (real files where the repository has
  them: `memory_pipeline_tests/fixtures/{pi-sessions,claude-code,codex,gemini-cli}`), each read REPEAT times
  in turn with the others so a noisy machine slows all of them alike; the ratio to pi's rate is the figure.
- The pipeline's ingest assets over all four agents' fixtures in their own folders, run twice: the second run
  (nothing changed) must make no Elasticsearch write.
"""

from __future__ import annotations

import shutil
import time
from collections import Counter
from pathlib import Path

from dagster import materialize

from bench.results_file import table, write_section
from memory_pipeline.assets import ingest
from memory_pipeline.partitions import RANGE_END, RANGE_START, instance_with_days
from memory_pipeline.resources import build_resources
from memory_pipeline.sessions.discovery import scan_sessions
from memory_pipeline.sessions.messages import session_messages
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.sessions.sources import parse_any
from memory_pipeline.settings import isolated_settings, load_settings
from memory_pipeline.stores.elasticsearch import delete_days, make_client
from memory_pipeline.stores.indices import PIPELINE_INDICES
from testkit.paths import ROOT

FIXTURES = ROOT / "memory_pipeline_tests" / "fixtures"
FOLDERS = {"pi": "pi-sessions", "claude-code": "claude-code", "codex": "codex", "gemini-cli": "gemini-cli"}
WORK = Path(__file__).with_name(".work") / "sources"
REPEAT = 5


def files_of(agent: str) -> list[Path]:
    folder = FIXTURES / FOLDERS[agent]
    return sorted(p for p in folder.rglob("*") if p.suffix in (".jsonl", ".json") and p.is_file())


def parse_rates(repeat: int = REPEAT) -> dict[str, dict[str, float]]:
    """Per agent: bytes, messages and seconds of reading its fixtures `repeat` times (agents interleaved)."""
    totals: dict[str, Counter[str]] = {agent: Counter() for agent in FOLDERS}
    redactor = Redactor()
    for _ in range(repeat):
        for agent in FOLDERS:
            for path in files_of(agent):
                begin = time.perf_counter()
                session = parse_any(path)
                read = time.perf_counter()
                rows, _ = session_messages(session, redactor, "x")
                totals[agent]["read_seconds"] += read - begin
                totals[agent]["seconds"] += time.perf_counter() - begin
                totals[agent]["bytes"] += path.stat().st_size
                totals[agent]["messages"] += len(rows)
    return {agent: dict(t) for agent, t in totals.items()}


def place_all(root: Path) -> dict[str, Path]:
    """Every agent's fixtures in its own folder of a scratch home, as `isolated_settings` names them."""
    targets = {
        "pi": root / "sessions",
        "claude-code": root / "claude-projects",
        "codex": root / "codex-sessions",
        "gemini-cli": root / "gemini-tmp",
    }
    for agent, target in targets.items():
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(FIXTURES / FOLDERS[agent], target, ignore=shutil.ignore_patterns("*.md"))
    return targets


def main(argv: list[str]) -> None:
    rates = parse_rates()
    shared = load_settings()
    place_all(WORK)
    settings = isolated_settings(shared, WORK)
    resources = build_resources(settings)
    found, _ = scan_sessions(resources["sessions"].roots)
    days = sorted({f.partition for f in found})

    def run() -> tuple[float, dict]:
        begin = time.perf_counter()
        result = materialize(
            [ingest.session_files, ingest.raw_messages, ingest.turns, ingest.memory_raw_index],
            resources=resources,
            instance=instance_with_days(days),
            tags={RANGE_START: days[0], RANGE_END: days[-1]},
        )
        seconds = time.perf_counter() - begin
        assert result.success
        meta = result.asset_materializations_for_node("memory_raw_index")[0].metadata
        return seconds, {k: v.value for k, v in meta.items()}

    with make_client(settings) as client:
        delete_days(client, PIPELINE_INDICES, days)
    shutil.rmtree(WORK / "state", ignore_errors=True)
    first_seconds, first = run()
    rerun_seconds, rerun = run()
    writes = rerun["written"] + rerun["deleted"] + rerun["manifest_writes"]
    with make_client(settings) as client:
        delete_days(client, PIPELINE_INDICES, days)
    shutil.rmtree(WORK, ignore_errors=True)

    pi = rates["pi"]
    pi_read, pi_rate = pi["bytes"] / pi["read_seconds"], pi["bytes"] / pi["seconds"]
    rows = []
    for agent, t in rates.items():
        read, rate = t["bytes"] / t["read_seconds"], t["bytes"] / t["seconds"]
        rows.append(
            [
                agent,
                len(files_of(agent)),
                f"{t['bytes'] / REPEAT / 2**20:.2f}",
                f"{t['messages'] / REPEAT:,.0f}",
                f"{read / 2**20:.1f} MB/s ({read / pi_read:.2f}x pi)",
                f"{rate / 2**20:.1f} MB/s ({rate / pi_rate:.2f}x pi)",
                f"{t['messages'] / t['seconds']:,.0f}/s",
            ]
        )
    agents = Counter(f.agent for f in found)
    body = "\n\n".join(
        [
            f"Each source's reader (`read`), then with its rows built and every text redacted (`to rows`), over its "
            f"fixtures, {REPEAT} times, the agents interleaved; ratios are to pi's in the same run. The row stage "
            "is the same code for every agent: its rate follows the text (the redaction rules' scans of long tool "
            "output), not the agent.",
            table(["source", "files", "MB", "messages", "read", "to rows", "messages"], rows),
            f"Ingest assets over all four agents' fixtures in their own folders ({dict(sorted(agents.items()))} "
            f"files, {len(days)} days): first run {first_seconds:.1f} s, {first['written']:,} documents written; "
            f"re-run with nothing changed {rerun_seconds:.1f} s, **{writes} Elasticsearch writes** "
            f"({rerun['unchanged_sessions']} sessions unchanged).",
        ]
    )
    write_section("sources", "uv run python -m bench sources", body)
    print(body)
