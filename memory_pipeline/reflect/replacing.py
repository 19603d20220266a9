"""Which stored memories a later one replaces, read from the words alone (no chat model).

A decision that names a replacement ("we're moving the HTTP client in invoices from urllib3 to aiohttp", "local
development uses Postgres instead of SQLite") replaces an earlier decision, rule or observation of its project
that wants what it replaced (urllib3, SQLite; not one that rejects it) about the same subject: the newer one names
a subject (HTTP, client, invoices; local, development), and every word of it is a word of the older one. So "for
the HTTP client in reminders, use urllib3" stays, a decision that names no subject ("use pnpm instead of npm")
replaces nothing, and every root cause and fact stays: a cause found stays what happened then, however many names
it shares ("pytest-xdist workers sharing one SQLite file").

This is what a run without the chat model can decide at once, so a replaced choice is never briefed as current
while the model's reflection has not read the turn yet (bench needs: a replaced decision shown as current is a
harmful line). Reflection's own judgement (`condense.find_supersessions`) still marks what words alone cannot.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from pydantic import BaseModel

from memory_pipeline.language.lexicon import CHOICE_WORDS, REPLACEMENTS, replacement
from memory_pipeline.language.words import content_words
from memory_pipeline.reflect.followthrough import Phrase, stance

# The kinds a later choice replaces: what was chosen and how work is to be done, and the record of a turn that
# chose it ("Set up echarts for charts in invoices"). Never a cause or a fact.
REPLACEABLE = frozenset({"decision", "rule", "observation"})
OBSERVATION = "observation"  # an observation's marks are all replacement's (reflection marks none)
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")
Named = tuple[str, str, frozenset[str]]  # (chosen, replaced, subject): `named_replacement`


class Stated(BaseModel):
    """A memory as replacement reads it."""

    id: str
    project: str = ""
    kind: str = ""
    summary: str = ""
    established_at: str = ""
    superseded_by: str | None = None


def named_replacement(text: str) -> Named | None:
    """(chosen, replaced, subject) when `text` puts one thing in another's place: the subject is the words of
    its sentence up to the replacement (the form `replacement` read: the first of the lexicon's that matches),
    without the two names and the words of choosing ("moving", "uses", "instead"). None when it names no
    replacement."""
    for sentence in _SENTENCE_END.split(text):
        named = replacement(sentence)
        if not named:
            continue
        found = next(m for pattern in REPLACEMENTS if (m := pattern.search(sentence)))
        chosen, replaced = named
        words = content_words(sentence[: found.end()])
        return chosen, replaced, frozenset(words - content_words(chosen) - content_words(replaced) - CHOICE_WORDS)
    return None


def _same(a: str, b: str) -> bool:
    """One word is the other or begins it ("dev", "development"): the subject named shorter or longer."""
    return a == b or (min(len(a), len(b)) >= 3 and (a.startswith(b) or b.startswith(a)))


def _mentions(text: str, name: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text, re.I) is not None


def _holds(phrase: Phrase, name: str) -> bool:
    """Whether a stance's phrase is `name` as stance reads it ("config" of "config.py.", "github actions")."""
    name = name.lower()
    parts = name.split()
    return (
        " ".join(phrase) == name
        or all(part in phrase for part in parts)
        or any(name.startswith(f"{element}.") or element.startswith(f"{name}.") for element in phrase)
    )


def wants(text: str, name: str) -> bool:
    """Whether `text` asks for `name` (not only rejects it: "use httpx, not urllib3" does not want urllib3)."""
    if not _mentions(text, name):
        return False
    return not any(_holds(phrase, name) for phrase in stance(text).rejects)


def _replacing(named: Named) -> bool:
    # No subject: "use pnpm instead of npm" is not about anything an older memory can be checked on.
    return bool(named[2])


def replaces(newer: str, older: str) -> bool:
    """Whether `newer` (a memory naming a replacement and a subject) replaces `older` (a decision, rule or
    observation of its project)."""
    named = named_replacement(newer)
    return named is not None and _replacing(named) and _replaces_named(named, older)


def named_verdict(newer: str, older: str) -> bool | None:
    """`replaces` where `newer` names a replacement and its subject ("moving the HTTP client in invoices from
    urllib3 to aiohttp"): its words settle which older choice it replaced, whatever a model says. None where it
    names none (a reader must judge)."""
    named = named_replacement(newer)
    if named is None or not _replacing(named):
        return None
    return _replaces_named(named, older)


def names_subject(text: str, subject: str) -> bool:
    """Whether `text` speaks of `subject`: each of its content words is one of the text's, named shorter or longer
    ("the HTTP client in invoices" is not a subject of "For the HTTP client in vendors, …")."""
    words = content_words(text)
    return all(any(_same(word, theirs) for theirs in words) for word in content_words(subject))


def _replaces_named(named: Named, older: str) -> bool:
    """`replaces`, the newer one read once (a fast run tries it on every stored choice of the project): cheapest
    test first."""
    chosen, replaced, subject = named
    if not _mentions(older, replaced):
        return False
    if not names_subject(older, " ".join(subject)):
        return False
    return wants(older, replaced) and not wants(older, chosen)


def replaced_memories(memories: Iterable[Stated]) -> dict[str, str]:
    """Older memory id -> the id of the first later memory that replaces it, within each project. Only a
    decision replaces (a person's choice, stated as such); a decision, a rule or an observation is replaced."""
    ordered: Sequence[Stated] = sorted(memories, key=lambda m: (m.established_at, m.id))
    marks: dict[str, str] = {}
    for newer in ordered:
        named = named_replacement(newer.summary) if newer.kind == "decision" else None
        if not named or not _replacing(named):
            continue
        for older in ordered:
            if older.established_at >= newer.established_at:
                break
            if (
                older.id not in marks
                and older.project == newer.project
                and older.kind in REPLACEABLE
                and _replaces_named(named, older.summary)
            ):
                marks[older.id] = newer.id
    return marks


def mark_changes(stored: Sequence[Stated]) -> dict[str, str | None]:
    """Memory id -> the `superseded_by` it should carry (None: cleared), for the stored decisions and rules of
    some projects (and their observations) whose replacement by words (`replaced_memories`) is not what they
    carry. A memory's mark naming a reflection is reflection's, and left as it is."""
    ids = {m.id for m in stored}
    wanted = replaced_memories(stored)
    return {
        m.id: wanted.get(m.id)
        for m in stored
        if (m.superseded_by is None or m.superseded_by in ids or m.kind == OBSERVATION)
        and m.superseded_by != wanted.get(m.id)
    }


def replaced_names(memories: Iterable[Stated]) -> list[str]:
    """What the decisions among `memories` that can replace anything name as replaced: the observations worth
    reading against them."""
    found = (named_replacement(m.summary) for m in memories if m.kind == "decision")
    return sorted({named[1] for named in found if named and _replacing(named)})
