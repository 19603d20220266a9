"""A person's preferences in the forms the first per-memory filter (reverted in 07ab1c9) dropped: the samples' pnpm
rule and Jest-to-Vitest decision, and two written for the check. The keep filter (`summarize.keep`) must keep
each, as the model would write it and as the path without the model composes it: its unit test and its training
(`bench keep`) read them from here."""

from __future__ import annotations

from memory_pipeline.language.kinds import Kind

PNPM = (
    "Before you install anything: in this repo we always use pnpm, never npm or yarn. The lockfile is "
    "pnpm-lock.yaml and CI fails when a package-lock.json shows up."
)
VITEST = (
    "Let's move the tests from Jest to Vitest. We decided this because Jest keeps breaking on our ESM imports and "
    "needs a Babel transform just for that, while Vitest runs ESM natively and reuses the Vite config."
)
# (what the person said, the kind, the memory as the model would write it)
PREFERENCES: tuple[tuple[str, Kind, str], ...] = (
    (PNPM, Kind.RULE, "Always use pnpm, never npm or yarn."),
    (VITEST, Kind.DECISION, "Use Vitest instead of Jest, because Jest keeps breaking on our ESM imports."),
    ("I prefer tabs over spaces in this repo.", Kind.RULE, "I prefer tabs over spaces in this repo."),
    ("Use 2-space indentation in Python files.", Kind.RULE, "Use 2-space indentation in Python files."),
)
