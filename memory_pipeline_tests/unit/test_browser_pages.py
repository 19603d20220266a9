"""The memory browser's presentation: short ids with the whole id to copy, tool calls a model wrote as JSON shown
as one line, MEMORY.md without its comments, numbers on the bars, the recent feed, the done messages, the Undo of
a forget, and the page a server outage shows (with the navigation)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient

from memory_pipeline.curation.trail import read_corrections
from memory_pipeline.service.web.glance import Series, bar_chart
from memory_pipeline.service.web.present import commands_in, memory_lines, short_id
from memory_pipeline.sessions.tool_text import call_line, readable_tool_calls
from memory_pipeline.stores.memory_store import HeldMemory
from memory_pipeline_tests.unit.test_service import FakeSearch, client, fake  # noqa: F401 - fixtures

HASH = "5baf1c4f67311a51be08f4fdbae0866adc92eb68"
UUID_OBSERVATION = "obs_019e1625-789d-76c0-80ab-3724b5ddb799_u0000042"


def test_short_ids_keep_short_ones_whole_and_cut_long_ones_recognisably() -> None:
    assert short_id(HASH) == "5baf1c4f"
    assert short_id(UUID_OBSERVATION) == "obs_019e1625…0042"
    assert short_id("obs_demo-0_u0000000") == "obs_demo-0_u0000000"  # short enough already
    assert short_id("note_" + "x" * 40).endswith("…") and len(short_id("note_" + "x" * 40)) == 20


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ('Outcome: ```json {"name": "bash", "arguments": {"command": "pnpm install"}} ``` done',
         "Outcome: → bash: pnpm install done"),
        ('<tool_call>{"name": "read", "arguments": {"path": "src/a.ts", "limit": 20}}</tool_call>', "→ read: src/a.ts"),
        ('```json {"name": "edit", "arguments": "{\\"file_path\\": \\"x.py\\"}"}```', "→ edit: x.py"),
        # An observation's outcome clipped mid-call: what is left still names the call.
        ('Outcome: ```json { "name": "project-pnpm-override", "arguments": …', "Outcome: → project-pnpm-override"),
        ('Outcome: ```json { "name": "write", "arguments": { "path": "docs/a.md", "content": "# A…',
         "Outcome: → write: docs/a.md"),
        ('Use {"a": 1} as the default.', 'Use {"a": 1} as the default.'),  # JSON that is no call stays
    ],
)  # fmt: skip
def test_tool_calls_written_as_json_read_as_one_line(text: str, shown: str) -> None:
    assert readable_tool_calls(text) == shown


def test_a_calls_main_argument_is_clipped_to_one_line() -> None:
    line = call_line("bash", {"command": "echo " + "long\n" * 40})
    assert line.startswith("→ bash: echo long long") and line.endswith("…") and "\n" not in line


def test_memory_md_renders_without_comments_and_keeps_the_proposal_ids() -> None:
    memory = (
        "# Memory — /work/shop\n\nCurated by people.\n\n## Hard rules\n\n"
        "- Use pnpm, never npm ✓ <!-- p-20240701-001 -->\n<!-- a person's own comment -->\n- Plain rule\n"
    )
    lines = memory_lines(memory)
    assert [(x.kind, x.text, x.proposal) for x in lines] == [
        ("title", "Memory — /work/shop", ""),
        ("text", "Curated by people.", ""),
        ("heading", "Hard rules", ""),
        ("rule", "Use pnpm, never npm ✓", "p-20240701-001"),
        ("rule", "Plain rule", ""),
    ]


def test_every_bar_says_its_number_and_the_chart_its_total() -> None:
    svg = str(bar_chart(Series("Per priority", [("high", 3), ("medium", 7), ("low", 12)])))
    assert re.findall(r'class="count"[^>]*>(\d+)<', svg) == ["3", "7", "12"] and "(total 22, max 12)" in svg
    assert all(f">{label}</text>" in svg for label in ("high", "medium", "low"))  # room for each label
    quiet = str(bar_chart(Series("Failures", [("2026-11-01", 0), ("2026-11-02", 2), ("2026-11-03", 0)])))
    assert re.findall(r'class="count"[^>]*>(\d+)<', quiet) == ["2"]  # an empty day carries no number
    many = str(bar_chart(Series("Per day", [(f"2026-11-{d:02d}", d) for d in range(1, 61)])))
    # Too narrow for sixty numbers: the tallest bar and the last one say theirs, every bar keeps its tooltip.
    assert re.findall(r'class="count"[^>]*>(\d+)<', many) == ["60"] and many.count("<title>") == 60


def test_commands_in_a_reason_are_picked_out() -> None:
    reason = "Elasticsearch at http://127.0.0.1:9200 is unreachable: start it with `memory-pipeline local up`"
    assert commands_in(reason) == ["memory-pipeline local up"]


def test_pages_show_short_ids_with_the_whole_id_to_copy(client: TestClient) -> None:  # noqa: F811
    page = client.get("/", params={"q": "pnpm"}).text
    assert 'data-copy="m1"' in page and 'id="theme-toggle"' in page and "/static/browser.js" in page
    assert client.get("/static/browser.js").status_code == 200


def test_the_recent_feed_polls_and_lists_the_newest(client: TestClient, fake: FakeSearch) -> None:  # noqa: F811
    page = client.get("/").text
    assert 'hx-get="/recent"' in page and 'hx-trigger="load, every 10s"' in page
    feed = client.get("/recent").text
    assert '<li data-id="m1">' in feed and "&lt;script&gt;" in feed and "<script>alert" not in feed
    only_high = client.get("/recent", params={"priority": "high"}).text
    assert all(f'data-id="{r.id}"' in only_high for r in fake.recent() if r.priority == "high")


def test_done_messages_after_edit_promote_and_reject(client: TestClient, tmp_path) -> None:  # noqa: ANN001, F811
    edited = client.get("/m/m1", params={"done": "edited"}).text
    assert 'id="done"' in edited and "Saved:" in edited and 'hx-confirm="Save this text' in edited
    assert 'id="done"' not in client.get("/m/m1").text
    promoted = client.get("/review", params={"promoted": "p-20240701-001"}).text
    assert "Promoted p-20240701-001" in promoted
    assert "Rejected p-20240701-002" in client.get("/review", params={"rejected": "p-20240701-002"}).text


class _HeldStore:
    """The store's hold and restore of forgotten memories, kept in a dict (the real one: e2e/test_undo_forget)."""

    def __init__(self) -> None:
        self.held_now = {"m1": HeldMemory(memory_id="m1", kind="summary", forgotten_at=datetime.now(UTC).isoformat(),
                                          summary="Always use pnpm, never npm <b>.", project="/work/shop")}  # fmt: skip
        self.restored: list[str] = []

    def purge_held(self, before: datetime) -> int:
        return 0

    def held(self, since: datetime, size: int = 100) -> list[HeldMemory]:
        return [m for m in self.held_now.values() if datetime.fromisoformat(m.forgotten_at) >= since]

    def restore(self, memory_id: str, since: datetime) -> str | None:
        if self.held_now.pop(memory_id, None) is None:
            return None
        self.restored.append(memory_id)
        return "memory-summary"


