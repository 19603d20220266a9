"""Friction: where the agent keeps struggling across a week's sessions, as concrete fix proposals.

Three kinds of finding, each needing evidence from at least `min_sessions` different sessions:
- repeated-rule: the user states the same correction or rule in several sessions (user sentences with a rule
  cue, and high-priority rule memories, clustered by embedding similarity);
- recurring-failure: the same command failing the same way (tool results with an error, clustered by the
  embedding of "tool, command, normalised error line"); the command that succeeded next in the same turn is
  the workaround, if the sessions agree on one;
- tool-misuse: tool calls that fail for how they were made (edit text not in the file, paths that do not
  exist, invalid arguments) or use bash for what a tool does (cat/sed -i on files).

Each finding carries a one-line rule for AGENTS.md with its sessions, and as evidence the ids of the turn
observations (and memories) it came from, which `memory-pipeline show` opens.
Pure functions over rows read from Elasticsearch; the embedder is passed in.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from memory_pipeline.language.lexicon import ERROR_LINE, is_question
from memory_pipeline.recall.observations import observation_id
from memory_pipeline.reflect.proposals import rule_line
from memory_pipeline.reflect.similarity import clusters, medoid

Kind = Literal["repeated-rule", "recurring-failure", "tool-misuse"]
Embed = Callable[[Sequence[str]], list[list[float]]]

_RULE_CUE = re.compile(
    r"\b(don'?t|do not|never|always|stop|instead|please use|use \S+ (?:for|not|like|only)|must|should(?:n'?t| not)?|"
    r"prefer|make sure|only|again|not \w+)\b",
    re.IGNORECASE,
)
_RULE_TAGS = re.compile(r"rule|preference|correction|convention")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_EXCEPTION = re.compile(r"^[A-Z]\w*(?:Error|Exception)\b")
_VOLATILE = [
    (re.compile(r"(?:/[\w.@+-]+)+"), "<path>"),
    (re.compile(r"\b[0-9a-f]{7,}\b"), "<hex>"),
    (re.compile(r"\d+"), "<n>"),
    (re.compile(r"\s+"), " "),
]
MISUSE = {
    "edit-mismatch": (
        re.compile(r"could not find the exact text|must match exactly|not unique|occurrences", re.I),
        "Before `edit`, read the file again: `oldText` must match the current content exactly, whitespace included.",
    ),
    "missing-path": (
        re.compile(r"ENOENT|no such file|file not found|does not exist", re.I),
        "Check that a path exists (`ls`, `find`) before reading or editing it; missing paths tried: {examples}.",
    ),
    "invalid-arguments": (
        re.compile(r"validation failed|invalid arguments?|required propert|must have required", re.I),
        "Call `{tool}` with its required arguments; the tool answered: {error}.",
    ),
    "bash-file-read": (
        re.compile(r"^\s*(?:cat|head|tail|less|more|sed -n)\s+[^|;&]+$"),
        "Read files with the `read` tool, not `cat`/`head`/`tail` in bash.",
    ),
    "bash-file-edit": (
        re.compile(r"^\s*(?:sed -i|perl -pi|echo .*>\s*\S+|cat <<)"),
        "Edit files with the `edit` or `write` tool, not `sed -i` or shell redirection.",
    ),
}
_BASH_MISUSE = ("bash-file-read", "bash-file-edit")


@dataclass
class Event:
    """One piece of evidence: a statement, a failing call, a misused tool."""

    session_id: str
    evidence_id: str  # the turn's observation id (`memory-pipeline show` opens the turn) or a memory id
    text: str
    tool: str = ""
    command: str = ""
    error: str = ""
    workaround: str = ""
    category: str = ""


@dataclass
class Finding:
    kind: Kind
    key: str
    rule: str  # the line to add to AGENTS.md
    sessions: list[str]
    evidence_ids: list[str]
    examples: list[str] = field(default_factory=list)

    @property
    def proposal(self) -> str:
        return f'add this line to AGENTS.md: "{self.rule}"'


def error_line(text: str) -> str:
    """The line that says what went wrong: a traceback's final exception, else the first error-looking line."""
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("Command exited")]
    exceptions = [line for line in lines if _EXCEPTION.match(line)]
    if exceptions:
        return exceptions[-1][:160]
    return next((line for line in lines if ERROR_LINE.search(line)), lines[0] if lines else "")[:160]


