"""Follow-through (issue 48): the decider (`reflect/followthrough.py`) on the frozen labelled corpus
`bench/corpus/followthrough/events.jsonl`, tune and held-out splits reported apart.

For each split: accuracy overall and per label, the confusion matrix (label -> decided), and the memories
demoted without evidence (decided contradicted where the label is not): the error that matters most, since
two of them stop a memory being injected. `--failures` prints the tune split's mistakes (never the held
split's: it is not looked at while tuning).

`--against=COMMIT` adds the rules of an earlier commit on the same events (a baseline from the same run).
`--model` adds a row per split for the rules with the chat model's pass (`reflect/followthrough_model.py`,
asked only where the rules find no signal but the agent's doings touch the memory) against the configured chat
server (the local one by default; LLAMA_URL for another), with the time per event.

    uv run python -m bench followthrough [--model] [--failures] [--against=COMMIT]
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.baseline import code_at
from bench.results_file import table, write_section
from memory_pipeline.reflect.followthrough import decide
from memory_pipeline.reflect.followthrough_model import ModelPass
from memory_pipeline.reflect.turn_messages import LABELS, Outcome, turn_of
from memory_pipeline.settings import load_settings
from memory_pipeline.stores.llm import chat_client

HERE = Path(__file__).parent / "corpus" / "followthrough"
CORPUS = HERE / "events.jsonl"
# More tuning sets (events_tune_b.jsonl, events_tune_c.jsonl), each written blind on 2026-12-06 by a helper that
# read neither the decider nor the other sets: the first tuning third had been read so often that its figure no
# longer said what the rules do on new turns. Each is scored before any code is tuned on it (in the commit that
# adds it), then tuned on; the held third is never read.
MORE_TUNING = sorted(HERE.glob("events_tune_*.jsonl"))
# Each event of events.jsonl read blind for what deciding it takes: "names" (what is literally there: a tool, a
# path, a port, the person's plain words in any language) or "meaning" (what code or an action means). The ceiling
# of a decider that reads names, and where the rules fall short of it.
READING = HERE / "reading.jsonl"
# The same reading of each event of heldout_b.jsonl (`reading_heldout_b.jsonl`, written blind by a helper that read
# the README and heldout_b.jsonl only): the names decider's ceiling on the set never tuned on.
READING_HELD_B = HERE / "reading_heldout_b.jsonl"
# A second held-out set (heldout_b.jsonl, split `held_b`), written blind on 2026-12-06 after the rules had been
# tuned on the tuning sets, never tuned on: with `--against=COMMIT`, the same events decided by an earlier code's
# rules, so what the tuning did on turns nobody read is a ratio from one run.
HELD_B = HERE / "heldout_b.jsonl"
SPLITS = ("tune", *(more.stem.removeprefix("events_") for more in MORE_TUNING), "held", "held_b")
HELD_OUT = ("held", "held_b")
WORK = Path(__file__).with_name(".work") / "followthrough"
_BASELINE_RUN = """
import json, sys
sys.path.insert(0, sys.argv[1])
from memory_pipeline.reflect.followthrough import decide
try:
    from memory_pipeline.reflect.turn_messages import turn_of
except ImportError:  # before turn_messages.py
    from memory_pipeline.reflect.followthrough import turn_of
assert sys.modules["memory_pipeline"].__file__.startswith(sys.argv[1])
events = json.load(open(sys.argv[2]))
json.dump([decide(e["memory"]["kind"], e["memory"]["text"], turn_of(e["turn"])).outcome for e in events],
          open(sys.argv[3], "w"))
"""


def load(path: Path = CORPUS) -> list[dict[str, Any]]:
    """The labelled events of `path`; of CORPUS, with the other tuning sets' events after them (split `tune_b`, …)."""
    events = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise SystemExit(f"{path}:{number}: not JSON ({exc.msg})") from exc
    if path == CORPUS:
        for more in MORE_TUNING:
            events += [{**e, "split": more.stem.removeprefix("events_")} for e in load(more)]
        if HELD_B.exists():
            events += [{**e, "split": "held_b"} for e in load(HELD_B)]
    return events


