"""What happened after a memory was injected: whether a turn followed it, ignored it or contradicted it.

Pure and without the chat model. A memory's stance is what it wants and what it rejects ("use pnpm, not npm":
wants pnpm, rejects npm; "moved from SQLite to Postgres": wants Postgres, rejects SQLite; "the dev server is on
port 5173": wants 5173), in the names a command or a path can hold (tools, code spans, flags, paths, numbers),
and the names its subject is known by. A turn then says it plainly or not at all:

- **contradicted**: the person (or the agent, having checked) says the memory no longer holds or never did: a
  change or refutation cue ("no longer", "we moved to", "was a red herring", "nicht mehr") that rejects what the
  memory wants, wants what it rejects, gives its subject another value of the same sort ("the port is 8080
  now"), or names its subject;
- **ignored**: the agent ran what the memory rejects, or wrote it into a file;
- **followed**: the agent ran or wrote what it wants, and nothing it rejects;
- **no_signal**: anything else. Unsure is no signal: a memory demoted without evidence is the worst error.

Reading is not doing (a read of `pnpm-lock.yaml` installs nothing), tool output is not anyone's word, and a
person letting a rule go once ("skip it this time") neither changes nor breaks it. A person who says the memory
again after the agent ignored it is noted (`restated`): such a rule deserves more weight, not less.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memory_pipeline.language.lexicon import (
    CHOSEN_AFTER,
    CLAUSE_END,
    CORRECTION,
    EXEMPTION,
    LEFT_BEHIND,
    NEGATION,
    NO_LONGER,
    NO_LONGER_ABROAD,
    PARTICULAR,
    REFUTED,
    SKIPPING,
    TAKEN_AWAY,
    is_question,
    replacement,
)
from memory_pipeline.language.topics import topics_of
from memory_pipeline.language.words import SPEECH_WORDS, STOP_WORDS, content_words, tokens, words
from memory_pipeline.reflect.conventions import (
    convention_kept,
    flags_kept,
    setting_kept,
    value_missed,
    version_kept,
)
from memory_pipeline.reflect.shell import NUMBER, Phrase, has, runs, written_use
from memory_pipeline.reflect.turn_messages import SNIPPET, Outcome, ToolCall, TurnMessage

# The argument fields of a tool call that name what it ran or touched, and those that hold what it wrote.
_ACTION_FIELDS = ("command", "cmd", "path", "file_path", "filePath", "file", "paths", "script", "args", "pattern")
_CONTENT_FIELDS = ("content", "new_string", "newText", "new_str", "text", "input", "patch", "edits")
_READ_TOOLS = frozenset({"read", "read_file", "grep", "glob", "ls", "find", "view", "search", "list_directory"})
_CODE = re.compile(r"`([^`]+)`")
_FOLDER = re.compile(r"(?<![\w/.-])([\w.-]+/)(?=[\s,;:.)]|$)")  # a folder named alone: "never edit vendor/"
_FLAG = re.compile(r"(?<![\w-])--?[a-zA-Z][\w-]*")
_MOVE = re.compile(
    r"(?i)\b(?:mov|migrat|switch|went|go|going|chang|upgrad|port|renam)\w*\b.*?\bfrom\s+(.+?)\s+to\s+(.+)$"
)
_PASSIVE = re.compile(r"(?i)\b(?:is|was|were|are|been|be|got)\s+$")
_ENVELOPE = re.compile(r"(?is)<(system-reminder|environment_context|env|context)[^>]*>.*?</\1>|```.*?```")

# The kinds whose truth an agent can check (a port, a path, a cause): its word that they are not so counts.
FACTUAL = frozenset({"fact", "gotcha", "root_cause"})


@dataclass(frozen=True)
class Stance:
    """What a text wants and rejects, and the names its subject is known by (lower-cased)."""

    wants: frozenset[Phrase] = frozenset()
    rejects: frozenset[Phrase] = frozenset()
    keys: frozenset[str] = field(default_factory=frozenset)
    words: frozenset[str] = field(default_factory=frozenset)  # the stems of its content words

    @property
    def empty(self) -> bool:
        return not self.wants and not self.rejects


def names(text: str) -> list[str]:
    """The names a command or a path can hold: code spans whole, then tools the lexicon knows, flags, paths,
    numbers and names with code marks."""
    found = [span.strip().lower() for span in _CODE.findall(text) if span.strip()]
    rest = _CODE.sub(" ", text)
    for particular in PARTICULAR.findall(rest):
        name = particular.strip("`.,;:()'\"").lower()
        if name and not re.fullmatch(r"\d\.?|[\d.]*\.\.+", name):
            found.append(name)
    found += [flag.lower() for flag in _FLAG.findall(rest)]
    found += [word for word in words(rest) if topics_of(word)]
    found += [folder.lower() for folder in _FOLDER.findall(rest)]
    return list(dict.fromkeys(found))


def _plain(text: str) -> list[str]:
    """The words that carry meaning, as written (lower-cased): what a clause without names is about."""
    return [w for w in words(text) if w not in STOP_WORDS and w not in SPEECH_WORDS and (len(w) > 2 or w[-1].isdigit())]


def _named(text: str, plain: bool = False) -> set[Phrase]:
    found: set[Phrase] = {(n,) for n in names(text)}
    if not found and plain:
        bag = tuple(dict.fromkeys(_plain(text)))[:4]
        if bag:
            found.add(bag)
    return found


def _keys(text: str) -> frozenset[str]:
    """The names a text's subject is known by: its names and their parts, and its proper or numbered words."""
    keys = set()
    for name in names(text):
        keys.add(name)
        keys |= {part for part in re.split(r"[\s/.=:_@-]+", name) if len(part) > 2 and part not in STOP_WORDS}
    # The one tokenizer's words (a CJK character is a word of its own: "i18nはやめる" names i18n), in their parts.
    for token in (part for t in tokens(_CODE.sub(" ", text)) for part in re.split(r"[./#'_]+", t) if part):
        if (token[0].isupper() or any(c.isdigit() for c in token)) and token.lower() not in STOP_WORDS:
            keys.add(token.lower())
    return frozenset(k for k in keys if len(k) > 1)


