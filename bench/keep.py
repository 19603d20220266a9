"""The keep filter's training and its one held-out evaluation (issue 43): the learned per-memory filter of
`memory_pipeline.summarize.keep`, which writes `memory_pipeline/summarize/keep.json`.

`uv run python -m bench keep [--final]`.

The filter is a logistic regression (`summarize.logistic`) over plain features of a rule, decision, gotcha or task
and its evidence. Neither its kind nor who spoke is a feature (the first filter, reverted in 07ab1c9, learned
"first person, said by the person" as a negative from ten examples and dropped the person's preferences); it
reads how much of the memory its evidence and its turn hold, its length, a plan or a status report, a hedge,
a question, an order at its end, a document's line, and whether its evidence is the person's own message (see
`FEATURES` for two features left out, for the same reason).

Trained on the tuning halves only: sets A and B (`knowledge_turns.json`, `knowledge_turns_b.json`), the
candidates of the path without the model and the embedded model's cached answers of each (bench/.work/knowledge,
after the faithfulness check runs anew, as `bench knowledge --replay` does). A candidate is positive when it
holds a labelled piece of its turn (`bench.knowledge.judge`). The threshold keeps every positive, also
cross-validated by turn; the regularisation is chosen by nested cross-validation by turn.

Without `--final` nothing of set B's held-out half is read. With `--final` (run once) the trained filter is
applied to set B's held-out half, without the model and on the model's cached answers when they exist, and every
labelled preference or rule of the person that had a correct memory before and lost it is listed.

Outcome (bench/results.md, `keep (final, set B held-out)`): with the embedded model, precision 12% -> 26%,
other turns with a memory 28% -> 12%, memories from trap turns 7 -> 0, one correct memory of a person's rule
lost (kb-113). Shipped since stop 55 (`summarize.gate.keeps` calls it for every kind but a fact); the weights are
the ones that final evaluation read, not retrained after it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from bench.knowledge import (
    LABEL_SETS,
    _caches,
    _code_version,
    _labels_commit,
    _share,
    figures,
    job_of,
    judge,
    load_turns,
    model_candidates,
)
from bench.results_file import table, write_section
from memory_pipeline.language.kinds import Kind
from memory_pipeline.summarize import gate
from memory_pipeline.summarize.compose import make_idea
from memory_pipeline.summarize.extract import candidates_without_model
from memory_pipeline.summarize.ideas import Idea
from memory_pipeline.summarize.keep import FEATURES, LEARNED, features, judges
from memory_pipeline.summarize.logistic import fit, probability
from memory_pipeline.summarize.prompt import TurnMessage, turn_text
from memory_pipeline.summarize.trust import TurnText
from testkit.preferences import PREFERENCES

FOLDS = 5
# Set C is read only to report: trained on with A and B, both filters did worse on B's and C's held-out halves
# (bench/results.md, "knowledge (knowledge_turns_c)"), so it stays a set nobody tuned for, whole.
TRAINING_SETS = ("a", "b")
L2S = (0.1, 0.3, 1.0, 3.0, 10.0)


def _saved() -> tuple[tuple[float, ...], float]:
    """The shipped filter's weights and threshold (`summarize.keep.LEARNED`, which reads `keep.json`)."""
    if LEARNED.model is None:
        raise SystemExit(f"{LEARNED.path} is missing or was trained on other features: run `python -m bench keep`")
    return LEARNED.model


# --- the candidates ------------------------------------------------------------------------------------------


def _model_version() -> str | None:
    """The cache folder `bench knowledge` fills with this code and the running chat model, if it answers."""
    from memory_pipeline.settings import load_settings
    from memory_pipeline.stores.llm import chat_client

    try:
        with chat_client(load_settings(), timeout=30) as client:
            model = client.model_id()
    except Exception:  # noqa: BLE001 - no server: the model's cached answers are simply not read
        return None
    return hashlib.sha1(f"{model}|{_code_version()}".encode()).hexdigest()[:12]


def _sets() -> str:
    """The labelled sets trained on, each with the commit that froze it."""
    return ", ".join(f"{LABEL_SETS[name].name} ({_labels_commit(LABEL_SETS[name])})" for name in TRAINING_SETS)