def normalise_error(text: str) -> str:
    """The error line with paths, ids and numbers masked: the failure's signature."""
    line = error_line(text)
    for pattern, mask in _VOLATILE:
        line = pattern.sub(mask, line)
    return line.strip()


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw or "{}")
    except (TypeError, json.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def rule_statements(messages: Sequence[dict[str, Any]], memories: Sequence[dict[str, Any]]) -> list[Event]:
    """User sentences that state a rule or correct the agent, and rule memories (their quoted words)."""
    events = []
    for message in messages:
        if message.get("role") != "user":
            continue
        for sentence in _SENTENCE.split(message.get("content") or ""):
            sentence = sentence.strip()
            if is_question(sentence) or not 3 <= len(sentence.split()) <= 40 or not _RULE_CUE.search(sentence):
                continue
            events.append(
                Event(message["session_id"], observation_id(message["session_id"], message["turn_id"]), sentence)
            )
    for memory in memories:
        if memory.get("priority") == "high" and any(_RULE_TAGS.search(t) for t in memory.get("tags") or []):
            events.append(Event(memory["session_id"], memory["doc_id"], rule_line(memory["summary"], "Hard rules")))
    return events


def tool_events(messages: Sequence[dict[str, Any]]) -> tuple[list[Event], list[Event]]:
    """(failures, misuses) from tool calls and their results, in session order."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    ordered = sorted(messages, key=lambda m: (m["session_id"], m.get("turn_index") or 0, m.get("message_index") or 0))
    results: list[tuple[dict[str, Any], str, dict[str, Any]]] = []
    for message in ordered:
        for call in message.get("tool_calls") or []:
            calls[call["id"]] = (call["name"], _arguments(call.get("arguments")))
        if message.get("role") == "toolResult":
            name, arguments = calls.get(message.get("tool_call_id") or "", (message.get("tool_name") or "", {}))
            results.append((message, name, arguments))
        elif message.get("role") == "bashExecution":
            command = (message.get("content") or "").split("\n", 1)[0].removeprefix("$ ")
            results.append((message | {"is_error": (message.get("exit_code") or 0) != 0}, "bash", {"command": command}))
    failures, misuses = [], []
    for position, (message, tool, arguments) in enumerate(results):
        command = str(arguments.get("command") or arguments.get("path") or "")
        base = Event(
            message["session_id"],
            observation_id(message["session_id"], message["turn_id"]),
            "",
            tool=tool,
            command=command,
        )
        if tool == "bash":
            bash_misuse = next((c for c in _BASH_MISUSE if MISUSE[c][0].search(command)), "")
            if bash_misuse:
                misuses.append(replace(base, category=bash_misuse, text=command))
        if not message.get("is_error"):
            continue
        content = message.get("content") or ""
        category = next((c for c, (p, _) in MISUSE.items() if c not in _BASH_MISUSE and p.search(content)), "")
        if category:
            misuses.append(replace(base, category=category, text=command, error=error_line(content)))
            continue
        # The workaround: the next successful call of the same tool in the same turn, with another command.
        workaround = next(
            (
                str(other_args.get("command") or "")
                for other, other_tool, other_args in results[position + 1 :]
                if other["session_id"] == message["session_id"]
                and other.get("turn_id") == message.get("turn_id")
                and other_tool == tool
                and not other.get("is_error")
                and str(other_args.get("command") or "") != command
            ),
            "",
        )
        failures.append(
            replace(
                base,
                text=f"{tool}: {command} -> {normalise_error(content)}",
                error=error_line(content),
                workaround=workaround,
            )
        )
    return failures, misuses


def _sessions(events: Sequence[Event]) -> list[str]:
    return sorted({e.session_id for e in events})


def _similar(
    events: Sequence[Event], embed: Embed, threshold: float, min_sessions: int
) -> Iterator[tuple[list[Event], list[list[float]]]]:
    """Groups of events whose texts are similar (single linkage), from at least `min_sessions` sessions, with
    their vectors."""
    if not events:
        return
    vectors = embed([e.text for e in events])
    for group in clusters(vectors, threshold, linkage="single"):
        members = [events[i] for i in group]
        if len(_sessions(members)) >= min_sessions:
            yield members, [vectors[i] for i in group]


def find_friction(
    messages: Sequence[dict[str, Any]],
    memories: Sequence[dict[str, Any]],
    embed: Embed,
    *,
    min_sessions: int = 2,
    rule_threshold: float = 0.55,
    failure_threshold: float = 0.85,
) -> list[Finding]:
    findings: list[Finding] = []
    for members, vectors in _similar(rule_statements(messages, memories), embed, rule_threshold, min_sessions):
        best = members[medoid(vectors)]
        findings.append(
            Finding(
                "repeated-rule",
                best.text.lower()[:60],
                best.text.rstrip("."),
                _sessions(members),
                [e.evidence_id for e in members],
                examples=sorted({e.text for e in members})[:4],
            )
        )
    failures, misuses = tool_events(messages)
    for members, _ in _similar(failures, embed, failure_threshold, min_sessions):
        command = Counter(e.command for e in members).most_common(1)[0][0]
        error = Counter(e.error for e in members).most_common(1)[0][0]
        fixes = Counter(e.workaround for e in members if e.workaround)
        fix, agreeing = fixes.most_common(1)[0] if fixes else ("", 0)
        if fix and agreeing >= min_sessions:
            rule = f"`{command}` fails here with `{error}`; run `{fix}` instead"
        else:
            rule = f"`{command}` fails here with `{error}`; fix that cause before running it again"
        findings.append(
            Finding(
                "recurring-failure",
                normalise_error(error)[:60],
                rule,
                _sessions(members),
                [e.evidence_id for e in members],
                examples=sorted({e.command for e in members})[:4],
            )
        )
    for category in MISUSE:
        members = [e for e in misuses if e.category == category]
        if len(_sessions(members)) < min_sessions:
            continue
        tool = Counter(e.tool for e in members).most_common(1)[0][0]
        examples = sorted({e.command for e in members if e.command})[:3]
        rule = MISUSE[category][1].format(
            tool=tool, error=members[-1].error, examples=", ".join(f"`{e}`" for e in examples)
        )
        findings.append(
            Finding("tool-misuse", category, rule, _sessions(members), [e.evidence_id for e in members], examples)
        )
    return findings


def render_report(project: str, week: str, findings: Sequence[Finding], proposal_ids: dict[str, str]) -> str:
    lines = [f"# Friction — {project}, week of {week}", ""]
    if not findings:
        return "\n".join([*lines, "No friction repeated across sessions this week.", ""])
    titles = {
        "repeated-rule": "Rules the user had to repeat",
        "recurring-failure": "Failures that keep coming back",
        "tool-misuse": "Tools used the wrong way",
    }
    for kind, title in titles.items():
        items = [f for f in findings if f.kind == kind]
        if not items:
            continue
        lines += [f"## {title}", ""]
        for finding in items:
            pid = proposal_ids.get(finding.proposal, "")
            lines.append(f"- {finding.proposal} ({len(finding.sessions)} sessions{', proposal ' + pid if pid else ''})")
            lines += [f"  - e.g. `{example}`" for example in finding.examples[:3]]
        lines.append("")
    return "\n".join(lines)