def _clauses(text: str) -> list[str]:
    return [c for c in re.split(r"[;:.!?()\n]+(?:\s|$)|[;()\n]|,\s|\s-{1,2}\s|\s—\s", text) if c.strip()]


@functools.lru_cache(maxsize=4096)  # a day's run judges every turn against the same few memories
def stance(text: str) -> Stance:
    """What `text` wants and rejects, clause by clause: the two sides of a replacement or a move, the names a
    negation reaches (to the end of its clause) or a "removed"/"deprecated" marks, and the other names as
    wanted."""
    wants: set[Phrase] = set()
    rejects: set[Phrase] = set()
    previous: set[Phrase] = set()
    for clause in _clauses(text):
        replaced = replacement(clause)
        moved = _MOVE.search(clause)
        left = LEFT_BEHIND.search(clause)
        negation = NEGATION.search(clause)
        if replaced:
            # A side written as code is one name ("`cargo nextest run` instead of `cargo test`").
            chosen, left_out = (f"`{side}`" if f"`{side}`" in clause else side for side in replaced)
            wants |= _named(chosen, plain=True)
            rejects |= _named(left_out, plain=True)
        elif moved:
            rejects |= _named(moved[1], plain=True)
            wants |= _named(moved[2], plain=True)
        elif left:
            after = clause[left.end() :]
            chosen = CHOSEN_AFTER.search(after)
            rejects |= _named(after[: chosen.start()] if chosen else after)
            wants |= _named(after[chosen.end() :], plain=True) if chosen else set()
            if _PASSIVE.search(clause[: left.start()]) or not _named(after):
                subject = _named(clause[: left.start()], plain=True)
                # "The API v1 (/v1/orders) was shut down": what was left behind is named before the bracket.
                rejects |= subject or (previous if _PASSIVE.fullmatch(clause[: left.start()].lstrip()) else set())
        elif negation:
            before, after = clause[: negation.start()], clause[negation.end() :]
            end = CLAUSE_END.search(after)
            reached = after[: end.start()] if end else after
            predicate = re.fullmatch(r"(?i)n't|not|never|no longer|doesn'?t|does not|isn'?t|wasn'?t", negation[0])
            if _named(reached) or not _named(before) or not predicate or len(_plain(reached)) > 2:
                rejects |= _named(reached, plain=True)
                wants |= _named(before)
            else:  # "acme-uploads-dev doesn't exist": what the negation speaks of is before it
                rejects |= _named(before)
        else:
            wants |= _named(clause)
        previous = _named(clause)
    return Stance(frozenset(wants - rejects), frozenset(rejects), _keys(text), frozenset(content_words(text)))


