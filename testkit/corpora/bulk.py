"""A large history made of the real fixtures: copies under new ids, spread over days (bench ingest, the cluster
e2e test)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl

from memory_pipeline.sessions.messages import session_messages, to_frame
from memory_pipeline.sessions.parse import parse_session
from memory_pipeline.sessions.redact import Redactor
from testkit.paths import SESSION_FIXTURES as FIXTURES

DAYS = [f"2024-03-{d:02d}" for d in range(1, 11)]
TARGET_MESSAGES = 100_000


def build_corpus(
    root: Path, days: list[str] = DAYS, target: int = TARGET_MESSAGES, sources: list[Path] | None = None
) -> tuple[int, int]:
    """Copies of `sources` (default: every fixture) under new ids, spread over `days` (file by file, in turn),
    until >= `target` messages; (files, bytes)."""
    shutil.rmtree(root, ignore_errors=True)
    sources = sources or sorted(FIXTURES.glob("*.jsonl"))
    per_round = sum(
        to_frame(session_messages(parse_session(p), Redactor(), "x")[0]).filter(pl.col("doc_id").is_not_null()).height
        for p in sources
    )
    rounds = -(-target // per_round)
    files = size = 0
    for r in range(rounds):
        for i, source in enumerate(sources):
            day = days[(r * len(sources) + i) % len(days)]
            lines = source.read_bytes().split(b"\n")
            header = json.loads(lines[0])
            header["id"], header["timestamp"] = f"bench-{r:04d}-{i:04d}-{source.stem}", f"{day}T08:00:00.000Z"
            lines[0] = json.dumps(header).encode()
            path = root / f"--bench-{(r * len(sources) + i) % 7}--" / f"{header['id']}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"\n".join(lines))
            files += 1
            size += path.stat().st_size
    return files, size
