"""The gate before the chat model (`summarize/turn_gate.py`), on labelled turns: how many memorable turns it
keeps for the model, how many others it spares the model.

`uv run python -m bench turn_gate [--train]`. With `--train` it is first fitted on the tuning half of
bench/labels/knowledge_turns.json (frozen before the gate was written) with the threshold that keeps every
memorable turn there; the figures that count are the held-out half's, and those of the 37 turns of
bench/labels/summarize_turns.json (a third set, pi only, never used in training). No server is needed: the
gate reads the turn's text, not the model.
"""

from __future__ import annotations

from collections.abc import Sequence

from bench.knowledge import _labels_commit, job_of, load_turns
from bench.results_file import table, write_section
from memory_pipeline.summarize import turn_gate
from memory_pipeline.summarize.prompt import turn_text
from memory_pipeline.summarize.trust import TurnText


def _summarize_set() -> tuple[list[TurnText], list[bool]]:
    from bench.summarize import labelled_jobs

    jobs, labels = labelled_jobs()
    return [turn_text(job.messages) for job in jobs], [bool(label["memorable"]) for label in labels]


def figures(turns: Sequence[TurnText], memorable: Sequence[bool]) -> list[str]:
    read = [turn_gate.may_hold_knowledge(t) for t in turns]
    kept = sum(r for r, m in zip(read, memorable, strict=True) if m)
    spared = sum(not r for r, m in zip(read, memorable, strict=True) if not m)
    wanted, others = sum(memorable), len(memorable) - sum(memorable)
    return [
        f"{kept} / {wanted} ({kept / wanted:.0%})" if wanted else "0 / 0",
        f"{spared} / {others} ({spared / others:.0%})" if others else "0 / 0",
        f"{sum(read)} / {len(read)} ({sum(read) / len(read):.0%})",
    ]


def main(argv: list[str]) -> None:
    labelled = load_turns()
    texts = [turn_text(job_of(t).messages) for t in labelled]
    if "--train" in argv:
        tune = [n for n, t in enumerate(labelled) if t["split"] == "tune"]
        weights, threshold = turn_gate.train([texts[n] for n in tune], [labelled[n]["memorable"] for n in tune])
        turn_gate.LEARNED.save(
            weights,
            round(threshold, 4),
            {
                "trained_on": f"knowledge_turns.json tuning half, {len(tune)} turns",
                "labels_commit": _labels_commit(),
            },
        )
    rows = []
    for split in ("tune", "held_out"):
        at = [n for n, t in enumerate(labelled) if t["split"] == split]
        rows.append(
            [
                f"knowledge, {split.replace('_', '-')} half",
                *figures([texts[n] for n in at], [labelled[n]["memorable"] for n in at]),
            ]
        )
    for history in sorted({t["history"] for t in labelled}):
        at = [n for n, t in enumerate(labelled) if t["split"] == "held_out" and t["history"] == history]
        rows.append([f"held-out, {history}", *figures([texts[n] for n in at], [labelled[n]["memorable"] for n in at])])
    rows.append(["summarize_turns (37 pi turns, a third set)", *figures(*_summarize_set())])
    body = (
        "The gate before the chat model (`summarize/turn_gate.py`, weights in `turn_gate.json`, trained on the "
        f"tuning half of labels frozen in {_labels_commit()}, its threshold the one that keeps every memorable "
        "tuning turn). A turn it does not pass is summarised from its own words without the model.\n\n"
        + table(["set", "memorable turns read by the model", "other turns spared the model", "turns read"], rows)
    )
    write_section("turn_gate", "uv run python -m bench turn_gate" + (" --train" if "--train" in argv else ""), body)
    print(body)
