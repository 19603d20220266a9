"""Persistent memory for coding agents.

Dagster announces on stderr every beta or preview parameter the pipeline uses (`backfill_policy` on each daily
asset: 13 pairs of lines in every process that loads the definitions) and its own superseded commands (`dagster
dev`): notices for Dagster's developers, nothing a person running `make run`, `backfill` or a benchmark can act
on. Those three classes, and only those (a deprecation still shows: it says what will break), are ignored in
every process that imports the package: the CLI, the benchmarks, Dagster's code server and run workers (they
load the definitions), and `dagster dev` itself, which `memory-pipeline dev` starts through
`memory_pipeline.local.dagster_cli`. (`PYTHONWARNINGS` cannot carry them to other processes: the interpreter
reads it before site-packages are importable. Dagster's webserver and daemon print none of them.)
`dagster_shared` is Dagster's small base package: ~20 ms, not Dagster's seconds.
"""

from __future__ import annotations

import warnings

from dagster_shared.utils.warnings import BetaWarning, PreviewWarning, SupersessionWarning

for _notice in (BetaWarning, PreviewWarning, SupersessionWarning):
    warnings.filterwarnings("ignore", category=_notice)