def readings() -> dict[str, str]:
    """Each event's reading ("names" or "meaning") by id, of every set that has one."""
    found = {}
    for path in (READING, READING_HELD_B):
        if path.exists():
            lines = path.read_text(encoding="utf-8").splitlines()
            found |= {line["id"]: line["reading"] for line in map(json.loads, lines)}
    return found


def by_reading(events: list[dict[str, Any]], decider: Decider = decide) -> list[list[str]]:
    """Per split whose events were read (events.jsonl's, heldout_b.jsonl's): the rules right on the events that
    names decide, on those that need meaning, and on no_signal (a decider's default); and the ceiling of a decider
    that reads names, right on every names event and on every no_signal one, wrong on every meaning one."""
    reading = readings()
    rows = []
    for split in SPLITS:
        part = [e for e in events if e["split"] == split]
        if not part or any(e["id"] not in reading for e in part):
            continue
        groups: dict[str, list[bool]] = {"names": [], "meaning": [], "no_signal": []}
        for event in part:
            group = "no_signal" if event["label"] == "no_signal" else reading[event["id"]]
            groups[group].append(decided(event, decider).outcome == event["label"])
        ceiling = len(groups["names"]) + len(groups["no_signal"])
        rows.append([split, *(_percent(sum(g), len(g)) for g in groups.values()), _percent(ceiling, len(part))])
    return rows


Decider = Callable[[str, str, list[Any]], Outcome]


def decided(event: dict[str, Any], decider: Decider = decide) -> Outcome:
    memory = event["memory"]
    return decider(memory["kind"], memory["text"], turn_of(event["turn"]))


def score(
    events: list[dict[str, Any]], decider: Decider = decide, outcomes: list[Outcome] | None = None
) -> dict[str, Any]:
    """The figures of `decider` on `events` (or of `outcomes` decided elsewhere, one per event)."""
    begin = time.perf_counter()
    outcomes = [decided(e, decider) for e in events] if outcomes is None else outcomes
    seconds = time.perf_counter() - begin
    pairs = [(e["label"], o.outcome) for e, o in zip(events, outcomes, strict=True)]
    confusion = Counter(pairs)
    per_label = {
        label: (sum(1 for t, d in pairs if t == label and d == label), sum(1 for t, _ in pairs if t == label))
        for label in LABELS
    }
    right = sum(1 for t, d in pairs if t == d)
    wrongly_demoted = sum(1 for t, d in pairs if d == "contradicted" and t != "contradicted")
    by_model = [(t, o.outcome) for (t, _), o in zip(pairs, outcomes, strict=True) if o.decided_by == "model"]
    return {"n": len(pairs), "right": right, "per_label": per_label, "confusion": confusion,
            "demoted_without_evidence": wrongly_demoted, "seconds": seconds,
            "by_model": (sum(1 for t, d in by_model if t == d), len(by_model))}  # fmt: skip


def _percent(a: int, b: int) -> str:
    return f"{a}/{b} ({100 * a / b:.1f}%)" if b else "0/0"


def render(results: dict[tuple[str, str], dict[str, Any]], model: str | None) -> str:
    rows = [
        [setting, split, _percent(r["right"], r["n"]), *(_percent(*r["per_label"][label]) for label in LABELS),
         r["demoted_without_evidence"], f"{r['by_model'][0]}/{r['by_model'][1]}" if r["by_model"][1] else "-",
         f"{1000 * r['seconds'] / max(r['n'], 1):.1f} ms"]
        for (setting, split), r in results.items()
    ]  # fmt: skip
    body = [
        f"{sum(r['n'] for (s, _), r in results.items() if s == 'rules')} events. "
        "Corpus: `bench/corpus/followthrough/events.jsonl` (written blind, before the decider; held = ids "
        "divisible by 3) and, as `tune_b` and `tune_c`, `events_tune_b.jsonl` and `events_tune_c.jsonl` (more "
        "tuning sets, written blind on 2026-12-06). Demoted without evidence: decided contradicted where the label "
        "is not. Model: the chat model's pass asked where the rules find no signal and the agent's doings touch the "
        "memory; it may say "
        "followed or ignored with the agent's line that shows it, never contradicted"
        + (f" (`{model}`, `--model`)." if model else "; not run (`--model`)."),
        "",
        table(
            [
                "setting",
                "split",
                "overall",
                *LABELS,
                "demoted without evidence",
                "model decided (right)",
                "time per event",
            ],
            rows,
        ),  # fmt: skip
    ]
    for (setting, split), r in results.items():
        matrix = [[label, *(r["confusion"].get((label, d), 0) for d in LABELS)] for label in LABELS]
        body += ["", f"Confusion, {setting}, {split} (rows: label, columns: decided):", "",
                 table(["label", *LABELS], matrix)]  # fmt: skip
    return "\n".join(body)