def tuning_examples(
    caches: Sequence[Path],
    judged: Callable[[Idea], bool] = judges,
    featurize: Callable[[Idea, TurnText], list[float]] = features,
) -> tuple[list[list[float]], list[int], list[int], list[tuple]]:
    """Every distinct candidate of both tuning halves a filter judges (`judged`: the keep filter's kinds, or the
    fact gate's facts): its features, 1 when it holds a labelled piece, its turn's number, and (set, turn id,
    summary, label) to read."""
    rows, targets, groups, about = [], [], [], []
    number = 0
    for name in TRAINING_SETS:
        turns = [t for t in load_turns(LABEL_SETS[name]) if t["split"] == "tune"]  # never the held-out half
        found = []
        for turn in turns:
            text = turn_text(job_of(turn).messages)
            ideas = candidates_without_model(text) + model_candidates(turn, caches)[0]
            found.append(list({i.summary: i for i in ideas}.values()))
        for turn, mine, verdicts in zip(turns, found, judge(turns, found), strict=True):
            text = turn_text(job_of(turn).messages)
            for idea, verdict in zip(mine, verdicts, strict=True):
                if judged(idea):
                    rows.append(featurize(idea, text))
                    targets.append(int(verdict is not None))
                    groups.append(number)
                    label = turn["knowledge"][verdict] if verdict is not None else None
                    about.append((name, turn["id"], idea.summary, label))
            number += 1
    return rows, targets, groups, about


def keeping_every_positive(rows, targets, groups, l2: float) -> tuple[list[float], float]:  # noqa: ANN001
    """Weights fitted on every row and the lowest score a positive row gets, from the whole fit or from a fit by
    turn that did not see it (a positive lost costs more than a negative kept)."""
    weights = fit(rows, targets, l2=l2)
    lowest = [probability(weights, r) for r, y in zip(rows, targets, strict=True) if y]
    for fold in range(FOLDS):
        inside = [n for n in range(len(rows)) if groups[n] % FOLDS != fold]
        partial = fit([rows[n] for n in inside], [targets[n] for n in inside], l2=l2)
        lowest += [probability(partial, rows[n]) for n in range(len(rows)) if groups[n] % FOLDS == fold and targets[n]]
    return weights, min(lowest) if lowest else 0.0


