"""The keep filter, tried again (issue 43): does a learned per-memory filter earn its place once it has labels
with a person's preferences in many forms? An experiment in bench/ only: nothing in the product reads it.

`uv run python -m bench keep [--final]`.

The filter is a logistic regression (`summarize.logistic`) over plain features of a rule, decision, gotcha or task
and its evidence. Neither its kind nor who spoke is a feature (the first filter, reverted in 07ab1c9, learned
"first person, said by the person" as a negative from ten examples and dropped the person's preferences); it
reads how much of the memory its evidence and its turn hold, its length, a plan or a status report, a hedge,
a question, an order at its end, a document's line, and whether its evidence is the person's own message (see
`FEATURES` for two features left out, for the same reason).

Trained on the tuning halves only: set A (`knowledge_turns.json`) and set B (`knowledge_turns_b.json`), the
candidates of the path without the model and the embedded model's cached answers of each (bench/.work/knowledge,
after the faithfulness check runs anew, as `bench knowledge --replay` does). A candidate is positive when it
holds a labelled piece of its turn (`bench.knowledge.judge`). The threshold keeps every positive, also
cross-validated by turn; the regularisation is chosen by nested cross-validation by turn.

Without `--final` nothing of set B's held-out half is read. With `--final` (run once) the trained filter is
applied to set B's held-out half, without the model and on the model's cached answers when they exist, and every
labelled preference or rule of the person that had a correct memory before and lost it is listed.

Outcome (bench/results.md, `keep (final, set B held-out)`): precision up (model 12% -> 26%) but one correct
memory of a person's rule lost (kb-113): it did not earn its place, and nothing in the product reads it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.knowledge import LABEL_SETS, WORK, _code_version, _labels_commit, figures, job_of, judge, load_turns
from bench.results_file import table, write_section
from memory_pipeline.language.kinds import Kind
from memory_pipeline.language.words import content_words, words
from memory_pipeline.sentences import sentences
from memory_pipeline.summarize import gate, turn_gate
from memory_pipeline.summarize.compose import distinct, make_idea
from memory_pipeline.summarize.extract import TurnOutcome, candidates_without_model, check_faithful
from memory_pipeline.summarize.gate import DOCUMENT_LINE
from memory_pipeline.summarize.ideas import Idea
from memory_pipeline.summarize.knowledge import is_request
from memory_pipeline.summarize.logistic import fit, probability
from memory_pipeline.summarize.prompt import TurnMessage, turn_text
from memory_pipeline.summarize.trust import TurnText, support

WEIGHTS = Path(__file__).with_name("keep.json")
FOLDS = 5
L2S = (0.1, 0.3, 1.0, 3.0, 10.0)
HEAD_WORDS = 3
# Left out, besides kind and speaker: the lexicon's marker of a lasting statement in the evidence (kind by another
# name: the tuning half's correct memories mostly say "always" or "never", so a fit on it drops "Use 2-space
# indentation in Python files.", 0.151 < 0.223), and the share of the evidence the memory keeps (it learned that a
# verbatim copy of the person's sentence is wrong, from the path without the model copying sentences that are).
FEATURES = (
    "bias",
    "share of its content words absent from its evidence",
    "share of its content words absent from the turn",
    "share of its first content words absent from its evidence",
    "opens on a plan or an intention",
    "reports the state of the work",
    "a hedge or a modal opener",
    "a question",
    "ends on a short order",
    "its evidence is in the person's message",
    "content words / 10",
    "fewer than three content words",
    "more than one sentence",
    "markdown marks (bold, list, heading)",
    "evidence in a message that is a document (headings, many list lines)",
)
# What the speaker means to do, not what is known ("To determine if …", "Let me check …", "We need to add …").
INTENTION = re.compile(
    r"(?i)^(?:let me|let's|i'?ll|i will|i'?m going to|we'?ll|we will|i need to|we need to|now i|now let's|next,? i)\b"
    r"|^to (?:determine|investigate|understand|find out|check|see|verify|figure out|debug|analy[sz]e)\b"
)
# The state of the work as reported ("X is now 885 lines", "Added …"), not knowledge that lasts.
STATUS = re.compile(
    r"(?i)\b(?:is|are|was|were) now\b|\b\d+ (?:lines|files|tests)\b|\bstill (?:needs|compiling|running|failing)\b"
    r"|^(?:i'?ve |we'?ve )?(?:added|removed|fixed|updated|created|implemented|moved|reverted|renamed|refactored)\b"
)
# A statement that is not sure of itself: "Maybe …", "It might be …", "I think …", "Perhaps …".
HEDGE = re.compile(
    r"(?i)^(?:maybe|perhaps|possibly|probably|might|could|it seems|seems|i think|i guess|i wonder|not sure)\b"
    r"|\b(?:maybe|perhaps|possibly|might be|not sure|i guess|i wonder)\b"
)
_MARKDOWN = re.compile(r"\*\*|^\s*(?:[-*] |#{1,6} )|`[^`]*`:")


def head_words(text: str, n: int = HEAD_WORDS) -> list[str]:
    found: list[str] = []
    for word in words(text):
        for stem in content_words(word):
            if stem not in found:
                found.append(stem)
    return found[:n]


def absent(wanted: Sequence[str] | set[str], source: str) -> float:
    if not wanted:
        return 0.0
    have = content_words(source)
    return sum(w not in have for w in wanted) / len(wanted)


def ends_on_order(text: str) -> bool:
    said = sentences(text)
    last = said[-1] if len(said) > 1 else ""
    return bool(last) and len(words(last)) <= 4 and is_request(last)


def _in_document(evidence: str, turn: TurnText) -> bool:
    return any(
        evidence and evidence[:60] in message and len(DOCUMENT_LINE.findall(message)) >= 5
        for message in (turn.user, turn.other)
    )


def features(idea: Idea, turn: TurnText) -> list[float]:
    """The memory's plain features, in the order of `FEATURES` (its kind and its speaker are not among them)."""
    text, evidence = idea.summary, idea.evidence or idea.summary
    mine = content_words(text)
    return [
        1.0,
        1.0 - support(text, evidence),
        1.0 - support(text, turn.everything),
        absent(head_words(text), evidence),
        float(bool(INTENTION.match(text.strip()))),
        float(bool(STATUS.search(text.strip()))),
        float(bool(HEDGE.search(text.strip()))),
        float(text.rstrip().endswith("?")),
        float(ends_on_order(text)),
        float(bool(evidence) and evidence[:60] in turn.user),
        len(mine) / 10,
        float(len(mine) < 3),
        float(len(sentences(text)) > 1),
        float(bool(_MARKDOWN.search(text))),
        float(_in_document(evidence, turn)),
    ]


