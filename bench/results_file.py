"""bench/results.md is one section per benchmark, replaced in place on every run."""

from __future__ import annotations

import platform
import re
from datetime import UTC, datetime
from pathlib import Path

import psutil

RESULTS = Path(__file__).with_name("results.md")
HEADER = "# Benchmark results\n\nEach section is rewritten by its benchmark; the command that produced it is in it.\n"


def machine() -> str:
    return (
        f"{platform.node() or 'host'}: {psutil.cpu_count()} cores, "
        f"{psutil.virtual_memory().total / 2**30:.0f} GiB, Python {platform.python_version()}"
    )


def write_section(name: str, command: str, body: str) -> None:
    text = RESULTS.read_text() if RESULTS.exists() else HEADER
    section = (
        f"<!-- {name} -->\n## {name}\n\n`{command}`, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {machine()}\n\n"
        f"{body.strip()}\n<!-- /{name} -->\n"
    )
    pattern = re.compile(rf"<!-- {re.escape(name)} -->.*?<!-- /{re.escape(name)} -->\n", re.DOTALL)
    text = pattern.sub(lambda _: section, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section
    RESULTS.write_text(text)


def table(headers: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
