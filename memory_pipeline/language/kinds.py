"""The kinds of knowledge a memory holds, and the priority each earns."""

from __future__ import annotations

from enum import StrEnum

from memory_pipeline.language.lexicon import kind_marked


class Kind(StrEnum):
    RULE = "rule"  # a rule or preference: how work is to be done here
    DECISION = "decision"  # a choice made, with what it replaced and why
    GOTCHA = "gotcha"  # a gotcha or root cause: what broke, why, what fixes it
    FACT = "fact"  # a fact about the project: a command, port, path, value
    TASK = "task"  # an open task: what is still to do


# The priority a kind earns: durable knowledge is high, working facts medium, open tasks low.
KIND_PRIORITY = {
    Kind.RULE: "high",
    Kind.DECISION: "high",
    Kind.GOTCHA: "high",
    Kind.FACT: "medium",
    Kind.TASK: "low",
}


def kind_of(text: str) -> Kind | None:
    """The kind of knowledge a person's sentence states, or None for a request, question or remark."""
    marked = kind_marked(text)
    return Kind(marked) if marked else None
