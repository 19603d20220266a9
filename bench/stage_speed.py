"""The summarising stage's rate on a labelled day, the code before issue 47's work against now, in the same run.

    uv run python -m bench stage_speed

The day: the 37 labelled turns of one real pi session (bench/labels/summarize_turns.json, 21 memorable), the
set bench summarize scores. Each side runs `summarise_turns` on every turn, one at a time as `llm_ideas` does on
one slot, in a process of its own against the same chat server (the baseline from `git archive`, as bench
redaction_speed does): the code before the gate before the chat model and the prompt work (c6c0e1d, the
baseline of redaction_speed too) and the code as it is. Per side: turns a second, the server's own time split
into reading the prompt and writing the answer, the turns the model read, the memorable turns it read (the
gate must keep at least 98% of them), and the memories kept. The ratio is the issue's third acceptance line
(at least 3x); the split says where the rest of the time goes, so what a further ratio would need is read off
the same run.
"""

from __future__ import annotations

import json
from pathlib import Path

from bench.baseline import code_at, load, run_side
from bench.results_file import table, write_section
from testkit.paths import ROOT

WORK = Path(__file__).with_name(".work") / "stage_speed"
BASELINE = "c6c0e1d"  # the commit before issue 47's work (redaction_speed's baseline)
TARGET = 3.0
KEPT_AT_LEAST = 0.98
_RUN = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from bench.summarize import labelled_jobs
from memory_pipeline.settings import load_settings
from memory_pipeline.stores.llm import chat_client
from memory_pipeline.summarize.extract import summarise_turns
assert sys.modules["memory_pipeline"].__file__.startswith(sys.argv[1]), sys.modules["memory_pipeline"].__file__
jobs, labels = labelled_jobs()
memorable = {label["turn_id"] for label in labels if label["memorable"]}
rows = []
with chat_client(load_settings(), timeout=900) as client:
    context, model = client.context_size() or 4096, client.model_id()
    begin = time.perf_counter()
    for job in jobs:
        [o] = summarise_turns(client, [job], context_tokens=context, max_output_tokens=512)
        assert "rejected" not in (o.reason or ""), (job.turn_id, o.reason)  # a server refusing is no measure
        rows.append({"turn": job.turn_id, "memorable": job.turn_id in memorable, "seconds": o.seconds,
                     "read": o.prompt_tokens > 0, "prompt_tokens": o.prompt_tokens,
                     "completion_tokens": o.completion_tokens, "server": o.server_seconds,
                     "generation": o.generation_seconds, "attempts": o.attempts, "ideas": len(o.ideas),
                     "failed": o.status == "failed"})
        print(f"{job.turn_id}: {o.seconds:.1f} s", file=sys.stderr, flush=True)
    wall = time.perf_counter() - begin
json.dump({"wall": wall, "context": context, "model": model, "rows": rows}, open(sys.argv[2], "w"))
"""


def measure(code: Path, name: str) -> dict:
    """One side's run, on a chat server started for it (`baseline.run_side`)."""
    out = WORK / f"{name}.json"
    fresh = run_side(code, _RUN, out)
    side = json.loads(out.read_text())
    side["fresh server"] = fresh
    out.write_text(json.dumps(side))
    return side


def summary(side: dict) -> dict[str, float]:
    rows = side["rows"]
    memorable = [r for r in rows if r["memorable"]]
    server = sum(r["server"] for r in rows)
    generation = sum(r["generation"] for r in rows)
    return {
        "turns": len(rows),
        "wall": side["wall"],
        "rate": len(rows) / side["wall"],
        "read": sum(r["read"] for r in rows),
        "memorable": len(memorable),
        "memorable read": sum(r["read"] for r in memorable),
        "prompt seconds": server - generation,
        "generation seconds": generation,
        "outside the server": side["wall"] - server,
        "prompt tokens": sum(r["prompt_tokens"] for r in rows),
        "completion tokens": sum(r["completion_tokens"] for r in rows),
        "calls beyond one a turn": sum(max(0, r["attempts"] - 1) for r in rows),
        "memories": sum(r["ideas"] for r in rows),
        "failed": sum(r["failed"] for r in rows),
        # The most a gate and a prompt economy could give with the model's answers as they are: every other turn
        # skipped at no cost, every prompt read for free; what stays is writing the memorable turns' answers and
        # the checks after them.
        "floor seconds": sum(r["generation"] + r["seconds"] - r["server"] for r in memorable),
    }


