"""`python -m bench [NAME ...] [--flags]`: run benchmarks (runtime, ingest, summarize, knowledge, recall, reflect,
rough, secrets, secrets_heldout, service, executor, scale, scaleout, hard, next_session, fresh, compaction,
fixture_memories, slow_server, sources, heavy, redaction_speed).

All of them when none is named; each rewrites its section of bench/results.md. `selection` runs only when
named, with a package the product does not use: `uv run --with onnxruntime==1.32.0 python -m bench selection`.
"""

from __future__ import annotations

import sys

from bench import (
    compaction,
    executor,
    fixture_memories,
    fresh,
    hard,
    heavy,
    ingest,
    knowledge,
    next_session,
    recall,
    redaction_speed,
    reflect,
    rough,
    runtime,
    scale,
    scaleout,
    screenshots,
    secrets,
    secrets_heldout,
    selection,
    service,
    slow_server,
    sources,
    summarize,
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
    "fixture_memories": fixture_memories.main,
    "fresh": fresh.main,
    "compaction": compaction.main,
    "slow_server": slow_server.main,
    "sources": sources.main,
    "heavy": heavy.main,
    "redaction_speed": redaction_speed.main,
}
# Not a measurement: `python -m bench screenshots` (make screenshots) redraws docs/screenshots/.
TOOLS = {"screenshots": screenshots.main}
# Only when named: it needs onnxruntime, which only this measurement uses (see bench/selection.py).
NAMED_ONLY = {"selection": selection.main}


def main() -> None:
    names = [a for a in sys.argv[1:] if not a.startswith("--")] or list(BENCHMARKS)
    flags = [a for a in sys.argv[1:] if a.startswith("--")]
    for name in names:
        (BENCHMARKS | TOOLS | NAMED_ONLY)[name](flags)


if __name__ == "__main__":
    main()
