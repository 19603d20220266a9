"""What a shell command runs and whether a text names a name, for follow-through (`followthrough.decide`): pure.

A command runs a tool when the tool is its program, once env assignments, `sudo`, `npx` and the like, a shell's
`bash -lc` and a package manager's `run` are read past (`poetry run black`), or when a package manager installs
it; any other name is run when the command names it whole (`npm` is not in `pnpm` nor in `npm-run-all`).
"""

from __future__ import annotations

import re

from memory_pipeline.language.topics import COMMANDS, canonical, topics_of

Phrase = tuple[str, ...]  # a name ("pnpm", "docker compose", "src/api/"), or words that must all be there
INSTALL = frozenset({"add", "install", "i", "require", "get", "upgrade", "update", "remove", "uninstall", "rm"})
SHELLS = frozenset({"bash", "sh", "zsh", "dash"})
RUN_VERBS = frozenset({"run", "exec", "x", "dlx"})
RUNNERS = frozenset({"npx", "pnpx", "bunx", "sudo", "env", "time", "exec", "nohup", "uvx", "pipx"})
SEGMENT = re.compile(r"&&|\|\||;|\||\n")
NUMBER = re.compile(r"^\d{2,}$|^v?\d+(?:\.\d+)+$")  # a port, a count, a version
DATA_FILE = r"\.(?:ya?ml|json|lock|toml|md|txt|cfg|ini|env)\b"
# The programs that only read what they name (and git's reading commands).
READERS = frozenset(
    {"ls", "cat", "head", "tail", "less", "more", "grep", "rg", "find", "wc", "stat", "tree", "du", "file"}
)
GIT_READS = frozenset({"status", "log", "diff", "show", "blame", "ls-files", "grep"})


def mention(text: str, name: str) -> bool:
    """Whether `text` holds `name` whole (`npm` is not in `pnpm` nor in `npm-run-all`; a folder named alone with its
    slash, `gen/`; a number or a version even when a dash goes on, `rust:1.82.0-slim`)."""
    if name.endswith("/") and name.count("/") == 1:  # a folder alone: `gen/` is not in `buf generate`
        return re.search(rf"(?<![\w.-]){re.escape(name)}", text, re.I) is not None
    if "/" in name:
        return name.strip("/.") in text.lower()
    # `docker-compose.yml` is a data file, not the `docker-compose` binary (`webpack.config.js` is webpack's).
    # A number or a version may go on with a dash (`rust:1.82.0-slim`); a tool's name may not (`npm-run-all`).
    after = r"(?![\w.]\d)(?!\w)" if NUMBER.match(name) else rf"(?![\w-]|{DATA_FILE})"
    return re.search(rf"(?<![\w-]){re.escape(name)}{after}", text, re.I) is not None


def has(text: str, phrase: Phrase) -> bool:
    return all(mention(text, word) for word in phrase)


def program(segment: str) -> list[str]:
    """A shell segment's words from its program on (env assignments, `sudo`, `npx` and paths left out)."""
    parts = [w for w in re.split(r"\s+", segment.strip()) if w]
    while parts and (("=" in parts[0] and not parts[0].startswith("-")) or parts[0] in RUNNERS):
        parts = parts[1:]
    # A shell running the command (Codex's ["bash", "-lc", "…"]): the command is what it runs.
    if len(parts) > 2 and parts[0].rsplit("/", 1)[-1] in SHELLS and re.fullmatch(r"-[a-z]*c", parts[1]):
        return program(" ".join(parts[2:]).strip("'\""))
    if parts:
        parts[0] = parts[0].rsplit("/", 1)[-1]
    return [p.strip("'\"").lower() for p in parts]


def _reads(said: list[str]) -> bool:
    """Whether a command's words (from its program on) only read: `cat`, `grep`, `git status`, `git log` …"""
    return bool(said) and (said[0] in READERS or (said[0] == "git" and len(said) > 1 and said[1] in GIT_READS))


def runs(command: str, phrase: Phrase, reading: bool = True) -> bool:
    """Whether a shell command uses `phrase`: a tool as its program (or one run through a package manager, or
    installed by one), anything else named anywhere in it; with `reading` False, not by a command that only reads
    (what a memory rejects is not broken by a look at it)."""
    tool = len(phrase) == 1 and " " not in phrase[0] and bool(topics_of(phrase[0]))
    for segment in SEGMENT.split(command):
        if not tool:
            # Reading a path does nothing to it: `git status gen/` edits nothing under gen/.
            if has(segment, phrase) and (reading or not _reads(program(segment))):
                return True
            continue
        said, name = [canonical(w) for w in program(segment)], canonical(phrase[0].rsplit("/", 1)[-1])
        # A service a command connects to, by its URL's scheme (DATABASE_URL=postgres://…, redis://cache:6379).
        if re.search(rf"(?<![\w+-]){re.escape(name)}(?:ql)?(?:\+\w+)?://", segment, re.I):
            return True
        if said[:1] == [name] or (len(said) > 1 and said[1] == name and topics_of(said[0])):
            return True
        # A package manager running a tool of the project ("poetry run black", "uv run mypy", "pnpm exec vitest").
        if len(said) > 2 and said[1] in RUN_VERBS and said[2] == name and topics_of(said[0]):
            return True
        if len(said) > 2 and topics_of(said[0]) and said[1] in INSTALL and name in said[2:]:
            return True
    return False


# What opens a line of a file before the command it runs: a list mark, a key (`run:`, `"test": "`, `RUN`), quotes.
# A key is a quoted one (package.json's scripts) or a step's (`run:`); a CSS property's ("--bg: black;") is not.
_LINE_OPENING = re.compile(
    r"""^\s*(?:[-*+]\s*)?(?:"[\w:.-]+"\s*:\s*|(?:run|script|command|cmd|entrypoint)\s*[:=]\s*"""
    r"""|(?:RUN|CMD|ENTRYPOINT|exec)\s+)?["'\[]*"""
)


def written_use(text: str, phrase: Phrase) -> bool:
    """Whether a file written (`text`) uses `phrase`: a command's tool when a line of it runs the tool, anything
    else when the file names it whole."""
    if len(phrase) == 1 and set(topics_of(phrase[0])) & COMMANDS:
        return any(runs(_LINE_OPENING.sub("", line), phrase) for line in text.splitlines())
    return has(text, phrase)