def main(flags: list[str]) -> None:
    """`--saved`: the tables again from the last run's answers (bench/.work/stage_speed), without the model."""
    WORK.mkdir(parents=True, exist_ok=True)
    saved = WORK / "loads.json"
    if "--saved" in flags:
        sides = [json.loads((WORK / f"{name}.json").read_text()) for name in (f"before-{BASELINE}", "now")]
        loads = json.loads(saved.read_text())
    else:
        loads = [load()]
        baseline = code_at(BASELINE, WORK, ("memory_pipeline", "bench", "testkit"), with_tests=True)
        sides = [measure(baseline, f"before-{BASELINE}")]
        loads.append(load())
        sides.append(measure(ROOT, "now"))
        loads.append(load())
        saved.write_text(json.dumps(loads))
    before, now = (summary(side) for side in sides)
    ceiling = now["turns"] / now["floor seconds"]
    ratio = now["rate"] / before["rate"]
    kept = now["memorable read"] / now["memorable"]

    def row(label: str, key: str, fmt: str = "{:,.0f}") -> list[str]:
        return [label, fmt.format(before[key]), fmt.format(now[key])]

    rows = [
        row("turns", "turns"),
        row("wall seconds", "wall", "{:,.1f}"),
        ["turns a second", f"{before['rate']:.3f}", f"**{now['rate']:.3f}** ({ratio:.2f}x)"],
        row("turns the chat model read", "read"),
        [
            "memorable turns the chat model read",
            f"{before['memorable read']} / {before['memorable']}",
            f"{now['memorable read']} / {now['memorable']} ({kept:.0%})",
        ],  # fmt: skip
        row("server seconds reading prompts", "prompt seconds", "{:,.1f}"),
        row("server seconds writing answers", "generation seconds", "{:,.1f}"),
        row("seconds outside the server (checks, composition)", "outside the server", "{:,.1f}"),
        row("prompt tokens", "prompt tokens"),
        row("answer tokens", "completion tokens"),
        row("model calls beyond one a turn (retries, restating passes)", "calls beyond one a turn"),
        row("memories kept", "memories"),
        row("turns failed (an invalid answer on every attempt)", "failed"),
    ]
    body = "\n\n".join(
        [
            f"`summarise_turns` on the 37 labelled turns of one real pi day (bench/labels/summarize_turns.json), one "
            f"turn at a time, the code before issue 47's work ({BASELINE}) against now, each in a process of its own "
            f"on the same chat server, one pass each"
            + (
                ", the server started anew before each side (its prompt cache empty: the second side would "
                "otherwise find the first side's prompts read already)"
                if all(side.get("fresh server") for side in sides)
                else " (a server of the user's: not restarted between the sides, so the second may find the "
                "first's prompts cached)"
            )
            + f". Load average (1, 5, 15 min) before, between and after: {' / '.join(loads)}.",
            table(["", f"before ({BASELINE})", "now"], rows),
            f"Target: at least {TARGET:.0f}x the turns a second with at least {KEPT_AT_LEAST:.0%} of the memorable "
            f"turns read by the model: {ratio:.2f}x, {kept:.0%} "
            f"({'met' if ratio >= TARGET and kept >= KEPT_AT_LEAST else 'NOT met'}).",
            f"The ceiling on this day, from the same run: with every turn that is not memorable skipped at no cost and "
            f"every prompt read for free, what stays is writing the memorable turns' answers and checking them "
            f"({now['floor seconds']:,.1f} s): {ceiling:.3f} turns a second, **{ceiling / before['rate']:.2f}x** the "
            "baseline. A gate and a prompt economy alone cannot go past it; past it the answers themselves must be "
            "shorter or fewer.",
        ]
    )
    write_section("stage_speed", "uv run python -m bench stage_speed", body)
    print(body)
