"""Where the shared data lives in the checkout."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Real pi session files (provenance in their SOURCES.md), copied into the repo so a clone tests on its own.
SESSION_FIXTURES = ROOT / "memory_pipeline_tests" / "fixtures" / "pi-sessions"
# The benchmarks' corpora and labels (made by testkit/corpora/make_*.py).
CORPUS = ROOT / "bench" / "corpus"
LABELS = ROOT / "bench" / "labels"
