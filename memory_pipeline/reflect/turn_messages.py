"""A turn's messages as follow-through reads them, and what it decides of a memory on one turn: the records that
cross from memory-raw rows and the labelled corpus into `followthrough.decide` and out of it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, Field

Label = Literal["followed", "ignored", "contradicted", "no_signal"]
LABELS: tuple[Label, ...] = ("followed", "ignored", "contradicted", "no_signal")
SNIPPET = 200  # characters of the evidence message kept with an outcome


class ToolCall(BaseModel):
    name: str = ""
    arguments: dict[str, Any] | list[Any] | str = Field(default_factory=dict)


class TurnMessage(BaseModel):
    """One message of a turn, as memory-raw stores it and the labelled corpus writes it."""

    role: str
    content: str | None = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_name: str | None = None


class Outcome(BaseModel):
    outcome: Label
    evidence_index: int | None = Field(None, description="The message of the turn that shows it.")
    evidence: str = ""
    decided_by: Literal["rule", "model", "none"] = "none"
    restated: bool = Field(False, description="The person said the memory again after it was ignored.")


def turn_of(messages: Iterable[dict[str, Any]]) -> list[TurnMessage]:
    """A turn's messages from memory-raw rows or corpus lines (tool calls with JSON-string or dict arguments)."""
    return [
        TurnMessage(
            role=m.get("role") or "",
            content=m.get("content") or "",
            tool_calls=[ToolCall(name=c.get("name") or "", arguments=c.get("arguments") or {})
                        for c in (m.get("tool_calls") or [])],
            tool_name=m.get("tool_name"),
        )
        for m in messages
    ]  # fmt: skip
