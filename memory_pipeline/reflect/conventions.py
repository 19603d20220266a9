"""Conventions and values a command or a written file shows at once, for follow-through
(`followthrough.decide`): a runtime's pinned version, a commit message's and a new branch's form, a setting's
value, a value the memory gives used in another form. Pure; the first three say kept (True), broken (False) or
not shown (None).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from memory_pipeline.language.lexicon import RULE
from memory_pipeline.language.topics import topics_of
from memory_pipeline.reflect.shell import SEGMENT, Phrase, has, mention, runs

# A runtime or a server and the version a memory pins it to ("requires go 1.22", "targets Python 3.12", "Node
# 20"), and the names a command or a file gives it (an image `golang:1.20-alpine`, `python-version: ['3.10']`).
_RUNTIMES = {
    "python": ("python", "py"), "node": ("node", "nodejs", "nodejs_version"), "go": ("go", "golang"),
    "ruby": ("ruby",), "java": ("java", "jdk", "openjdk", "temurin"), "rust": ("rust", "rustc"),
    "php": ("php",), "deno": ("deno",), "postgres": ("postgres", "postgresql"), "redis": ("redis",),
    "mysql": ("mysql",),
}  # fmt: skip
_ALIASES = {alias: runtime for runtime, aliases in _RUNTIMES.items() for alias in aliases}
_PINNED = re.compile(rf"(?i)\b({'|'.join(_ALIASES)})\s+v?(\d+(?:\.\d+)?)\b(?!\.\d)")


def _pinned(text: str) -> dict[str, str]:
    """The runtimes `text` pins to a version: {"go": "1.22"}."""
    return {_ALIASES[name.lower()]: version for name, version in _PINNED.findall(text)}


def version_kept(memory_text: str, written: str) -> bool | None:
    """For a memory that pins a runtime's version, whether a command or a written file (`written`) uses that
    version (True; `20.11.1` is Node 20), another one as precise (False: `golang:1.20` against go 1.22), or names
    none (None)."""
    pinned = _pinned(memory_text)
    if not pinned:
        return None
    verdict = None
    for runtime, version in pinned.items():
        names = "|".join(re.escape(a) for a in _RUNTIMES[runtime])
        for found in re.findall(rf"(?i)(?<![\w.-])(?:{names})(?:[-_]?version)?[\s:=@'\"\[]*v?(\d+(?:\.\d+)*)", written):
            if found.count(".") < version.count("."):
                continue  # `python3` says nothing of 3.12
            same = found == version or found.startswith(version + ".")
            if not same:
                return False
            verdict = True
    return verdict


# Naming conventions a git command shows at once: a commit message against Conventional Commits, a new branch's
# name against the shape of the memory's example ("e.g. feat/ACME-123-export-csv").
_CONVENTIONAL = re.compile(r"(?i)^(?:feat|fix|chore|docs|style|refactor|perf|test|build|ci|revert)(?:\([^)]*\))?!?: \S")
_COMMIT_MESSAGE = re.compile(r"\bgit\s+commit\b[^\n]*?\s-[a-z]*m\s*(?:\"([^\"]*)\"|'([^']*)'|(\S+))")
_NEW_BRANCH = re.compile(r"\bgit\s+(?:checkout\s+-b|switch\s+-c|branch)\s+(?!-)([\w./-]+)")
_EXAMPLE = re.compile(r"(?i)\b(?:e\.g\.|for example|like)\s*`?([\w.-]+/[\w./-]*\w)")


def _branch_shape(example: str) -> re.Pattern[str]:
    """The shape of an example branch name: its upper-case words, numbers and lower-case slugs as classes."""
    shape = re.sub(r"[a-z]+(?:-[a-z]+)*|[A-Z]+|\d+", lambda m: "\x00" + m[0] + "\x00", example)
    parts = []
    for piece in shape.split("\x00"):
        if not piece:
            continue
        if piece.isdigit():
            parts.append(r"\d+")
        elif piece.isupper():
            parts.append("[A-Z]+")
        elif piece[0].islower():
            parts.append("[a-z][a-z0-9-]*")
        else:
            parts.append(re.escape(piece))
    return re.compile("".join(parts) + "$")


def convention_kept(memory_text: str, command: str) -> bool | None:
    """For a memory that sets a commit-message or branch-name convention, whether a git command keeps it (True),
    breaks it (False), or makes no commit or branch (None)."""
    if "git" not in command:
        return None
    if re.search(r"(?i)conventional commits", memory_text):
        found = _COMMIT_MESSAGE.search(command)
        if found:
            return bool(_CONVENTIONAL.match(next(g for g in found.groups() if g is not None)))
    example = _EXAMPLE.search(memory_text)
    if example and re.search(r"(?i)\bbranch", memory_text):
        found = _NEW_BRANCH.search(command)
        if found:
            return bool(_branch_shape(example[1]).match(found[1]))
    return None


_SETTING = re.compile(r"\b([A-Z][A-Z0-9]*_[A-Z0-9_]+)(?:=|\s+is\s+)([^\s`'\"]+?)[.,;]?(?=\s|$|`)")


def setting_kept(memory_text: str, written: str) -> bool | None:
    """For a memory that gives a setting its value (`DATABASE_URL is postgres://…`), whether a command or a written
    file sets it to that value (True), to another (False), or does not set it (None)."""
    for name, value in _SETTING.findall(memory_text):
        for found in re.findall(rf"\b{re.escape(name)}=[\"']?([^\s\"']+)", written):
            return found.rstrip(".,;") == value
    return None


# The shapes of a value a memory can give and a command or a file can hold instead: an absolute path, a URL (any
# scheme), an environment variable's name, a dashed identifier (a bucket, a cluster, a host).
_PATH = re.compile(r"(?<![\w.~-])/(?:[\w.-]+/)+[\w.-]+")
_VALUE_SHAPES = (
    _PATH,
    re.compile(r"\b[a-z][a-z0-9+]*://[^\s'\"`)]+"),
    re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b"),
    re.compile(r"\b[a-z][a-z0-9]*(?:-[a-z0-9]+)+\b"),
)


def _parts(value: str) -> set[str]:
    return {p for p in re.split(r"[^a-z0-9]+", value.lower()) if len(p) > 2}


def _missed(value: str, other: str, shape: re.Pattern[str]) -> bool:
    if shape is _PATH:  # the same file under other folders that share a name with the value's
        name = value.rsplit("/", 1)[-1]
        return other.rsplit("/", 1)[-1] == name and bool((_parts(other) & _parts(value)) - {name})
    return len(_parts(other) & _parts(value)) >= 2


def value_missed(given: list[str], done: str) -> bool:
    """Whether `done` (a command, a written file) uses a value of `given` (a memory's names) in another form and
    never the value itself: the same file under another folder (/opt/ledger/logs/app.log of
    /var/log/ledger/app.log), or a URL, variable or bucket sharing two of its words (NEW_CHECKOUT_ENABLED of
    FF_NEW_CHECKOUT, s3://acme-uploads of acme-prod-uploads-eu). A value the memory also names is no miss."""
    lowered = done.lower()
    for shape in _VALUE_SHAPES:
        # A path the memory gives is named without its leading slash (var/log/app.log).
        values = [v for v in given if shape.fullmatch(v) or shape.fullmatch(v.upper()) or shape.fullmatch("/" + v)]
        if not values or any(v in lowered for v in values):
            continue
        for found in shape.findall(done):
            other = found.lower().rstrip(".,;:")
            if any(other in v or v in other for v in given):
                continue
            if any(_missed(value, other, shape) for value in values):
                return True
    return False


def flags_kept(memory_text: str, wants: Iterable[Phrase], command: str) -> bool | None:
    """For a rule that a tool always runs with a flag ("always run pytest with -p no:cacheprovider", "every commit
    needs a sign-off (git commit -s)"), whether a command that runs it passes every such flag (True) or leaves one
    out (False); None when it runs none, or the memory is no lasting rule ("run X with --dry-run before …"). A flag
    written in a code span (or brackets) belongs to the command before it there (`git commit -s`: a `git add`
    needs none). `wants`: the memory's stance's."""
    wanted = [p for p in wants if len(p) == 1]
    flags = [p[0] for p in wanted if p[0].startswith("-")]
    tools = [p for p in wanted if not p[0].startswith("-") and topics_of(p[0])]
    if not flags or not tools or not RULE.search(memory_text):
        return None
    spans = [s.lower() for pair in re.findall(r"`([^`]+)`|\(([^()]+)\)", memory_text) for s in pair if s]
    # Each flag with the words of the command it belongs to (none: the tool alone).
    owners = {f: next((s[: s.index(f)].split() for s in spans if f in s.split()), []) for f in flags}
    for segment in SEGMENT.split(command):
        if any(runs(segment, tool) for tool in tools):
            due = [f for f, owner in owners.items() if has(segment, tuple(owner))]
            if due:
                return all(mention(segment, f) for f in due)
    return None