def judges(idea: Idea) -> bool:
    """What the filter judges: not a fact (the learned gate's, `gate.keeps`)."""
    return idea.kind is not Kind.FACT


def keeps(idea: Idea, turn: TurnText, model: tuple[Sequence[float], float] | None = None) -> bool:
    weights, threshold = model or _saved()
    return not judges(idea) or probability(weights, features(idea, turn)) >= threshold


def _saved() -> tuple[list[float], float]:
    data = json.loads(WEIGHTS.read_text())
    if data["features"] != list(FEATURES):
        raise SystemExit(f"{WEIGHTS} was trained on other features: run `python -m bench keep`")
    return data["weights"], data["threshold"]


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


MAIN_WORK = Path("/work/main/bench/.work/knowledge")  # where the runs from the main checkout cache the model


def _caches() -> list[Path]:
    """Every folder of the model's cached answers, here and in the main checkout's runs."""
    found = [p for w in (WORK, MAIN_WORK) if w.exists() for p in w.iterdir()]
    return sorted((p for p in found if p.is_dir() and not p.name.startswith("code-")), key=lambda p: p.name)


def model_candidates(
    turn: dict[str, Any], caches: Sequence[Path], current: str | None = None
) -> tuple[list[Idea], bool]:
    """The embedded model's candidates of `turn` from every cache that holds it (the faithfulness check run
    anew on earlier code's answers), as the pipeline reads a turn (the turn gate spares some: their own words
    only); and whether any was."""
    text = turn_text(job_of(turn).messages)
    if not turn_gate.may_hold_knowledge(text):
        return candidates_without_model(text), True
    ideas, seen = [], False
    for cache in caches:
        path = cache / f"{turn['id']}.json"
        if path.exists():
            seen = True
            cached = [Idea.model_validate(i) for i in json.loads(path.read_text())["ideas"]]
            if cache.name == current:  # this code's own answers, checked already: as `bench knowledge` reads them
                ideas += cached
            else:
                ideas += distinct(check_faithful(cached, text, TurnOutcome("", "", status="summarised")))
    return list({i.summary: i for i in ideas}.values()), seen


