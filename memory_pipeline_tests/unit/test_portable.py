"""The export format read back, its errors, the Markdown for reading and the rules block (control/portable.py)."""

from __future__ import annotations

import pytest

from memory_pipeline.control.portable import (
    RULES_BEGIN,
    RULES_END,
    BadExport,
    CorrectionLine,
    FileLine,
    Header,
    MemoryLine,
    markdown,
    parse_lines,
    promoted_rules,
    with_rules,
)
from memory_pipeline.curation.corrections import Correction

MEMORY_MD = "# Memory — /w/shop\n\n## Rules\n\n- Use pnpm, never npm <!-- p-20261129-001 -->\n- Run the tests first\n"


def _lines() -> list[str]:
    summary = {
        "summary": "The webhook retries three times",
        "kind": "fact",
        "evidence": "it retries 3x",
        "project": "/w/shop",
        "priority": "high",
        "established_at": "2026-11-29T10:00:00Z",
    }
    return [
        Header().model_dump_json(),
        MemoryLine(index="memory-summary", id="s1", document=summary).model_dump_json(),
        MemoryLine(
            index="memory-notes", id="n1", document={"summary": "Ship on Fridays", "project": "/w/shop"}
        ).model_dump_json(),
        CorrectionLine(correction=Correction(memory_id="s1", action="edit", priority="high")).model_dump_json(),
        FileLine(project="/w/shop", text=MEMORY_MD).model_dump_json(),
    ]


def test_an_export_reads_back_line_for_line() -> None:
    items = list(parse_lines(_lines(), "x.jsonl"))
    assert [type(i).__name__ for i in items] == ["Header", "MemoryLine", "MemoryLine", "CorrectionLine", "FileLine"]
    assert items[1].document["evidence"] == "it retries 3x"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("broken", "where"),
    [
        ('{"type": "memory", "index": "memory-raw", "id": "x", "document": {}}', "x.jsonl:2"),
        ("not json", "x.jsonl:2"),
        ('{"type": "memory", "index": "memory-notes", "id": "", "document": {}}', "x.jsonl:2"),
    ],
)
def test_a_bad_line_is_named(broken: str, where: str) -> None:
    with pytest.raises(BadExport, match=where):
        list(parse_lines([_lines()[0], broken], "x.jsonl"))


def test_a_file_without_header_or_from_the_future_is_refused() -> None:
    with pytest.raises(BadExport, match="x.jsonl:1: no header"):
        list(parse_lines(_lines()[1:], "x.jsonl"))
    with pytest.raises(BadExport, match="newer"):
        list(parse_lines([Header(version=99).model_dump_json()], "x.jsonl"))


def test_markdown_reads_by_project_and_kind() -> None:
    text = markdown(parse_lines(_lines(), "x.jsonl"))
    assert "## /w/shop" in text and "### Rules people promoted (MEMORY.md)" in text
    assert "- Use pnpm, never npm\n" in text and "<!--" not in text
    assert "### Fact (1)" in text and "- The webhook retries three times (`s1`, high, 2026-11-29)" in text
    assert "  > it retries 3x" in text and "### Note (1)" in text


def test_promoted_rules_drop_the_proposal_ids() -> None:
    assert promoted_rules(MEMORY_MD) == ["- Use pnpm, never npm", "- Run the tests first"]


def test_the_rules_block_is_added_once_and_replaced_after() -> None:
    mine = "# Agents\n\nBe brief.\n"
    once = with_rules(mine, ["- Use pnpm"], "/w/shop")
    assert once.startswith(mine) and once.count(RULES_BEGIN) == 1 and once.endswith(RULES_END + "\n")
    twice = with_rules(once + "\nMore of mine.\n", ["- Use pnpm", "- Run tests"], "/w/shop")
    assert twice.count(RULES_BEGIN) == 1 and "- Run tests" in twice and twice.endswith("More of mine.\n")
    assert with_rules("", ["- a"], "/w") == f"{RULES_BEGIN}\n## Rules of /w\n\n- a\n{RULES_END}\n"
