"""Reflect benchmark on the synthetic corpus: friction and supersession precision/recall, compression of reflections.

`uv run python -m bench reflect` (regenerate the corpus first with
`python -m testkit.corpora.make_reflect_corpus` if its script changed). Runs the real assets against the
configured servers (the local ones by default; set LLAMA_URL to judge another chat model on the same corpus),
day by day as the daily schedule would, then the four weekly friction reports, then everything again to
measure what a re-run costs.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from bench.results_file import table, write_section
from memory_pipeline.assets import reflect as reflect_assets
from memory_pipeline.reflect.condense import Condenser
from memory_pipeline.settings import isolated_settings, load_settings
from memory_pipeline.stores.elasticsearch import delete_days, make_client
from memory_pipeline.stores.indices import REFLECTION_INDEX
from memory_pipeline.stores.llm import ChatClient, chat_client
from testkit.corpora import reflect_corpus as corpus

WORK = Path(".state/bench-reflect")
AS_OF = "2024-07-31"  # the corpus's days are then 5 to 30 days old: every age tier is present
WEEKS = ["2024-07-01", "2024-07-08", "2024-07-15", "2024-07-22"]


PAIRS = Path(__file__).parent / "labels" / "supersession_pairs.json"


def judge_on_pairs(chat: ChatClient) -> dict[str, int]:
    """The supersession judge alone on the validation pairs: confusion counts."""
    condenser = Condenser(chat)
    counts = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
    for pair in json.loads(PAIRS.read_text())["pairs"]:
        said = condenser.replaces(pair["older"], pair["newer"])
        counts[("t" if said == pair["replaces"] else "f") + ("p" if said else "n")] += 1
    return counts


def main(argv: list[str]) -> None:
    shared = load_settings()
    shutil.rmtree(WORK, ignore_errors=True)
    settings = isolated_settings(shared, WORK, sessions_dir=corpus.CORPUS / "sessions")
    truth = corpus.truth()
    days = truth["days"]
    corpus.prepare(settings, days)
    with chat_client(settings) as chat:
        model = chat.model_id()
        judge = judge_on_pairs(chat)

    begin = time.perf_counter()
    runs = [corpus.run_reflect(settings, [day], AS_OF) for day in days]  # as the daily schedule does
    first_seconds = time.perf_counter() - begin
    friction = [corpus.run_friction(settings, week) for week in WEEKS]
    begin = time.perf_counter()
    rerun = corpus.run_reflect(settings, days, AS_OF)
    rerun_seconds = time.perf_counter() - begin

    reflections = [r.metadata["reflections"] for r in runs]
    memories_in = sum(m["memories_in"] for m in reflections)
    reflections_out = sum(m["reflections_out"] for m in reflections)
    tiers: dict[str, list[int]] = {}
    for m in reflections:
        for tier, counts in m["by_tier"].items():
            totals = tiers.setdefault(tier, [0, 0])
            totals[0] += counts["memories"]
            totals[1] += counts["reflections"]
    calls = sum(m["llm_calls"] for m in reflections)
    fallbacks: dict[str, int] = {}
    for m in reflections:
        for task, n in m["llm_fallbacks"].items():
            fallbacks[task] = fallbacks.get(task, 0) + n
    checks_ok = all(all(r.checks.values()) for r in runs)
    friction_scores = corpus.score_friction(settings)
    supersession = corpus.score_supersession(settings, days)
    rerun_meta = rerun.metadata["reflections"]

    # The same memories reflected in weekly windows (window_days=7), from scratch.
    with make_client(settings) as client:
        delete_days(client, [REFLECTION_INDEX], days)
    weekly = corpus.run_reflect(settings, days, AS_OF, [reflect_assets.reflections], window_days=7)
    weekly_meta = weekly.metadata["reflections"]

    def row(score: dict) -> list[object]:
        return [
            score["planted_dev"],
            score["planted_held_out"],
            score["found"],
            f"{score['precision']:.2f}",
            f"{score['recall_dev']:.2f}",
            f"{score['recall_held_out']:.2f}" if score["planted_held_out"] else "-",
        ]

    headers = ["planted (dev)", "planted (held out)", "found", "precision", "recall (dev)", "recall (held out)"]
    held = truth["held_out"]
    body = f"""Synthetic corpus (`testkit/corpora/make_reflect_corpus.py`): {
        len(truth["sessions"])
    } pi sessions over four weeks,
{memories_in} planted memories. Planted: rules the user repeats across sessions, recurring failures, kinds of tool
misuse, decisions replaced weeks later, plus related-but-compatible decisions, one-off rules and failures and ordinary
noise. The reflect heuristics (change words, restatement words, thresholds) were settled on the `dev` items; the
`held out` items ({len(held["rules"])} rule, {len(held["failures"])} failure, {len(held["misuse"])} misuse,
{len(held["supersessions"])} replaced decisions, {len(held["compatible"])} compatible ones) were written afterwards and
never tuned on. Chat model `{model}`, embeddings from the local MiniLM server. Reflections run day by day (as the
daily schedule does), ages counted from {AS_OF}; friction runs once per ISO week. A finding matches a planted item of
its kind when it shares at least two of its sessions; precision counts every planted item.

Friction findings (proposals in REVIEW.md, all four weeks):

{
        table(
            ["kind", *headers],
            [
                ["repeated rules", *row(friction_scores["rules"])],
                ["recurring failures", *row(friction_scores["failures"])],
                ["tool misuse", *row(friction_scores["misuse"])],
                ["all", *row(friction_scores["all"])],
            ],
        )
    }

Supersession (`superseded_by` marks against the planted replaced decisions):

{table(headers, [row(supersession)])}

The judge alone on {sum(judge.values())} validation pairs (`bench/labels/supersession_pairs.json`, not in the corpus;
they chose its prompt): {judge["tp"]} of {judge["tp"] + judge["fn"]} replacements found, {judge["fp"]} of
{judge["fp"] + judge["tn"]} compatible pairs wrongly judged replaced.

Compression of reflections (memories in / reflections out), by age tier:

{
        table(
            ["tier", "memories", "reflections", "ratio"],
            [[tier, n, r, f"{n / r:.2f}" if r else "-"] for tier, (n, r) in sorted(tiers.items())]
            + [["all", memories_in, reflections_out, f"{memories_in / reflections_out:.2f}"]],
        )
    }

- Weekly windows (`window_days: 7`) on the same memories: {weekly_meta["memories_in"]} memories ->
  {weekly_meta["reflections_out"]} reflections = {weekly_meta["compression_ratio"]:.2f}
  ({weekly_meta["merged"]} merged, {weekly_meta["digests"]} digests).
- Friction findings per week ({", ".join(WEEKS)}): {", ".join(str(f["findings"]) for f in friction)}.
- First pass over {len(days)} days: {first_seconds:.1f} s, {calls} LLM calls (fallbacks after a failed retry:
  {fallbacks or "none"}); every reflection check passed: {checks_ok}.
- Re-run of all days with nothing changed: {rerun_seconds:.1f} s = {rerun_seconds / first_seconds:.0%} of the first
  pass, {rerun_meta["llm_calls"]} LLM calls, {rerun_meta["es_written"]} reflection writes.
"""
    write_section("Reflect", "uv run python -m bench reflect", body)
    print(body)
