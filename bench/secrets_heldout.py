"""Secrets no rule names (`python -m bench secrets_heldout`, no server): the held-out corpus per context and
per format, the false-positive rate on real lines, gitleaks' corpus beside them, and redaction speed on a
long tool output; the redactor before issue 44's shape rules (the named rules alone) beside the default."""

from __future__ import annotations

import random
import string
import time

from bench.results_file import table, write_section
from memory_pipeline.sessions.redact import DEFAULT_RULES, Redactor
from memory_pipeline.sessions.secret_rules import SHAPE_RULES
from testkit.corpora import gitleaks_corpus, heldout_corpus


def _pct(m: int, n: int) -> str:
    return f"{m}/{n} ({m / n:.2%})" if n else "-"


def _long_text(n: int = 200_000) -> str:
    """A tool output of `n` characters: code, JSON, log lines, a few secrets (the shape rules' worst case is
    many long tokens)."""
    rng = random.Random(7)
    lines, size = [], 0
    pieces = (
        'def handler(event, context):\n    return {"statusCode": 200, "body": json.dumps(event)}',
        '{"id": "123e4567-e89b-12d3-a456-426614174000", "sha": "3f786850e387550fdab836ed7e6dc881de23001b"}',
        "2024-09-09 10:00:01 INFO nova.compute.manager [req-3ea4052c-895d-4b64-9e2d-04d64c4d94ab] claimed",
        '"integrity": "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==",',  # noqa: E501
    )
    while size < n:
        line = rng.choice(pieces)
        if rng.random() < 0.01:
            line = "UPSTREAM=figd_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(40))
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)[:n]


def _speed(redactor: Redactor, text: str, runs: int = 5) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        redactor.redact(text)
        best = min(best, time.perf_counter() - start)
    return best


def main(flags: list[str]) -> None:
    variants = {
        "named rules only (before)": Redactor(base=[r for r in DEFAULT_RULES if r not in SHAPE_RULES]),
        "with shape rules (default)": Redactor(),
    }
    corpus, lines = heldout_corpus.samples(), [line for line in heldout_corpus.real_lines() if not line.secret_like]
    formats = {s.format for s in corpus}
    figures = {name: heldout_corpus.measure(r, corpus) for name, r in variants.items()}
    headers = ["context", *(f"{name}, {split}" for name in variants for split in ("tune", "held"))]
    rows = [
        [c, *(_pct(*figures[name].by_context[split][c]) for name in variants for split in ("tune", "held"))]
        for c in heldout_corpus.CONTEXTS
    ]
    default = figures["with shape rules (default)"]
    everywhere = {name: sum(m == n for _, m, n, _ in f.by_format.values()) for name, f in figures.items()}
    missed = sorted((f, s, m, n, leaks) for f, (s, m, n, leaks) in default.by_format.items() if m < n)
    changed = {name: heldout_corpus.changed_lines(r, lines) for name, r in variants.items()}
    split_rate = {
        name: {s: _pct(sum(x.split == s for x in c), sum(x.split == s for x in lines)) for s in ("tune", "held")}
        for name, c in changed.items()
    }
    text = _long_text()
    speed = {name: _speed(r, text) for name, r in variants.items()}
    gitleaks = gitleaks_corpus.measure(Redactor())
    intact, negatives = gitleaks.fp_intact
    body = (
        f"Held-out formats: {len(formats)} credential formats no rule names ({len(corpus)} samples, "
        "`bench/corpus/heldout_secrets`, frozen before the rules changed), each sample in "
        f"{len(heldout_corpus.CONTEXTS)} contexts; masked = no 12 characters of its random part survive. "
        "`tune`: the half of the formats thresholds were chosen on; `held`: the half never looked at.\n\n"
        + table(headers, rows)
        + "\n\n"
        + "".join(f"- {name}: formats masked in every context {m}/{len(formats)}\n" for name, m in everywhere.items())
        + f"- text around each sample intact (default): {default.around[0]}/{default.around[1]}\n"
        + "".join(
            f"- missed (default): `{f}` ({s}) {m}/{n} everywhere, leaked in {', '.join(lk)}\n"
            for f, s, m, n, lk in missed
        )  # fmt: skip
        + f"\nReal lines (`bench/corpus/real_lines`: {len(lines)} lines of code, configuration and logs from "
        "docker/awesome-compose, logpai/loghub and pallets/flask, 10 credential lines left out): lines changed "
        "(alone, or in their file's block)\n\n"
        + table(
            ["rules", "changed, tune", "changed, held", "changed, all"],
            [[n, split_rate[n]["tune"], split_rate[n]["held"], _pct(len(c), len(lines))] for n, c in changed.items()],
        )
        + "\n\n"
        + "".join(
            f"- changed (default): `{x.repo}:{x.path}:{x.line}` `{gitleaks_corpus.short(x.text, 90)}`\n"
            for x in changed["with shape rules (default)"]
        )  # fmt: skip
        + "\ngitleaks' corpus with the default rules: "
        + ", ".join(f"{c} {m}/{n}" for c, (m, n) in gitleaks.recall.items())
        + f"; other lines intact {gitleaks.around[0]}/{gitleaks.around[1]}; its false positives left unchanged "
        f"{intact}/{negatives} (the named rules alone: see the `secrets` section; the shape rules mask random "
        "strings gitleaks rejects by format or checksum, and a few identifiers)\n\n"
        f"Speed on a {len(text):,}-character tool output (code, JSON, logs, 1% secrets), best of 5: "
        + ", ".join(f"{name} {s * 1000:.0f} ms" for name, s in speed.items())
        + "\n"
    )
    write_section("secrets_heldout", "uv run python -m bench secrets_heldout", body)
    print(body)
