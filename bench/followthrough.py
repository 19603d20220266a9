"""Follow-through (issue 48): the decider (`reflect/followthrough.py`) on the frozen labelled corpus
`bench/corpus/followthrough/events.jsonl`, tune and held-out splits reported apart.

For each split: accuracy overall and per label, the confusion matrix (label -> decided), and the memories
demoted without evidence (decided contradicted where the label is not): the error that matters most, since
two of them stop a memory being injected. `--failures` prints the tune split's mistakes (never the held
split's: it is not looked at while tuning).

    uv run python -m bench followthrough [--failures]
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.results_file import table, write_section
from memory_pipeline.reflect.followthrough import LABELS, decide, turn_of

CORPUS = Path(__file__).parent / "corpus" / "followthrough" / "events.jsonl"
SPLITS = ("tune", "held")


def load(path: Path = CORPUS) -> list[dict[str, Any]]:
    events = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise SystemExit(f"{path}:{number}: not JSON ({exc.msg})") from exc
    return events


def decided(event: dict[str, Any]) -> str:
    memory = event["memory"]
    return decide(memory["kind"], memory["text"], turn_of(event["turn"])).outcome


def score(events: list[dict[str, Any]]) -> dict[str, Any]:
    pairs = [(e["label"], decided(e)) for e in events]
    confusion = Counter(pairs)
    per_label = {
        label: (sum(1 for t, d in pairs if t == label and d == label), sum(1 for t, _ in pairs if t == label))
        for label in LABELS
    }
    right = sum(1 for t, d in pairs if t == d)
    wrongly_demoted = sum(1 for t, d in pairs if d == "contradicted" and t != "contradicted")
    return {"n": len(pairs), "right": right, "per_label": per_label, "confusion": confusion,
            "demoted_without_evidence": wrongly_demoted}  # fmt: skip


def _percent(a: int, b: int) -> str:
    return f"{a}/{b} ({100 * a / b:.1f}%)" if b else "0/0"


def render(results: dict[str, dict[str, Any]], seconds: float) -> str:
    rows = [
        [split, _percent(r["right"], r["n"]), *(_percent(*r["per_label"][label]) for label in LABELS),
         r["demoted_without_evidence"]]
        for split, r in results.items()
    ]  # fmt: skip
    body = [
        f"Rule path only (no chat model), {sum(r['n'] for r in results.values())} events in {seconds:.2f}s. "
        "Corpus: `bench/corpus/followthrough/events.jsonl` (written blind, before the decider; held = ids "
        "divisible by 3). Demoted without evidence: decided contradicted where the label is not.",
        "",
        table(["split", "overall", *LABELS, "demoted without evidence"], rows),
    ]
    for split, r in results.items():
        matrix = [[label, *(r["confusion"].get((label, d), 0) for d in LABELS)] for label in LABELS]
        body += ["", f"Confusion, {split} (rows: label, columns: decided):", "", table(["label", *LABELS], matrix)]
    return "\n".join(body)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    events = load()
    begin = time.perf_counter()
    results = {split: score([e for e in events if e["split"] == split]) for split in SPLITS}
    seconds = time.perf_counter() - begin
    text = render(results, seconds)
    print(text)
    if "--failures" in argv:
        for event in (e for e in events if e["split"] == "tune"):
            got = decided(event)
            if got != event["label"]:
                print(f"\n{event['id']} label={event['label']} decided={got}  memory={event['memory']['text']!r}")
                print(f"  evidence={event['evidence']!r} note={event['note']!r}")
    else:
        write_section("followthrough", "uv run python -m bench followthrough", text)


if __name__ == "__main__":
    main()