def tuning_examples(caches: Sequence[Path]) -> tuple[list[list[float]], list[int], list[int], list[tuple]]:
    """Every distinct candidate of both tuning halves the filter judges (passed by the gate, not a fact): its
    features, 1 when it holds a labelled piece, its turn's number, and (set, turn id, summary, label) to read."""
    rows, targets, groups, about = [], [], [], []
    number = 0
    for name in ("a", "b"):
        turns = [t for t in load_turns(LABEL_SETS[name]) if t["split"] == "tune"]  # never the held-out half
        found = []
        for turn in turns:
            text = turn_text(job_of(turn).messages)
            ideas = candidates_without_model(text) + model_candidates(turn, caches)[0]
            found.append(list({i.summary: i for i in ideas}.values()))
        for turn, mine, verdicts in zip(turns, found, judge(turns, found), strict=True):
            text = turn_text(job_of(turn).messages)
            for idea, verdict in zip(mine, verdicts, strict=True):
                if judges(idea) and gate.keeps(idea, text):
                    rows.append(features(idea, text))
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


# The four preferences the first filter dropped (07ab1c9): the samples' pnpm rule and Jest-to-Vitest decision,
# two written for the check. Each must be kept, as the model would write it and as the path without the model
# makes it (tests and benchmarks share only testkit, so the check is here, run with every training and the final).
PNPM = (
    "Before you install anything: in this repo we always use pnpm, never npm or yarn. The lockfile is "
    "pnpm-lock.yaml and CI fails when a package-lock.json shows up."
)
VITEST = (
    "Let's move the tests from Jest to Vitest. We decided this because Jest keeps breaking on our ESM imports and "
    "needs a Babel transform just for that, while Vitest runs ESM natively and reuses the Vite config."
)
PREFERENCES = (
    (PNPM, Kind.RULE, "Always use pnpm, never npm or yarn."),
    (VITEST, Kind.DECISION, "Use Vitest instead of Jest, because Jest keeps breaking on our ESM imports."),
    ("I prefer tabs over spaces in this repo.", Kind.RULE, "I prefer tabs over spaces in this repo."),
    ("Use 2-space indentation in Python files.", Kind.RULE, "Use 2-space indentation in Python files."),
)


def preferences_kept(model: tuple[Sequence[float], float]) -> tuple[bool, list[list[str]]]:
    """Whether the four preferences are kept, each memory of them with its score."""
    weights, threshold = model
    rows, every = [], True
    for said, kind, written in PREFERENCES:
        turn = turn_text([TurnMessage("user", said), TurnMessage("assistant", "Understood.")])
        idea = make_idea(kind, written, said, "user")
        assert idea is not None, written
        own = [i for i in candidates_without_model(turn) if gate.keeps(i, turn) and judges(i)]
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


def _share(n: int, total: int) -> str:
    return f"{n} / {total} ({n / total:.0%})" if total else "0 / 0"


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
        "features": list(FEATURES),
        "weights": weights,
        "threshold": round(threshold, 4),
        "l2": l2,
        "trained_on": f"tuning halves of knowledge_turns.json ({_labels_commit()}) and knowledge_turns_b.json "
        f"({_labels_commit(LABEL_SETS['b'])}): {len(rows)} candidates ({sum(targets)} positive) from the path "
        f"without the model and the cached model answers of {', '.join(c.name for c in caches)}",
    }
    WEIGHTS.write_text(json.dumps(record, indent=1) + "\n")
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


# --- the one final evaluation on set B's held-out half ------------------------------------------------------


def _evaluate(turns: list[dict], found: list[list[Idea]], model) -> tuple[dict, dict, list[list[str]]]:  # noqa: ANN001
    texts = [turn_text(job_of(t).messages) for t in turns]
    before = [[i for i in ideas if gate.keeps(i, x)] for ideas, x in zip(found, texts, strict=True)]
    after = [[i for i in ideas if keeps(i, x, model)] for ideas, x in zip(before, texts, strict=True)]
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
    if "--final" in argv:
        model_caches = [c for c in caches if version and c.name == version]
        body = final(model_caches, version)
        write_section("keep (final, set B held-out)", "uv run python -m bench keep --final", body)
    else:
        body = train(caches)
        write_section("keep", "uv run python -m bench keep", body)
    print(body)