def _arguments(call: ToolCall) -> dict[str, Any]:
    arguments = call.arguments
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return {"command": arguments}
    return arguments if isinstance(arguments, dict) else {"command": arguments}


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return " ".join(value)
    return json.dumps(value)


def action_text(call: ToolCall) -> str:
    """What a tool call ran or touched: its command or path fields (the whole arguments when none is named)."""
    arguments = _arguments(call)
    picked = [arguments[k] for k in _ACTION_FIELDS if k in arguments]
    return " ".join(_text(v) for v in picked or arguments.values())


def _acts(call: ToolCall, phrase: Phrase, reading: bool = True) -> bool:
    """Whether a tool call uses or touches `phrase`: a command that runs it (with `reading` False, not one that
    only reads), a file written that names it."""
    arguments = _arguments(call)
    if call.name.rsplit("__", 1)[-1].lower() in _READ_TOOLS:
        return False
    command = " ".join(_text(arguments[k]) for k in ("command", "cmd", "script") if k in arguments)
    if command:
        return runs(command, phrase, reading)
    written = "\n".join(_text(arguments[k]) for k in (*_ACTION_FIELDS, *_CONTENT_FIELDS) if k in arguments)
    return written_use(written, phrase)


def _setting(memory_text: str, call: ToolCall) -> bool | None:
    """For a memory that gives a setting its value (`DATABASE_URL is postgres://…`), whether a call sets it to
    that value (True), to another (False), or does not set it (None)."""
    arguments = _arguments(call)
    written = " ".join(_text(arguments[k]) for k in ("command", "cmd", "script", *_CONTENT_FIELDS) if k in arguments)
    return setting_kept(memory_text, written)


def _checked(memory_text: str, call: ToolCall) -> bool | None:
    """A version the memory pins, or a commit or branch convention it sets, kept (True) or broken (False) by the
    call's command or written file; None when it names neither."""
    arguments = _arguments(call)
    command = " ".join(_text(arguments[k]) for k in ("command", "cmd", "script") if k in arguments)
    written = " ".join(_text(arguments[k]) for k in ("command", "cmd", "script", *_CONTENT_FIELDS) if k in arguments)
    kept = version_kept(memory_text, written)
    kept = convention_kept(memory_text, command) if kept is None else kept
    return flags_kept(memory_text, stance(memory_text).wants, command) if kept is None else kept


def _near_miss(memory: Stance, call: ToolCall) -> bool:
    """Whether a call that is not a read uses a value the memory gives in another form (`value_missed`)."""
    if call.name.rsplit("__", 1)[-1].lower() in _READ_TOOLS:
        return False
    arguments = _arguments(call)
    done = " ".join(_text(arguments[k]) for k in (*_ACTION_FIELDS, *_CONTENT_FIELDS) if k in arguments)
    return value_missed([p[0] for p in memory.wants if len(p) == 1], done)


def _same_sort(a: str, b: str) -> bool:
    """Two names that can stand for one another: two numbers, or two tools of one category."""
    if NUMBER.match(a) and NUMBER.match(b):
        return True
    return bool(set(topics_of(a)) & set(topics_of(b)))


def _conflict(memory: Stance, said: Stance) -> bool:
    """Whether words go against the memory: they reject what it wants, or want what it rejects, or give its
    subject another value of the same sort ("the port is 8080" of "the dev server is on port 5173")."""
    if said.rejects & memory.wants or said.wants & memory.rejects:
        return True
    others = {p[0] for p in said.wants - memory.wants - memory.rejects if len(p) == 1}
    mine = {p[0] for p in memory.wants if len(p) == 1}
    about = memory.keys & said.keys or {w for w in memory.words & said.words if not w.isdigit()}
    # Another number or version of the subject both name, whatever else they share ("we bumped the toolchain to
    # 1.85, rust-toolchain.toml says so" of "the toolchain is pinned to 1.82.0 (rust-toolchain.toml)").
    if about and any(NUMBER.match(o) and NUMBER.match(w) for o in others for w in mine):
        return True
    if said.wants & memory.wants:
        return False
    # Another tool of the memory's tool's category ("it's bun now" of "use pnpm"), or another value (a number) of
    # the subject both name ("the port is 8080" of "the dev server listens on port 5173").
    if any(topics_of(o) and _same_sort(o, w) for o in others for w in mine):
        return True
    return bool(about) and any(_same_sort(o, w) for o in others for w in mine)


def _agrees(memory: Stance, said: Stance) -> bool:
    return bool(said.wants & memory.wants or said.rejects & memory.rejects)


