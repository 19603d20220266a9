"""What a regex can reach, read off its parse tree: how many line breaks one match (its lookaheads included) can
hold, and whether every match holds one of a set of keywords.

The redactor uses both to scan a long text only near where a rule could match: a rule whose every match holds
one of its keywords and at most `n` line breaks matches only within `n` lines of a keyword; the rest of the
text cannot hold a match, so skipping it changes no result. Both answers err on the safe side: unbounded
(None) or False whenever the tree holds something they do not model.
"""

from __future__ import annotations

import re
import re._compiler as sre_compile  # compiles a parse tree: the lead run of `lead`
import re._constants as sre  # the parse tree's node names: the same module `re` compiles with
import re._parser as sre_parse
from collections.abc import Iterable
from typing import Any

_NEWLINE = ord("\n")
_MAX = sre.MAXREPEAT
# Classes (`\s`, `\W`, `\D`…) that hold a line break.
_NEWLINE_CATEGORIES = frozenset({
    sre.CATEGORY_SPACE, sre.CATEGORY_NOT_WORD, sre.CATEGORY_NOT_DIGIT, sre.CATEGORY_LINEBREAK,
    sre.CATEGORY_UNI_SPACE, sre.CATEGORY_UNI_NOT_WORD, sre.CATEGORY_UNI_NOT_DIGIT, sre.CATEGORY_UNI_LINEBREAK,
    sre.CATEGORY_LOC_NOT_WORD,
})  # fmt: skip


def _in_holds_newline(items: list[tuple[Any, Any]]) -> bool:
    negate = bool(items) and items[0][0] is sre.NEGATE
    hit = False
    for op, av in items[1:] if negate else items:
        if op is sre.LITERAL:
            hit |= av == _NEWLINE
        elif op is sre.RANGE:
            hit |= av[0] <= _NEWLINE <= av[1]
        elif op is sre.CATEGORY:
            hit |= av in _NEWLINE_CATEGORIES
        else:  # an item this does not model: assume it holds one
            return True
    return hit != negate


def _space_only(tree: Iterable[tuple[Any, Any]]) -> bool:
    """Whether every character the sequence can match is whitespace (`str.isspace`, as `\\s` reads it): the lines
    a run of it crosses whole hold nothing else (they are blank)."""
    for op, av in tree:
        if op is sre.LITERAL:
            ok = chr(av).isspace()
        elif op is sre.IN:
            ok = all(
                (o is sre.LITERAL and chr(a).isspace())
                or (o is sre.CATEGORY and a in (sre.CATEGORY_SPACE, sre.CATEGORY_UNI_SPACE))
                for o, a in av
            )  # a NEGATE item is neither: a negated class is not whitespace only
        elif op is sre.SUBPATTERN:
            ok = _space_only(av[3])
        elif op is sre.BRANCH:
            ok = all(_space_only(b) for b in av[1])
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            ok = _space_only(av[2])
        else:
            ok = False
        if not ok:
            return False
    return True


def _newlines(
    tree: Iterable[tuple[Any, Any]], dotall: bool, groups: dict[int, int | None], blanks: bool = False
) -> int | None:
    total = 0
    for op, av in tree:
        n: int | None
        if op is sre.LITERAL:
            n = int(av == _NEWLINE)
        elif op is sre.NOT_LITERAL:
            n = int(av != _NEWLINE)
        elif op is sre.ANY:
            n = int(dotall)
        elif op is sre.IN:
            n = int(_in_holds_newline(av))
        elif op is sre.AT:
            n = 0
        elif op is sre.BRANCH:
            branches = [_newlines(b, dotall, groups, blanks) for b in av[1]]
            n = None if None in branches else max(branches)  # type: ignore[type-var]
        elif op is sre.SUBPATTERN:
            group, add, remove, sub = av
            inner = (dotall or bool(add & re.DOTALL)) and not remove & re.DOTALL
            n = _newlines(sub, inner, groups, blanks)
            if group is not None:
                groups[group] = n
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            low, high, sub = av
            inner_n = _newlines(sub, dotall, groups, blanks)
            if blanks and inner_n and _space_only(sub):
                n = 1  # any number of blank lines, then at most one line that is not blank
            else:
                n = 0 if inner_n == 0 else None if inner_n is None or high == _MAX else inner_n * high
        elif op is sre.ATOMIC_GROUP:
            n = _newlines(av, dotall, groups, blanks)
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            # A lookahead reads on past the match; a lookbehind reads the text before it, which every scan sees.
            direction, sub = av
            n = _newlines(sub, dotall, groups, blanks) if direction == 1 else 0
        elif op is sre.GROUPREF:
            n = groups.get(av)
        elif op is sre.GROUPREF_EXISTS:
            _, yes, no = av
            options = [_newlines(yes, dotall, groups, blanks), _newlines(no or [], dotall, groups, blanks)]
            n = None if None in options else max(options)  # type: ignore[type-var]
        else:
            return None
        if n is None:
            return None
        total += n
    return total


