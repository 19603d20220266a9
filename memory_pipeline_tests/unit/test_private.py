"""`<private>` spans and `#private` turns never leave the parser (sessions/private.py, messages.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_pipeline.sessions.messages import session_messages
from memory_pipeline.sessions.private import PRIVATE_MARK, hide_private, hide_private_value, private_turn
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.sessions.sources import parse_any
from testkit.corpora.secrets_corpus import FIELDS, session_lines

SECRET = "Marguerite Okonkwo-Vance lives at 14 Quayside"


def test_a_span_is_replaced_and_the_rest_kept() -> None:
    text, spans = hide_private(f"call <private>{SECRET}</private> tomorrow, and <PRIVATE >x\ny</Private> too")
    assert text == f"call {PRIVATE_MARK} tomorrow, and {PRIVATE_MARK} too"
    assert spans == 2


def test_an_unclosed_span_hides_the_rest() -> None:
    text, spans = hide_private(f"keep this <private>{SECRET}\nand this line too")
    assert text == f"keep this {PRIVATE_MARK}" and spans == 1


def test_text_without_a_tag_is_untouched() -> None:
    for text in ("", "a < b and private > c", "the private key file", "<privateer>"):
        assert hide_private(text) == (text, 0)


def test_nested_values_are_hidden() -> None:
    value, spans = hide_private_value({"command": [f"echo <private>{SECRET}</private>", 3], "n": None})
    assert value == {"command": [f"echo {PRIVATE_MARK}", 3], "n": None} and spans == 1


@pytest.mark.parametrize(
    ("text", "private"),
    [("#private what is my landlord's name", True), ("  #PRIVATE\nx", True), ("#privately", False), ("hi", False)],
)
def test_a_private_turn_opens_with_the_marker(text: str, private: bool) -> None:
    assert private_turn(text) is private


def _rows(tmp_path: Path, lines: list[dict]) -> list[dict]:
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    rows, _ = session_messages(parse_any(path), Redactor(), "p")
    return rows


@pytest.mark.parametrize("field", FIELDS)
def test_a_span_in_any_field_is_in_no_row(tmp_path: Path, field: str) -> None:
    blob = f"before <private>{SECRET}</private> after"
    rows = _rows(tmp_path, session_lines(field, blob, "s1"))
    dumped = json.dumps(rows, default=str)
    assert "Okonkwo" not in dumped
    if field not in ("session name", "label"):  # those are columns of every row, not a message of their own
        assert any(PRIVATE_MARK in json.dumps(r, default=str) and "after" in json.dumps(r, default=str) for r in rows)


def test_a_private_turn_hides_the_reply_and_tools_but_not_the_next_turn(tmp_path: Path) -> None:
    lines = session_lines("tool call arguments", f"cat /home/{SECRET}", "s2")
    first = lines[1]["message"]
    first["content"] = f"#private who lives at my flat? {SECRET}"
    lines.append(
        {
            "type": "message",
            "id": "u9",
            "parentId": lines[-1]["id"],
            "timestamp": "2024-09-09T11:00:00Z",
            "message": {"role": "user", "content": "Now run the tests.", "timestamp": 1725879600000},
        }
    )
    rows = _rows(tmp_path, lines)
    assert "Okonkwo" not in json.dumps(rows, default=str)
    hidden = [r for r in rows if r["turn_id"] == rows[0]["turn_id"]]
    assert len(hidden) >= 3 and all(r["content"] in (PRIVATE_MARK, "") for r in hidden)
    assert all(c["arguments"] == json.dumps(PRIVATE_MARK) for r in hidden for c in r["tool_calls"])
    assert rows[-1]["content"] == "Now run the tests." and rows[-1]["turn_id"] != rows[0]["turn_id"]