def _spoken(content: str) -> str:
    """A message's own words: envelopes (system reminders, environment blocks) and pasted code or logs out."""
    return _ENVELOPE.sub(" ", content)


def _sentences(text: str) -> list[str]:
    return [x for x in re.split(r"(?<=[.!?。！？])\s+|\n+", text) if x.strip()]


def _replaces(memory: Stance, text: str) -> bool:
    """Whether `text` puts one thing in another's place among what the memory speaks of: a side it names, the other
    named by it too or of the same sort ("npm instead of pnpm" of "use pnpm"; not "pure black instead of #111" of
    "we removed black")."""
    found = replacement(text)
    if not found:
        return False
    mine = {p[0] for p in memory.wants | memory.rejects if len(p) == 1}
    sides = [{n for (n,) in _named(side) if n} for side in found]
    for this, other in (sides, sides[::-1]):
        if this & mine and (other & mine or any(_same_sort(o, m) for o in other for m in mine)):
            return True
    return False


def _no_longer(text: str, person: bool) -> bool:
    """A cue that something no longer holds. "… now." is the person's only: the agent ends its own report so ("The
    fix is on release/2.x now.")."""
    return any(person or m[0].lower() != "now" for m in NO_LONGER.finditer(text))


def _value(phrase: Phrase) -> bool:
    """A name that is a value of the memory (a number, a path, a flag, a command), not a lone tool's name."""
    return len(phrase) == 1 and not (re.fullmatch(r"[a-z][a-z0-9.+-]*", phrase[0]) and topics_of(phrase[0]))


def _against(memory: Stance, kind: str, content: str, person: bool) -> bool:
    """Whether a message says the memory no longer holds (or never did): words that go against its stance with a
    cue, or a sentence that says something no longer holds (not asked, not agreeing) about its subject."""
    # A question asks, it says nothing of what holds ("why did we drop styled-components?").
    text = " ".join(x for x in _sentences(_spoken(content)) if not is_question(x))
    if not text.strip() or EXEMPTION.search(text):
        return False
    said = stance(text)
    changed = _no_longer(text, person) or NO_LONGER_ABROAD.search(text) or (person and TAKEN_AWAY.search(text))
    # The agent speaks of what it saw: its words go against the memory when they give a value (a number, a path, a
    # name with code marks), not when they only name a tool ("kubectl says that context doesn't exist").
    valued = person or any(_value(p) for p in said.rejects | said.wants)
    if (
        (changed or (person and (CORRECTION.search(text) or _replaces(memory, text))))
        and valued
        and _conflict(memory, said)
    ):
        return True
    # The agent that checked a fact or a cause and says its value is not so ("on 3000 here, not 5173"): a value
    # (a number, a path, a name with code marks), not a tool ("kubectl says that context doesn't exist").
    denied = {p for p in said.rejects & memory.wants if _value(p)}
    if not person and kind in FACTUAL and denied and memory.keys & said.keys:
        return True
    for sentence in _sentences(text):
        abroad = NO_LONGER_ABROAD.search(sentence)
        refuted = REFUTED.search(sentence)
        changed = abroad or refuted or _no_longer(sentence, person) or (person and TAKEN_AWAY.search(sentence))
        if not changed:
            continue
        # Agreeing by naming what the memory wants is read in English only: "мы отказались от date-fns" names it.
        own = stance(sentence)
        if own.rejects & memory.rejects or (not abroad and not refuted and own.wants & memory.wants):
            continue
        # A person's words name the memory's subject in passing too, lower-cased ("vendor/", "gunicornは").
        spoken = {part for w in words(sentence) for part in (w, *re.split(r"[./#'_]+", w)) if part} if person else set()
        shared = memory.keys & (own.keys | spoken)
        # The agent speaks of what it saw: its word counts when it names the memory's own value, not a tool.
        if shared and (person or any(_value((k,)) for k in shared)):
            return True
        # A cause refuted in other words than the memory's names ("the earlier diagnosis was wrong: listeners…").
        if refuted and len(memory.words & own.words) >= 2:
            return True
    return False


def _skips(memory: Stance, content: str) -> bool:
    """Whether the agent says it leaves out what the memory asks ("I'll skip clippy this time")."""
    for sentence in _sentences(_spoken(content)):
        if SKIPPING.search(sentence) and memory.keys & _keys(sentence) and not _mentions_rejected(memory, sentence):
            return True
    return False