def nested(rows, targets, groups, l2: float) -> tuple[int, int, int, int, list[int]]:  # noqa: ANN001
    """The filter made on four fifths of the tuning turns, applied to the fifth it did not see: (correct kept,
    correct, wrong dropped, wrong, the rows of correct candidates lost)."""
    kept = right = dropped = wrong = 0
    lost = []
    for fold in range(FOLDS):
        inside = [n for n in range(len(rows)) if groups[n] % FOLDS != fold]
        weights, threshold = keeping_every_positive(
            [rows[n] for n in inside], [targets[n] for n in inside], [groups[n] // FOLDS for n in inside], l2
        )
        for n in range(len(rows)):
            if groups[n] % FOLDS == fold:
                passes = probability(weights, rows[n]) >= threshold
                right, kept = right + targets[n], kept + (targets[n] and passes)
                wrong, dropped = wrong + (not targets[n]), dropped + (not targets[n] and not passes)
                if targets[n] and not passes:
                    lost.append(n)
    return kept, right, dropped, wrong, lost


def preferences_kept(model: tuple[Sequence[float], float]) -> tuple[bool, list[list[str]]]:
    """Whether the four preferences are kept, each memory of them with its score."""
    weights, threshold = model
    rows, every = [], True
    for said, kind, written in PREFERENCES:
        turn = turn_text([TurnMessage("user", said), TurnMessage("assistant", "Understood.")])
        idea = make_idea(kind, written, said, "user")
        assert idea is not None, written
        own = [i for i in candidates_without_model(turn) if judges(i)]
        for how, memory in [("as the model would write it", idea), *(("without the model", i) for i in own)]:
            score = probability(weights, features(memory, turn))
            every &= score >= threshold
            rows.append([how, memory.summary, f"{score:.3f}", "kept" if score >= threshold else "**dropped**"])
    return every, rows


def _preference_table(model: tuple[Sequence[float], float]) -> str:
    every, rows = preferences_kept(model)
    return (
        f"\n\nThe four preferences the first filter dropped (threshold {model[1]:.4f}): "
        + ("all kept" if every else "**NOT all kept**")
        + ".\n\n"
        + table(["memory", "text", "score", ""], rows)
    )


def is_preference(label: dict) -> bool:
    """A person's preference or rule: what they stated as a rule or a decision."""
    return label["side"] == "user" and label["kind"] in ("rule", "decision")


def train(caches: Sequence[Path]) -> str:
    rows, targets, groups, about = tuning_examples(caches)
    trials = {l2: nested(rows, targets, groups, l2) for l2 in L2S}
    # The strength that drops the most unseen wrong candidates without losing an unseen correct one, else the one
    # that loses fewest (the stronger on a tie).
    l2 = max(L2S, key=lambda c: (-(trials[c][1] - trials[c][0]), trials[c][2], c))
    weights, threshold = keeping_every_positive(rows, targets, groups, l2)
    record = {
        "l2": l2,
        "trained_on": f"tuning halves of {_sets()}: {len(rows)} candidates ({sum(targets)} positive) from the path "
        f"without the model and the cached model answers of {', '.join(c.name for c in caches)}",
    }
    LEARNED.save(weights, round(threshold, 4), record)
    lost_rows = [
        [about[n][0], about[n][1], about[n][2], f"{about[n][3]['kind']} ({about[n][3]['side']})"] for n in trials[l2][4]
    ]
    body = (
        f"Trained on {record['trained_on']}; threshold {threshold:.4f} (the lowest score of a correct candidate, "
        f"whole fit or {FOLDS}-fold by turn), l2 {l2:g}.\n\nNested cross-validation by turn on the tuning "
        "halves (made without the fifth of the turns it is applied to):\n\n"
        + table(
            ["l2", "correct kept", "wrong dropped"],
            [
                [f"{c:g}" + (" (chosen)" if c == l2 else ""), _share(k, r), _share(d, w)]
                for c, (k, r, d, w, _) in trials.items()
            ],
        )
        + "\n\nCorrect tuning candidates the chosen strength lost unseen:\n\n"
        + (table(["set", "turn", "memory", "label"], lost_rows) if lost_rows else "(none)")
        + _preference_table((weights, threshold))
        + "\n\nWeights:\n\n"
        + table(["feature", "weight"], [[f, f"{w:+.2f}"] for f, w in zip(FEATURES, weights, strict=True)])
    )
    return body


# --- the fact gate (`summarize.gate`), on the same tuning candidates -------------------------------------------


def best_f1_threshold(scores: Sequence[float], targets: Sequence[int]) -> tuple[float, float]:
    """The threshold with the best F1 over `scores` (the higher on a tie), and that F1."""
    positives = sum(targets)
    best, best_f1 = 0.5, -1.0
    for threshold in np.arange(0.05, 0.95, 0.025):
        kept = [y for p, y in zip(scores, targets, strict=True) if p >= threshold]
        hit = sum(kept)
        precision, recall = (hit / len(kept) if kept else 0.0), (hit / positives if positives else 0.0)
        f1 = 2 * precision * recall / (precision + recall) if hit else 0.0
        if f1 >= best_f1:
            best, best_f1 = float(threshold), f1
    return best, best_f1


def gate_trial(rows, targets, groups, l2: float) -> tuple[int, int, int]:  # noqa: ANN001
    """The gate made on four fifths of the tuning turns (weights and threshold), applied to the fifth it did not
    see: (correct kept, correct, kept)."""
    hit = right = kept = 0
    for fold in range(FOLDS):
        inside = [n for n in range(len(rows)) if groups[n] % FOLDS != fold]
        weights = fit([rows[n] for n in inside], [targets[n] for n in inside], l2=l2)
        threshold, _ = best_f1_threshold([probability(weights, rows[n]) for n in inside], [targets[n] for n in inside])
        for n in range(len(rows)):
            if groups[n] % FOLDS == fold:
                passes = probability(weights, rows[n]) >= threshold
                right, hit, kept = right + targets[n], hit + (targets[n] and passes), kept + passes
    return hit, right, kept


def train_gate(caches: Sequence[Path]) -> str:
    """Fit the fact gate on both tuning halves' facts; the regularisation the one whose gate, made without a
    fifth of the turns, has the best F1 on that fifth (the stronger on a tie); the threshold the best F1 on every
    tuning row. The held-out half is never read here."""
    rows, targets, groups, _ = tuning_examples(caches, lambda i: i.kind is Kind.FACT, gate.features)
    trials = {l2: gate_trial(rows, targets, groups, l2) for l2 in L2S}

    def f1(trial: tuple[int, int, int]) -> float:
        hit, right, kept = trial
        return 2 * hit / (right + kept) if hit else 0.0

    l2 = max(L2S, key=lambda c: (f1(trials[c]), c))
    weights = fit(rows, targets, l2=l2)
    threshold, _ = best_f1_threshold([probability(weights, r) for r in rows], targets)
    record = {
        "l2": l2,
        "trained_on": f"facts of the tuning halves of {_sets()}: {len(rows)} candidates ({sum(targets)} positive) "
        f"from the path without the model and the cached model answers of {', '.join(c.name for c in caches)}",
    }
    gate.LEARNED.save(weights, round(threshold, 3), record)
    return (
        f"Trained on {record['trained_on']}; threshold {threshold:.3f} (the best F1 on the tuning rows), l2 {l2:g}."
        "\n\nCross-validation by turn on the tuning halves (weights and threshold made without the fifth of the "
        "turns they are applied to):\n\n"
        + table(
            ["l2", "correct kept", "kept", "F1"],
            [
                [f"{c:g}" + (" (chosen)" if c == l2 else ""), _share(h, r), str(k), f"{f1((h, r, k)):.2f}"]
                for c, (h, r, k) in trials.items()
            ],
        )
        + "\n\nWeights:\n\n"
        + table(["feature", "weight"], [[f, f"{w:+.2f}"] for f, w in zip(gate.FEATURES, weights, strict=True)])
    )


# --- the one final evaluation on set B's held-out half ------------------------------------------------------


def _evaluate(turns: list[dict], found: list[list[Idea]], model) -> tuple[dict, dict, list[list[str]]]:  # noqa: ANN001
    texts = [turn_text(job_of(t).messages) for t in turns]
    before = [[i for i in ideas if judges(i) or gate.keeps(i, x)] for ideas, x in zip(found, texts, strict=True)]
    after = [
        [i for i in ideas if not judges(i) or probability(model[0], features(i, x)) >= model[1]]
        for ideas, x in zip(before, texts, strict=True)
    ]
    vb, va = judge(turns, before), judge(turns, after)
    lost = []
    for t, ib, vsb, vsa in zip(turns, before, vb, va, strict=True):
        had = {v for v in vsb if v is not None}
        has = {v for v in vsa if v is not None}
        for j in sorted(had - has):
            label = t["knowledge"][j]
            gone = [i.summary for i, v in zip(ib, vsb, strict=True) if v == j]
            mark = "yes" if is_preference(label) else "no"
            lost.append([t["id"], mark, f"{label['kind']} ({label['side']}): {label['statement']}", " / ".join(gone)])
    return figures(turns, before, vb), figures(turns, after, va), lost


def final(model_caches: Sequence[Path], version: str | None) -> str:
    model = _saved()
    turns = [t for t in load_turns(LABEL_SETS["b"]) if t["split"] == "held_out"]
    body = f"Set B held-out half ({len(turns)} turns), labels frozen in {_labels_commit(LABEL_SETS['b'])}.\n"
    paths = {"without the model": [candidates_without_model(turn_text(job_of(t).messages)) for t in turns]}
    got = [model_candidates(t, model_caches, version) for t in turns]
    read = [t for t, (_, seen) in zip(turns, got, strict=True) if seen]
    if read:
        covered = [n for n, (_, seen) in enumerate(got) if seen]
        paths[f"embedded model (cached answers, {len(read)} turns)"] = [got[n][0] for n in covered]
    body += f"\nThe model's cached answers cover {len(read)} / {len(turns)} held-out turns " + (
        f"({', '.join(c.name for c in model_caches)}).\n" if model_caches else "(no cache of this code).\n"
    )
    for path, found in paths.items():
        some = turns if len(found) == len(turns) else [t for t, (_, seen) in zip(turns, got, strict=True) if seen]
        b, a, lost = _evaluate(some, found, model)
        body += f"\n### {path}\n\n" + table(
            ["", "before (gate only)", "with the keep filter"], [[m, b[m], a[m]] for m in b]
        )
        body += "\n\nLabelled pieces with a correct memory before and none with the filter (preference: a rule or "
        body += "decision the person stated):\n\n"
        body += table(["turn", "preference", "label", "memory dropped"], lost) if lost else "(none)"
        body += "\n"
    return body + _preference_table(model)


def main(argv: list[str]) -> None:
    version = _model_version()
    caches = _caches()
    if "--gate" in argv:
        body = train_gate(caches)
        write_section("fact gate", "uv run python -m bench keep --gate", body)
    elif "--final" in argv:
        model_caches = [c for c in caches if version and c.name == version]
        body = final(model_caches, version)
        write_section("keep (final, set B held-out)", "uv run python -m bench keep --final", body)
    else:
        body = train(caches)
        write_section("keep", "uv run python -m bench keep", body)
    print(body)
