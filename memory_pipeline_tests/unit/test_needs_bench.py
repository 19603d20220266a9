"""The needs benchmark's corpus, labels and scoring (bench/needs.py): the corpus is what the issue asks, is
rebuilt identically, and a replayed session is scored as the module says."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from memory_pipeline.search.briefing import tokens
from memory_pipeline.search.models import Filters
from memory_pipeline.service.deps import TOKEN_HEADER
from testkit.corpora.make_needs_corpus import LABELS_FILE, build
from testkit.needs import AsOf, Delivered, RecallEvent, Replayed, ceiling_of, replay, score, service


def test_the_corpus_is_rebuilt_identically_and_is_as_large_as_asked(tmp_path: Path) -> None:
    made = build(tmp_path / "corpus", tmp_path / "needs.json")
    assert (tmp_path / "needs.json").read_text() == LABELS_FILE.read_text()
    for project, pieces in made["projects"].items():
        sessions = list((tmp_path / "corpus" / "sessions").glob(f"--{project.strip('/').replace('/', '-')}--/*.jsonl"))
        assert len(sessions) >= 100
        assert len(pieces) >= 150
        # A project's knowledge is at least three times a session's budget.
        assert tokens("\n".join(p["statement"] for p in pieces.values())) >= 3 * made["budget_tokens"]
        assert sum(1 for p in pieces.values() if p["replaces"]) >= 10
    held = {s["project"] for s in made["sessions"] if s["split"] == "held_out"}
    assert held == {made["held_out_project"]}
    assert len([s for s in made["sessions"] if s["split"] == "held_out"]) * 3 >= len(made["sessions"]) * 0.9


def test_a_need_is_planted_in_an_earlier_session_and_never_as_its_label(tmp_path: Path) -> None:
    made = json.loads(LABELS_FILE.read_text())
    files = {}
    for path in LABELS_FILE.parents[1].joinpath("corpus", "needs", "sessions").rglob("*.jsonl"):
        files[json.loads(path.read_text().splitlines()[0])["id"]] = path.read_text().lower()
    for session in made["sessions"][:40]:
        pieces = made["projects"][session["project"]]
        for step in session["steps"]:
            for key in step["needs"]:
                piece = pieces[key]
                assert piece["planted_day"] < session["day"]
                said = files[piece["planted_in"]]
                assert any(all(w.lower() in said for w in words) for words in piece["match"])
                assert piece["statement"].lower() not in said


def _session(day: str = "2023-03-01") -> dict:
    return {
        "session_id": "s1",
        "project": "/p",
        "day": day,
        "steps": [
            {"event": "prompt", "text": "do x", "needs": ["a"]},
            {"event": "file", "text": "src/x.py", "needs": ["b"]},
        ],
    }


PIECES = {
    "a": {"match": [["alpha"]], "stale": [], "replaces": None, "planted_day": "2023-01-01", "port": None,
          "component": "x"},
    "b": {"match": [["beta"]], "stale": [], "replaces": None, "planted_day": "2023-01-01", "port": 4321,
          "component": "x"},
    "c": {"match": [["x", "newlib"]], "stale": [["x", "oldlib"]], "replaces": "z", "planted_day": "2023-02-01",
          "port": None, "component": "x"},
}  # fmt: skip


def test_a_need_counts_only_when_a_line_names_it_at_or_before_its_step() -> None:
    done = Replayed(_session(), lines=[(0, "- beta is the way"), (1, "- alpha said late"), (1, "- unrelated")])
    scored = score(done, PIECES)
    assert (scored.needs, scored.met) == (2, 1)
    assert scored.missed == ["a"]
    assert scored.unused == 1


def test_a_replaced_choice_shown_as_current_and_a_wrong_port_are_harmful() -> None:
    lines = [
        (0, "- x uses oldlib for caching"),
        (0, "- x moved from oldlib to newlib"),
        (0, "- the x service on port 9999"),
    ]
    scored = score(Replayed(_session(), lines=lines), PIECES)
    assert scored.stale == 1
    assert scored.unsupported == 1
    before = score(Replayed(_session("2023-01-15"), lines=lines), PIECES)  # the successor not yet planted
    assert before.stale == 0


def test_replay_sends_start_then_each_step_with_a_file_by_its_absolute_path() -> None:
    seen: list[RecallEvent] = []

    def deliver(event: RecallEvent) -> Delivered:
        seen.append(event)
        return Delivered(markdown="- alpha here" if event.event == "prompt" else "")

    done = replay(_session(), deliver)
    assert [e.event for e in seen] == ["start", "prompt", "file"]
    assert seen[2].text == "/p/src/x.py"
    assert done.lines == [(0, "- alpha here")]
    assert len(done.prompt_ms) == 1


def test_as_of_bounds_every_filter_it_is_given() -> None:
    calls: list[tuple] = []

    class Search:
        def recent(self, filters: Filters, k: int = 10) -> list:
            calls.append(("recent", filters))
            return []

        def about_file(self, path: str, filters: Filters = Filters(), k: int = 3) -> list:
            calls.append(("about_file", filters))
            return []

    view = AsOf(Search(), "2023-03-01T00:00:00.000Z")  # type: ignore[arg-type]
    view.recent(Filters(project="/p"), k=3)
    view.about_file("x.py", filters=Filters(project="/p"))
    assert [c[1].until for c in calls] == ["2023-03-01T00:00:00.000Z"] * 2
    assert all(c[1].project == "/p" for c in calls)


def test_the_service_delivery_posts_the_event_and_reads_the_answer() -> None:
    sent: list[dict] = []
    headers: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        headers.append(request.headers.get(TOKEN_HEADER, ""))
        assert request.url.path == "/api/v1/recall"
        return httpx.Response(200, json={"markdown": "- alpha", "ids": ["m1"], "tokens": 3})

    make = service("http://memory", token="t0ken", transport=httpx.MockTransport(answer))
    deliver = make(None, None)  # type: ignore[arg-type]
    got = deliver(RecallEvent(session_id="s1", event="prompt", project="/p", text="do x"))
    deliver(RecallEvent(session_id="s1", event="file", project="/p", text="/p/a.py"))
    make(None, None)(RecallEvent(session_id="s1", event="start", project="/p"))  # type: ignore[arg-type]
    assert got == Delivered(markdown="- alpha", ids=["m1"], tokens=3)
    assert sent[0] | {"session_id": "s1"} == {
        "session_id": "s1",
        "agent": "pi",
        "event": "prompt",
        "project": "/p",
        "text": "do x",
        "wait_ms": 4500,  # the service records nothing the agent stopped waiting for
    }
    # One replay's events share a session; another replay of the same session is another to the ledger.
    tags = [s["session_id"] for s in sent]
    assert tags[0].startswith("s1@") and tags[0] == tags[1] != tags[2] and tags[2].startswith("s1@")
    assert headers == ["t0ken"] * 3  # the header the service checks (TOKEN_HEADER), as the pi extension sends it


def test_an_answer_later_than_the_agent_waits_delivers_nothing_and_is_counted() -> None:
    def late(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    deliver = service("http://memory", transport=httpx.MockTransport(late))(None, None)  # type: ignore[arg-type]
    got = deliver(RecallEvent(session_id="s1", event="prompt", project="/p", text="do x"))
    assert got == Delivered(timed_out=True)
    done = replay({"session_id": "s1", "project": "/p", "steps": []}, deliver)
    assert done.timed_out == 1 and done.lines == []  # the start event, given nothing


def test_the_service_delivery_fails_loudly_when_the_endpoint_fails() -> None:
    deliver = service("http://memory", transport=httpx.MockTransport(lambda r: httpx.Response(503)))(None, None)  # type: ignore[arg-type]
    with pytest.raises(httpx.HTTPStatusError):
        deliver(RecallEvent(session_id="s1", event="start", project="/p"))


def test_each_row_is_compared_with_the_ceiling_of_its_own_delivery() -> None:
    names = ["baseline (last user messages)", "ceiling (perfect memories)", "llm-free"]
    names += ["ceiling (perfect memories), endpoint", "llm-free, endpoint"]
    assert ceiling_of("llm-free", names) == "ceiling (perfect memories)"
    assert ceiling_of("baseline (last user messages)", names) == "ceiling (perfect memories)"
    assert ceiling_of("llm-free, endpoint", names) == "ceiling (perfect memories), endpoint"
    assert ceiling_of("llm-free, other", names) is None  # no ceiling through that delivery: no share