def line_reach(pattern: re.Pattern[str]) -> int | None:
    """The most line breaks one match of `pattern` can hold or look ahead over; None when unbounded (`\\s*`,
    `[\\s\\S]*?`) or not modelled."""
    tree = sre_parse.parse(pattern.pattern, pattern.flags)
    return _newlines(tree, bool(tree.state.flags & re.DOTALL), {})


def blank_reach(pattern: re.Pattern[str]) -> int | None:
    """`line_reach` counted in lines that are not blank: a run of whitespace (`\\s*`, `[ \\t\\n]+`) crosses any
    number of blank lines but into one other line at most, so it counts one. A match then lies within that many
    non-blank lines of any line it holds, the blank lines between and beside them included. None when unbounded
    still (`[\\s\\S]*?`) or not modelled."""
    tree = sre_parse.parse(pattern.pattern, pattern.flags)
    return _newlines(tree, bool(tree.state.flags & re.DOTALL), {}, blanks=True)


def _char(op: Any, av: Any) -> str | None:
    """The letter a node matches, case aside: a literal, or a class of one letter's two cases (`[Aa]`)."""
    if op is sre.LITERAL:
        return chr(av).lower()
    if op is sre.IN and all(o is sre.LITERAL for o, _ in av):
        letters = {chr(a).lower() for _, a in av}
        return letters.pop() if len(letters) == 1 else None
    return None


def _always_holds(tree: list[tuple[Any, Any]], keywords: tuple[str, ...], run: str = "", opens: bool = False) -> bool:
    """Whether every match of the sequence `tree`, after the literal text `run`, holds one of `keywords` (lower
    case): a run of literals holds one, on every path through the alternatives (`passw(?:or)?d`, `cred(?:s|ential)`:
    the parser splits a shared prefix off). With `opens`, the keyword must open the sequence's match."""
    for i, (op, av) in enumerate(tree):
        char = _char(op, av)
        if char is not None:
            run += char
            if any(run.startswith(k) if opens else k in run for k in keywords):
                return True
            if opens and not any(k.startswith(run) for k in keywords):
                return False
            continue
        rest = tree[i + 1 :]
        if op is sre.BRANCH:
            return all(_always_holds([*b, *rest], keywords, run, opens) for b in av[1])
        if op is sre.SUBPATTERN:
            return _always_holds([*av[3], *rest], keywords, run, opens)
        if op is sre.ATOMIC_GROUP:
            return _always_holds([*av, *rest], keywords, run, opens)
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT) and av[:2] == (0, 1):
            return _always_holds([*av[2], *rest], keywords, run, opens) and _always_holds(rest, keywords, run, opens)
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT) and av[0] >= 1:
            if _always_holds(list(av[2]), keywords, run, opens):  # its first pass, after the run
                return True
        elif op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
            continue  # reads no character: the literals either side are next to each other in the text
        if opens:
            return False
        run = ""
    return False


def lead(pattern: re.Pattern[str], keywords: tuple[str, ...]) -> tuple[int, re.Pattern[str]] | None:
    """For a pattern that opens with a run of at most `n` characters of one class, on one line, right before one of
    `keywords` on every path (gitleaks' generated rules: `(?i)[\\w.-]{0,50}?(?:access|auth|…)`): `n`, and that
    run as a pattern of its own (greedy, `{0,n}`). Every match then starts at most `n` characters before a
    keyword, inside a run of that class that reaches it. None for any other shape."""
    tree = sre_parse.parse(pattern.pattern, pattern.flags)
    nodes = list(tree)
    if not nodes or nodes[0][0] not in (sre.MAX_REPEAT, sre.MIN_REPEAT):
        return None
    low, high, sub = nodes[0][1]
    dotall = bool(tree.state.flags & re.DOTALL)
    if low != 0 or high == _MAX or len(sub) != 1 or sub[0][0] not in (sre.IN, sre.LITERAL, sre.NOT_LITERAL):
        return None
    if _newlines(sub, dotall, {}) != 0 or not _always_holds(nodes[1:], keywords, opens=True):
        return None
    run = sre_parse.SubPattern(tree.state, [(sre.MAX_REPEAT, (0, high, sub))])
    return high, sre_compile.compile(run, pattern.flags)


def holds_keyword(pattern: re.Pattern[str], keywords: tuple[str, ...]) -> bool:
    """Whether every match of `pattern` holds one of `keywords` (lower case, as the text is searched for them
    lowered). False when the tree does not show it (a keyword split over groups, a keyword the pattern only
    sometimes holds: sourcegraph's bare 40 hex characters)."""
    return bool(keywords) and _always_holds(list(sre_parse.parse(pattern.pattern, pattern.flags)), keywords)