def test_a_forget_is_undone_from_its_done_message_or_the_forgotten_page(client: TestClient, tmp_path) -> None:  # noqa: ANN001, F811
    store = _HeldStore()
    client.app.state.store = store  # type: ignore[attr-defined]
    done = client.get("/", params={"forgotten": "m1"}).text
    assert 'hx-post="/m/m1/undo-forget"' in done and 'href="/forgotten"' in done
    # Inside the message: a form in a <p> would close it, leaving the button outside (as it once did).
    message = re.search(r'<div class="done" id="done">(.*?)</div>', done, re.S)
    assert message and 'hx-post="/m/m1/undo-forget"' in message.group(1) and "<p" not in message.group(1)
    # A turn forgotten whole left every index: nothing to bring back, so no Undo is offered.
    assert "undo-forget" not in client.get("/", params={"forgotten": "m1", "whole_turn": "true"}).text

    page = client.get("/forgotten").text
    assert 'aria-current="page">Forgotten' in page and '<tr data-id="m1">' in page
    assert 'hx-post="/m/m1/undo-forget"' in page and "&lt;b&gt;" in page and "<b>." not in page

    # The Undo is a write: refused without the token or the browser's session, like every other.
    assert client.post("/m/m1/undo-forget", headers={"X-Memory-Token": ""}).status_code == 403
    assert store.restored == []
    back = client.post("/m/m1/undo-forget")
    assert back.status_code == 204 and back.headers["HX-Redirect"] == "/m/m1?done=restored"
    assert store.restored == ["m1"]
    assert [(c.memory_id, c.action) for c in read_corrections(tmp_path, "m1")] == [("m1", "undo")]
    assert client.post("/m/m1/undo-forget").status_code == 404  # nothing held any more
    assert "Brought back:" in client.get("/m/m1", params={"done": "restored"}).text
    assert 'id="none-forgotten"' in client.get("/forgotten").text
