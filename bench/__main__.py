"""`python -m bench [NAME ...] [--flags]`: run benchmarks (runtime, ingest, summarize, knowledge, recall, reflect,
rough, secrets, secrets_heldout, service, executor, scale, scaleout, hard, next_session, needs, fresh, compaction,
fixture_memories, slow_server, sources, turn_gate, samples, heavy, redaction_speed, stage_speed, followthrough,
person_words, sentence_ceiling);
`faults` only when named (it runs test files).

All of them when none is named; each rewrites its section of bench/results.md. `selection` runs only when
named, with a package the product does not use: `uv run --with onnxruntime==1.32.0 python -m bench selection`.
"""

from __future__ import annotations

import sys

from bench import (
    compaction,
    executor,
    faithful,
    faults,
    fixture_memories,
    followthrough,
    fresh,
    hard,
    heavy,
    ingest,
    keep,
    knowledge,
    needs,
    needs_real,
    next_session,
    person_words,
    recall,
    redaction_speed,
    reflect,
    rough,
    runtime,
    samples,
    scale,
    scaleout,
    screenshots,
    secrets,
    secrets_heldout,
    selection,
    sentence_ceiling,
    service,
    slow_server,
    sources,
    stage_speed,
    summarize,
    turn_gate,
)

BENCHMARKS = {
    "runtime": runtime.main,
    "ingest": ingest.main,
    "summarize": summarize.main,
    "knowledge": knowledge.main,
    "recall": recall.main,
    "reflect": reflect.main,
    "rough": rough.main,
    "secrets": secrets.main,
    "secrets_heldout": secrets_heldout.main,
    "service": service.main,
    "executor": executor.main,
    "scale": scale.main,
    "scaleout": scaleout.main,
    "hard": hard.main,
    "next_session": next_session.main,
    "needs": needs.main,
    "fixture_memories": fixture_memories.main,
    "fresh": fresh.main,
    "compaction": compaction.main,
    "slow_server": slow_server.main,
    "sources": sources.main,
    "turn_gate": turn_gate.main,
    "samples": samples.main,
    "heavy": heavy.main,
    "redaction_speed": redaction_speed.main,
    "stage_speed": stage_speed.main,
    "followthrough": followthrough.main,
    "person_words": person_words.main,
    "sentence_ceiling": sentence_ceiling.main,
}
# Not a measurement: `python -m bench screenshots` (make screenshots) redraws docs/screenshots/.
TOOLS = {"screenshots": screenshots.main}
# Only when named: it needs onnxruntime, which only this measurement uses (see bench/selection.py).
# `needs_real` reads a checkout of a public history that is not in the repository (bench/needs_real.py).
# `faults` runs test files, minutes each.
# `faithful` reads the fixtures and the 37 labelled turns with the model (its answers cached for the next run).
NAMED_ONLY = {
    "selection": selection.main,
    "keep": keep.main,  # an experiment (issue 43): `--final` reads set B's held-out half
    "needs_real": needs_real.main,
    "faults": faults.main,
    "faithful": faithful.main,
}


def main() -> None:
    names = [a for a in sys.argv[1:] if not a.startswith("--")] or list(BENCHMARKS)
    flags = [a for a in sys.argv[1:] if a.startswith("--")]
    for name in names:
        (BENCHMARKS | TOOLS | NAMED_ONLY)[name](flags)


if __name__ == "__main__":
    main()
