"""The keep filter (`summarize/keep.py`) on labelled turns: which memories it keeps, which it drops.

`uv run python -m bench keep [--train]`. Its examples are the candidate memories of the tuning half of
bench/labels/knowledge_turns.json (frozen before the filter was written), as the product makes them without a
model call: the embedded model's answers cached by earlier `bench knowledge` runs (bench/.work/knowledge, after
the checks that run on them anew, as `bench knowledge --replay` does), and the turn's own words without the
model. A candidate is positive when it holds a labelled piece of its turn (`bench.knowledge.judge`, the bench's
own matcher). With `--train` the filter is fitted on them, with the threshold that keeps every positive one,
also when cross-validated, and writes `keep.json`. Reported: the tuning half's candidates, cross-validated (no
candidate scored by a fit that saw it). The held-out half is never read here: its figure is the replay's
(`bench knowledge --replay=<run>`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from bench.knowledge import WORK, _labels_commit, job_of, judge, load_turns
from bench.results_file import table, write_section
from memory_pipeline.summarize import gate, keep, turn_gate
from memory_pipeline.summarize.extract import candidates_without_model
from memory_pipeline.summarize.faithful import strays
from memory_pipeline.summarize.ideas import Idea
from memory_pipeline.summarize.logistic import keeping_every_positive, probability
from memory_pipeline.summarize.prompt import turn_text
from memory_pipeline.summarize.trust import TurnText

FOLDS = 5
L2S = (0.1, 0.3, 1.0, 3.0, 10.0)


def _cached(cache: str, turn: dict) -> list[Idea]:
    path = WORK / cache / f"{turn['id']}.json"
    if not path.exists():
        return []
    ideas = map(Idea.model_validate, json.loads(path.read_text())["ideas"])
    return [i for i in ideas if not strays(i.summary, i.evidence)]


def tuning_examples() -> tuple[list[TurnText], list[Idea], list[int], list[int], list[str]]:
    """Every distinct candidate of the tuning half that the filter judges (not a fact, passed by the gate): its
    turn's text, the candidate, 1 when it holds a labelled piece, its turn's number; and the cached runs it read.
    Only turns with `split` "tune" are read."""
    turns = [t for t in load_turns() if t["split"] == "tune"]
    runs = (
        sorted(p.name for p in WORK.iterdir() if p.is_dir() and not p.name.startswith("code-")) if WORK.exists() else []
    )
    found: list[list[Idea]] = []
    for turn in turns:
        text = turn_text(job_of(turn).messages)
        ideas = candidates_without_model(text)
        if turn_gate.may_hold_knowledge(text):
            ideas += [i for run in runs for i in _cached(run, turn)]
        found.append(list({i.summary: i for i in ideas}.values()))
    verdicts = judge(turns, found)
    texts, ideas, targets, groups = [], [], [], []
    for number, (turn, mine, vs) in enumerate(zip(turns, found, verdicts, strict=True)):
        text = turn_text(job_of(turn).messages)
        for idea, verdict in zip(mine, vs, strict=True):
            if not keep.judges(idea) or not gate.keeps(idea, text):
                continue  # the filter judges what the gate passes, and not facts (the gate's)
            texts.append(text)
            ideas.append(idea)
            targets.append(int(verdict is not None))
            groups.append(number)
    return texts, ideas, targets, groups, runs


def _share(n: int, total: int) -> str:
    return f"{n} / {total} ({n / total:.0%})" if total else "0 / 0"


def nested(
    rows: Sequence[Sequence[float]], targets: Sequence[int], groups: Sequence[int], l2: float
) -> tuple[int, int, int, int]:
    """The filter as `--train` makes it (weights and threshold), made on four fifths of the tuning turns and
    applied to the fifth it did not see, for each fifth: (correct kept, correct, wrong dropped, wrong)."""
    kept = right = dropped = wrong = 0
    for fold in range(FOLDS):
        inside = [n for n in range(len(rows)) if groups[n] % FOLDS != fold]
        weights, threshold = keeping_every_positive(
            [rows[n] for n in inside],
            [targets[n] for n in inside],
            FOLDS,
            l2,
            [groups[n] // FOLDS for n in inside],
        )
        for n in range(len(rows)):
            if groups[n] % FOLDS == fold:
                passes = probability(weights, rows[n]) >= threshold
                right, kept = right + targets[n], kept + (targets[n] and passes)
                wrong, dropped = wrong + (not targets[n]), dropped + (not targets[n] and not passes)
    return kept, right, dropped, wrong


def main(argv: list[str]) -> None:
    texts, ideas, targets, groups, runs = tuning_examples()
    rows = [keep.features(i, t) for i, t in zip(ideas, texts, strict=True)]
    trials = {l2: nested(rows, targets, groups, l2) for l2 in L2S}
    # The strength of the regularisation: the one that drops the most wrong candidates it did not see without
    # losing a correct one (the stronger on a tie).
    l2 = max(L2S, key=lambda c: (trials[c][0] == trials[c][1], trials[c][2], c))
    if "--train" in argv:
        weights, threshold = keeping_every_positive(rows, targets, FOLDS, l2, groups)
        keep.LEARNED.save(
            weights,
            round(threshold, 4),
            {
                "trained_on": f"knowledge_turns.json tuning half, {len(rows)} candidates ({sum(targets)} positive) "
                f"from the cached runs {', '.join(runs)} and the path without the model",
                "labels_commit": _labels_commit(),
                "l2": l2,
            },
        )
    if keep.LEARNED.model is None:
        raise SystemExit(f"no trained keep filter at {keep.WEIGHTS}: run with --train")
    weights, threshold = keep.LEARNED.model
    saved_l2 = json.loads(keep.WEIGHTS.read_text()).get("l2", l2)
    trial_rows = [
        [f"{c:g}" + (" (chosen)" if c == l2 else ""), _share(k, r), _share(d, w)] for c, (k, r, d, w) in trials.items()
    ]
    whole = [probability(weights, r) >= threshold for r in rows]
    kept_right = sum(p for p, y in zip(whole, targets, strict=True) if y)
    dropped_wrong = sum(not p for p, y in zip(whole, targets, strict=True) if not y)
    weights_table = table(
        ["feature", "weight"], [[f, f"{w:+.2f}"] for f, w in zip(keep.FEATURES, weights, strict=True)]
    )
    body = (
        f"The keep filter (`summarize/keep.py`, weights in `keep.json`), trained on the tuning half of labels frozen "
        f"in {_labels_commit()}: the {len(rows)} distinct candidates of {len(set(groups))} turns it judges (rules, "
        f"decisions, gotchas, tasks the gate passes; {sum(targets)} hold a labelled piece) from the cached model "
        "answers of "
        f"{', '.join(f'`{r}`' for r in runs)} and the path without the model. Its threshold, {threshold:.4f}, is the "
        f"lowest score a correct candidate gets, from the whole fit or {FOLDS}-fold cross-validated "
        "by turn. The held-out figure is the replay's (`knowledge (replay)`).\n\n"
        f"Nested cross-validation by turn on the tuning half (weights and threshold made without the fifth of the "
        "turns they are applied to), for each strength of regularisation:\n\n"
        + table(["l2", "correct kept", "wrong dropped"], trial_rows)
        + f"\n\nThe trained filter on the tuning candidates (seen in training): correct kept "
        f"{_share(kept_right, sum(targets))}, wrong dropped {_share(dropped_wrong, len(targets) - sum(targets))}."
        f"\n\nWeights (l2 {saved_l2:g}; per unit of each feature):\n\n" + weights_table
    )
    write_section("keep", "uv run python -m bench keep" + (" --train" if "--train" in argv else ""), body)
    print(body)
