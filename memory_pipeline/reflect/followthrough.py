"""What happened after a memory was injected: whether a turn followed it, ignored it or contradicted it.

Pure and without the chat model. A memory's stance is what it wants and what it rejects ("use pnpm, not npm":
wants pnpm, rejects npm; "moved from SQLite to Postgres": wants Postgres, rejects SQLite; "the dev server is on
port 5173": wants 5173), in the names a command or a path can hold (tools, code spans, flags, paths, numbers).
A turn then says it plainly or not at all:

- **contradicted**: the person corrects the memory itself: a message with a correction cue (or a replacement)
  that rejects what the memory wants, wants what it rejects, or gives its subject another value of the same sort
  ("no, the port is 8080 now");
- **ignored**: the agent ran or touched what the memory rejects;
- **followed**: the agent ran or touched what it wants, and nothing it rejects;
- **no_signal**: anything else. Unsure is no signal: a memory demoted without evidence is the worst error.

A person who restates the memory after the agent ignored it (the memory's own stance, with a correction cue)
is noted (`restated`): such a rule deserves more weight, not less.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

from memory_pipeline.language.lexicon import CLAUSE_END, CORRECTION, NEGATION, PARTICULAR, replacement
from memory_pipeline.language.topics import topics_of
from memory_pipeline.language.words import content_words, words

Label = Literal["followed", "ignored", "contradicted", "no_signal"]
LABELS: tuple[Label, ...] = ("followed", "ignored", "contradicted", "no_signal")
SNIPPET = 200  # characters of the evidence message kept with an outcome
# The argument fields of a tool call that name what it ran or touched.
_ACTION_FIELDS = ("command", "cmd", "path", "file_path", "filePath", "file", "paths", "script", "args", "pattern")
_NUMBER = re.compile(r"^\d{2,}$")


class ToolCall(BaseModel):
    name: str = ""
    arguments: dict[str, Any] | str = Field(default_factory=dict)


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


@dataclass(frozen=True)
class Stance:
    """What a text wants and rejects (names, lower-cased), and the words of its subject."""

    wants: frozenset[str] = frozenset()
    rejects: frozenset[str] = frozenset()
    subject: frozenset[str] = field(default_factory=frozenset)

    @property
    def empty(self) -> bool:
        return not self.wants and not self.rejects


def names(text: str) -> list[str]:
    """The names a command or a path can hold: tools the lexicon knows, code spans, flags, paths and numbers."""
    found: list[str] = []
    for particular in PARTICULAR.findall(text):
        name = particular.strip("`.,;:()'\"").lower()
        if name and not re.fullmatch(r"\d\.?", name):
            found.append(name)
    for word in words(text):
        if (topics_of(word) or word.startswith("--")) and word not in found:
            found.append(word)
    return list(dict.fromkeys(found))


def _clauses(text: str) -> list[str]:
    return [c for c in re.split(r"[,;:.!?()\n]|\b(?:but|instead|whereas)\b", text) if c.strip()]


def stance(text: str) -> Stance:
    """What `text` wants and rejects: the two sides of a replacement, then each clause's names, rejected where
    a negation reaches them (to the end of its clause), wanted elsewhere."""
    wants: set[str] = set()
    rejects: set[str] = set()
    replaced = replacement(text)
    if replaced:
        wants |= set(names(replaced[0]) or [replaced[0].lower()])
        rejects |= set(names(replaced[1]) or [replaced[1].lower()])
    for clause in _clauses(text):
        negation = NEGATION.search(clause)
        before = clause[: negation.start()] if negation else clause
        after = clause[negation.end() :] if negation else ""
        end = CLAUSE_END.search(after)
        reached = after[: end.start()] if end else after
        rejects |= set(names(reached)) - wants
        wants |= set(names(before)) - rejects
    subject = frozenset(content_words(text) - {w for n in wants | rejects for w in content_words(n)})
    return Stance(frozenset(wants), frozenset(rejects - wants), subject)


def _mentions(text: str, name: str) -> bool:
    """Whether `text` holds `name` as a whole name (`npm` is not in `pnpm`, `src/api/` is in `src/api/x.py`)."""
    if "/" in name:
        return name.rstrip("/") in text.lower()
    return re.search(rf"(?<![\w/-]){re.escape(name)}(?![\w-])", text, re.I) is not None


def action_text(call: ToolCall) -> str:
    """What a tool call ran or touched: its command or path fields (the whole arguments when none is named)."""
    arguments = call.arguments
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return arguments
    if not isinstance(arguments, dict):
        return str(arguments)
    picked = [arguments[k] for k in _ACTION_FIELDS if k in arguments]
    values = picked or [v for v in arguments.values() if isinstance(v, str) and len(v) < 2000]
    return " ".join(v if isinstance(v, str) else json.dumps(v) for v in values)


def _same_sort(a: str, b: str) -> bool:
    """Two names that can stand for one another: two numbers, two tools of one category, two files of a kind."""
    if _NUMBER.match(a) and _NUMBER.match(b):
        return True
    shared = set(topics_of(a)) & set(topics_of(b))
    return bool(shared)


def _conflict(memory: Stance, said: Stance, text: str) -> bool:
    """Whether a person's words go against the memory."""
    if said.rejects & memory.wants or said.wants & memory.rejects:
        return True
    # Another value for the memory's subject: "no, the port is 8080 now" of "the dev server runs on port 5173".
    others = said.wants - memory.wants - memory.rejects
    about = memory.subject & said.subject
    if about and any(_same_sort(o, w) for o in others for w in memory.wants):
        return not any(_mentions(text, w) for w in memory.wants) or bool(said.rejects & memory.wants)
    return False


def _agrees(memory: Stance, said: Stance) -> bool:
    return bool(said.wants & memory.wants or said.rejects & memory.rejects)


def _snippet(text: str) -> str:
    return " ".join(text.split())[:SNIPPET]


def decide(kind: str, text: str, turn: Sequence[TurnMessage]) -> Outcome:
    """The outcome of one turn for one injected memory (`kind`, `text`); see the module's docstring."""
    memory = stance(text)
    if memory.empty:
        return Outcome(outcome="no_signal")
    ignored: tuple[int, str] | None = None
    followed: tuple[int, str] | None = None
    restated = False
    for index, message in enumerate(turn):
        content = message.content or ""
        if message.role == "user" and content.strip():
            said = stance(content)
            cued = CORRECTION.search(content) or replacement(content)
            if cued and _conflict(memory, said, content):
                return Outcome(outcome="contradicted", evidence_index=index, evidence=_snippet(content),
                               decided_by="rule")  # fmt: skip
            if ignored and cued and _agrees(memory, said):
                restated = True
        if message.role != "assistant":
            continue
        for call in message.tool_calls:
            action = action_text(call)
            if ignored is None and any(_mentions(action, r) for r in memory.rejects):
                ignored = (index, action)
            elif followed is None and any(_mentions(action, w) for w in memory.wants):
                followed = (index, action)
    if ignored:
        return Outcome(outcome="ignored", evidence_index=ignored[0], evidence=_snippet(ignored[1]), decided_by="rule",
                       restated=restated)  # fmt: skip
    if followed:
        return Outcome(outcome="followed", evidence_index=followed[0], evidence=_snippet(followed[1]),
                       decided_by="rule")  # fmt: skip
    return Outcome(outcome="no_signal")


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
