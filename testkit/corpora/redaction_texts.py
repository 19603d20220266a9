"""Every text the redactor is measured on, as plain strings, for comparing its fast path with its reference
(`Redactor.redact` against `Redactor.redact_reference`): gitleaks' examples in their six line contexts, the
held-out formats in every text context, the real lines alone and as their files' blocks, and the session
files of the unit-test fixtures and of bench/corpus, whole."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

from testkit.corpora import gitleaks_corpus, heldout_corpus
from testkit.paths import CORPUS

FIXTURES = Path(__file__).resolve().parents[2] / "memory_pipeline_tests" / "fixtures"
_SESSION_FILES = ("*.jsonl", "*.json")


def texts(step: int = 1) -> Iterator[tuple[str, str]]:
    """(corpus, text) pairs; `step` > 1 takes every step-th sample of each corpus (the unit test's sample)."""
    for sample in gitleaks_corpus.samples()[::step]:
        for context, wrap in gitleaks_corpus.CONTEXTS.items():
            yield f"gitleaks/{context}", wrap(sample.text)
    for held in heldout_corpus.samples()[::step]:
        for context, wrap in heldout_corpus.BARE.items():
            yield f"heldout/{context}", wrap(held)
        for context in gitleaks_corpus.CONTEXTS:
            yield f"heldout/{context}", gitleaks_corpus.CONTEXTS[context](heldout_corpus.carrier(held))
    lines = heldout_corpus.real_lines()
    by_file: dict[tuple[str, str], list[str]] = defaultdict(list)
    for line in lines[::step]:
        yield "real lines", line.text
    for line in lines:
        by_file[(line.repo, line.path)].append(line.text)
    for block in list(by_file.values())[::step]:
        yield "real line blocks", "\n".join(block)
    for root in (FIXTURES, CORPUS):
        files = sorted(p for pattern in _SESSION_FILES for p in root.rglob(pattern) if p.is_file())
        for path in files[::step]:
            yield f"sessions/{root.name}", path.read_text(errors="replace")
