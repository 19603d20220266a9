"""What `make run` remembers from the sample session that shows the product (data/sessions/--home-alice-work-
demo-shop--: a person states a rule, finds a root cause with the assistant, makes a decision with its reason):
the session's day through `memory_job`'s assets on the local servers, in a folder of its own, and every memory
of its project, in a table (issue 49: at least three a reader would call useful).

uv run python -m bench samples
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from dagster import materialize

from bench.results_file import table, write_section
from memory_pipeline.partitions import instance_with_days
from memory_pipeline.resources import build_resources
from memory_pipeline.search.models import Filters, Row
from memory_pipeline.search.open import open_search
from memory_pipeline.settings import isolated_settings, load_settings
from testkit.ingest_helpers import MEMORY_ASSETS, reset_days

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "sessions" / "--home-alice-work-demo-shop--"
PROJECT, DAY = "/home/alice/work/demo-shop", "2026-11-30"
WORK = ROOT / "bench" / ".work" / "samples"


def body(rows: list[Row], seconds: float) -> str:
    """The section: each memory of the sample's project, the model's first."""
    ordered = sorted(rows, key=lambda r: (r.kind != "summary", r.time))
    cells = [[r.kind, r.knowledge or "–", r.priority, r.summary.replace("|", "\\|")] for r in ordered]
    summaries = sum(1 for r in rows if r.kind == "summary")
    return (
        f"`{SAMPLE.relative_to(ROOT)}/` (one pi session, 3 turns) through `memory_job`'s assets for {DAY}, "
        f"{seconds:.0f} s on a shared 2-core machine: {summaries} memories from the chat model, "
        f"{len(rows) - summaries} observations.\n\n" + table(["kind", "knowledge", "priority", "text"], cells)
    )


def main(flags: list[str]) -> None:
    shutil.rmtree(WORK, ignore_errors=True)
    settings = isolated_settings(load_settings(), WORK, sessions_dir=WORK / "sessions")
    shutil.copytree(SAMPLE, settings.sessions_dir / SAMPLE.name)
    # The indices are the running servers' own: without a clean day the run finds the last run's turns read and
    # its memories stored, and measures nothing of the code as it is now.
    reset_days(settings, [DAY])
    started = time.monotonic()
    result = materialize(
        MEMORY_ASSETS, resources=build_resources(settings), partition_key=DAY, instance=instance_with_days([DAY])
    )
    assert result.success
    seconds = time.monotonic() - started
    with open_search(settings) as search:
        rows = search.recent(Filters(project=PROJECT), k=50)
    write_section("samples", "uv run python -m bench samples", body(rows, seconds))