def _mentions_rejected(memory: Stance, sentence: str) -> bool:
    return any(has(sentence, phrase) for phrase in memory.rejects)


@dataclass(frozen=True)
class Correction:
    """A person's correction that says what is wanted or rejected, in one sentence."""

    text: str
    wants: frozenset[Phrase]
    rejects: frozenset[Phrase]


def correction(message: TurnMessage) -> Correction | None:
    """The first sentence of a person's message that corrects the agent ("no, use pnpm, not npm"): a correction
    cue and names both wanted and rejected, or rejected alone (not a question, not a one-off exemption)."""
    for sentence in _sentences(_spoken(message.content or "")):
        if is_question(sentence) or EXEMPTION.search(sentence) or not CORRECTION.search(sentence):
            continue
        said = stance(sentence)
        names_only = {p for p in said.rejects if len(p) == 1}
        if names_only:
            wanted = frozenset(p for p in said.wants if len(p) == 1)
            return Correction(" ".join(sentence.split())[:SNIPPET], wanted, frozenset(names_only))
    return None


def restates(text: str, message: TurnMessage) -> bool:
    """Whether a person's message says the memory `text` again ("I said pnpm, not npm!"): it asks for what the
    memory wants or rejects what it rejects. A person's message starts a turn, so the restatement of a rule the
    agent ignored is the first message of the next turn."""
    return message.role == "user" and _agrees(stance(text), stance(_spoken(message.content or "")))


def _both_sides(memory: Stance, text: str) -> bool:
    return any(has(text, p) for p in memory.wants) and any(has(text, p) for p in memory.rejects)


def _snippet(text: str) -> str:
    return " ".join(text.split())[:SNIPPET]


def decide(kind: str, text: str, turn: Sequence[TurnMessage]) -> Outcome:
    """The outcome of one turn for one injected memory (`kind`, `text`); see the module's docstring."""
    memory = stance(text)
    if memory.empty and not memory.keys:
        return Outcome(outcome="no_signal")
    ignored: tuple[int, str] | None = None
    followed: tuple[int, str] | None = None
    acted: tuple[int, str] | None = None  # the agent's last call that did something (not a read)
    restated = False
    for index, message in enumerate(turn):
        content = message.content or ""
        person = message.role == "user"
        if person or message.role == "assistant":
            spoken = _spoken(content)  # the message's own words, envelopes and pasted code out
            # Right after the agent used what the memory rejects, a person naming both sides of its move corrects
            # the agent ("packages/common ya no existe, ahora es packages/contracts"), in any language.
            if person and ignored and _both_sides(memory, spoken):
                restated = True
                continue
            if content.strip() and _against(memory, kind, content, person):
                return Outcome(outcome="contradicted", evidence_index=index, evidence=_snippet(spoken),
                               decided_by="rule")  # fmt: skip
            # A person letting the memory go once ("just this once run plain cargo test"): what the agent then does
            # against it neither follows nor ignores it.
            if (
                person
                and EXEMPTION.search(spoken)
                and (memory.keys & _keys(spoken) or memory.words & content_words(spoken))
            ):
                return Outcome(outcome="no_signal")
            if person and _agrees(memory, stance(spoken)):
                restated = restated or ignored is not None
                # The person saying the memory again after the agent acted without it ("we already have one at
                # api/openapi.yaml, why start a new one?"): the agent went its own way.
                if ignored is None and followed is None and acted is not None:
                    ignored, restated = acted, True
        if message.role != "assistant":
            continue
        if ignored is None and _skips(memory, content):
            ignored = (index, content)
        for call in message.tool_calls:
            if call.name.rsplit("__", 1)[-1].lower() not in _READ_TOOLS:
                acted = (index, action_text(call))
            setting = _setting(text, call)
            setting = _checked(text, call) if setting is None else setting
            broken = _near_miss(memory, call) or any(_acts(call, r, reading=False) for r in memory.rejects)
            if ignored is None and (setting is False or broken):
                ignored = (index, action_text(call))
            elif followed is None and (setting or any(_acts(call, w) for w in memory.wants)):
                followed = (index, action_text(call))
    if ignored:
        return Outcome(outcome="ignored", evidence_index=ignored[0], evidence=_snippet(ignored[1]), decided_by="rule",
                       restated=restated)  # fmt: skip
    if followed:
        return Outcome(outcome="followed", evidence_index=followed[0], evidence=_snippet(followed[1]),
                       decided_by="rule")  # fmt: skip
    return Outcome(outcome="no_signal")