def _reading_table(events: list[dict[str, Any]]) -> str:
    return "\n".join([
        "", "The rules by what deciding takes (`reading.jsonl`, `reading_heldout_b.jsonl`: each event read blind: "
        "names, what is literally there; meaning, what code or an action means), and the ceiling of a decider that "
        "reads names (every names and no_signal event right, every meaning event wrong):", "",
        table(["split", "names", "meaning", "no_signal", "ceiling of a names decider"], by_reading(events)),
    ])  # fmt: skip


def _with_model(events: list[dict[str, Any]], results: dict[tuple[str, str], dict[str, Any]]) -> str:
    settings = load_settings()
    with chat_client(settings, timeout=600) as chat:
        model = chat.model_id()
        judge = ModelPass(chat)
        for split in ("held", *(s for s in SPLITS if s != "held")):  # held first: the figure that counts
            if not any(e["split"] == split for e in events):
                continue
            results[("rules + model", split)] = score([e for e in events if e["split"] == split], judge.decide)
            print(f"rules + model, {split}: {results[('rules + model', split)]['right']} right; {judge.calls} calls, "
                  f"{judge.failures} failed, {judge.unfounded} unfounded, {judge.by_verdict}", file=sys.stderr,
                  flush=True)  # fmt: skip
    return model


def against(commit: str, events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per split, the rules of `commit` (its memory_pipeline, in a process of its own) on the same events."""
    WORK.mkdir(parents=True, exist_ok=True)
    code = code_at(commit, WORK)
    wanted, out = WORK / "events.json", WORK / f"outcomes-{commit}.json"
    wanted.write_text(json.dumps(events), encoding="utf-8")
    subprocess.run([sys.executable, "-W", "ignore", "-c", _BASELINE_RUN, str(code), str(wanted), str(out)], check=True)
    then = [Outcome(outcome=o) for o in json.loads(out.read_text(encoding="utf-8"))]
    return {
        split: score([e for e in events if e["split"] == split],
                     outcomes=[o for e, o in zip(events, then, strict=True) if e["split"] == split])
        for split in SPLITS
        if any(e["split"] == split for e in events)
    }  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    events = load()
    splits = [split for split in SPLITS if any(e["split"] == split for e in events)]
    results = {("rules", split): score([e for e in events if e["split"] == split]) for split in splits}
    model = _with_model(events, results) if "--model" in argv else None
    commit = next((a.split("=", 1)[1] for a in argv if a.startswith("--against=")), None)
    if commit:
        results |= {(f"rules at {commit}", split): r for split, r in against(commit, events).items()}
    settings = ("rules", *([f"rules at {commit}"] if commit else []), "rules + model")
    order = [(setting, split) for setting in settings for split in splits]
    text = render({key: results[key] for key in order if key in results}, model) + _reading_table(events)
    print(text)
    if "--failures" in argv:  # of the tuning sets only: a held-out set's failures are never read
        for event in (e for e in events if e["split"] not in HELD_OUT):
            got = decided(event).outcome
            if got != event["label"]:
                print(f"\n{event['id']} label={event['label']} decided={got}  memory={event['memory']['text']!r}")
                print(f"  evidence={event['evidence']!r} note={event['note']!r}")
    else:
        flags = (" --model" if model else "") + (f" --against={commit}" if commit else "")
        write_section("followthrough", "uv run python -m bench followthrough" + flags, text)


if __name__ == "__main__":
    main()
