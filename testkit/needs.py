"""What the needs benchmark (bench/needs.py) and its tests share: the events a coding agent's side gives memory,
what memory answers, a session replayed through a delivery, and its score against the labelled needs.

A later session of the needs corpus (testkit/corpora/make_needs_corpus.py) is replayed as the pi extension and
the Claude Code hooks see it: `start`, then each step (a prompt, a file read by its absolute path, a failing
command with its output), each a `RecallEvent` given to a delivery function that answers `Delivered`. A need
is met by a delivered line that names it (every word of one of its `match` sets, case-insensitive) at or
before the step where it arises; a replaced decision shown as current (its `stale` words and not its
successor's) and a port shown for a service with another number than its evidence gave are harmful.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

import httpx
from pydantic import BaseModel

from memory_pipeline.search.briefing import tokens
from memory_pipeline.search.engine import MemorySearch
from memory_pipeline.search.models import Filters, Row
from memory_pipeline.service.deps import TOKEN_HEADER
from memory_pipeline.settings import Settings
from memory_pipeline.stores.indices import REFLECTION_INDEX, SUMMARY_INDEX

_PORT = re.compile(r"\bport (\d{4})\b|:(\d{4})\b")


class RecallEvent(BaseModel):
    """What the agent's side tells memory: a session started, a prompt, a file read, a failing command."""

    session_id: str
    agent: str = "pi"
    event: Literal["start", "prompt", "file", "error"]
    project: str
    text: str = ""


class Delivered(BaseModel):
    """What memory injects for one event (nothing when the answer came too late for the agent)."""

    markdown: str = ""
    ids: list[str] = []
    tokens: int = 0
    timed_out: bool = False


Delivery = Callable[[RecallEvent], Delivered]
# A delivery is made per row over that row's search (the service delivery ignores it: the service searches).
DeliveryMaker = Callable[[MemorySearch, Settings], Delivery]


AGENT_WAIT_SECONDS = 5.0  # how long the pi extension waits for recall (MEMORY_SERVICE_TIMEOUT_MS)


def service(
    url: str,
    token: str | None = None,
    transport: httpx.BaseTransport | None = None,
    wait_seconds: float = AGENT_WAIT_SECONDS,
) -> DeliveryMaker:
    """Delivery through the memory service's recall endpoint (`POST /api/v1/recall`), as the pi extension calls
    it: the service's token in its header, `wait_seconds` of waiting (the service told half a second less, so
    it records nothing the agent never got), and nothing delivered when no answer came by then (`timed_out`).
    Timed from here. Each delivery made is a replay of its own: its sessions carry a tag of it (`<id>@<tag>`),
    so the ledger of a service that served another row or replay of the same session gives it all afresh."""

    def make(search: MemorySearch, settings: Settings) -> Delivery:
        headers = {TOKEN_HEADER: token} if token else {}
        client = httpx.Client(base_url=url, timeout=wait_seconds, headers=headers, transport=transport)
        tag = uuid.uuid4().hex[:8]
        wait_ms = max(1, int(wait_seconds * 1000) - 500)

        def deliver(event: RecallEvent) -> Delivered:
            sent = event.model_copy(update={"session_id": f"{event.session_id}@{tag}"})
            try:
                response = client.post("/api/v1/recall", json=sent.model_dump() | {"wait_ms": wait_ms})
            except httpx.TimeoutException:
                return Delivered(timed_out=True)
            response.raise_for_status()
            return Delivered.model_validate(response.json())

        return deliver

    return make


def ceiling_of(row: str, rows: list[str]) -> str | None:
    """The ceiling row a row's coverage is a share of: the one through the same delivery (a row named
    `…, endpoint` against `ceiling …, endpoint`), None when that delivery has none."""
    suffix = row.partition(",")[2]
    return next((r for r in rows if r.startswith("ceiling") and r.partition(",")[2] == suffix), None)


class AsOf:
    """The search as it stood when a session started: every call's `Filters` bounded to memories established
    before `until`. The history is ingested once (one range run) and each session replayed against the
    store it would have had, rather than one Dagster run a day (25 s a day on this machine)."""

    def __init__(self, search: MemorySearch, until: str) -> None:
        self._search, self._until = search, until

    def __getattr__(self, name: str) -> object:
        found = getattr(self._search, name)
        if not callable(found):
            return found

        def bounded(*args: object, **kwargs: object) -> object:
            args = tuple(replace(a, until=self._until) if isinstance(a, Filters) else a for a in args)
            kwargs = {k: replace(v, until=self._until) if isinstance(v, Filters) else v for k, v in kwargs.items()}
            result = found(*args, **kwargs)
            if isinstance(result, list) and result and all(isinstance(r, Row) for r in result):
                return self._unreplaced(result)
            return result

        return bounded

    def _unreplaced(self, rows: list[Row]) -> list[Row]:
        """`rows`, each marked replaced by a memory or reflection established after `until` unmarked: as the
        store stood then, nothing had replaced it yet (the history was ingested whole, marks and all)."""
        marks = sorted({r.superseded_by for r in rows if r.superseded_by})
        if not marks:
            return rows
        hits = self._search._es.search(
            index=[REFLECTION_INDEX, SUMMARY_INDEX],
            ignore_unavailable=True,
            size=len(marks),
            source=["established_at"],
            query={"ids": {"values": marks}},
        )["hits"]["hits"]
        later = {h["_id"] for h in hits if str(h["_source"].get("established_at", "")) >= self._until}
        unmarked = {"superseded_by": None, "current": None, "held_until": None}
        return [r.model_copy(update=unmarked) if r.superseded_by in later else r for r in rows]


def before(session: dict) -> str:
    """The moment a session's store is read as of: the start of its day (one session a day a project)."""
    return f"{session['day']}T00:00:00.000Z"


@dataclass
class Replayed:
    session: dict
    lines: list[tuple[int, str]] = field(default_factory=list)  # (step index, line); start is -1
    tokens: int = 0
    prompt_ms: list[float] = field(default_factory=list)
    timed_out: int = 0  # events whose answer came too late for the agent


def replay(session: dict, deliver: Delivery) -> Replayed:
    """One later session's events through `deliver`: start, then each step as the agent's side sees it (a
    file by its absolute path, a failing command with its output)."""
    done = Replayed(session)
    project = session["project"]
    events = [(-1, RecallEvent(session_id=session["session_id"], event="start", project=project))]
    for n, step in enumerate(session["steps"]):
        text = f"{project}/{step['text']}" if step["event"] == "file" else step["text"]
        events.append(
            (n, RecallEvent(session_id=session["session_id"], event=step["event"], project=project, text=text))
        )
    for n, event in events:
        begin = time.perf_counter()
        got = deliver(event)
        if event.event == "prompt":
            done.prompt_ms.append((time.perf_counter() - begin) * 1000)
        done.timed_out += got.timed_out
        done.tokens += got.tokens or (tokens(got.markdown) if got.markdown else 0)
        done.lines += [(n, line) for line in got.markdown.splitlines() if line.lstrip().startswith("- ")]
    return done


def names(line: str, sets: list[list[str]]) -> bool:
    low = line.lower()
    return any(all(word.lower() in low for word in words) for words in sets)


@dataclass
class Scored:
    session: dict
    needs: int
    met: int
    tokens: int
    lines: int
    unused: int
    stale: int
    unsupported: int
    prompt_ms: list[float]
    missed: list[str]
    delivered: list[tuple[int, str]] = field(default_factory=list)  # (step, line), to read beside the needs
    timed_out: int = 0


def score(done: Replayed, pieces: dict) -> Scored:
    """A replayed session against its labelled needs (see the module's doc)."""
    session = done.session
    day = session["day"]
    wanted = [(n, key) for n, step in enumerate(session["steps"]) for key in step["needs"]]
    met = [key for n, key in wanted if any(m <= n and names(line, pieces[key]["match"]) for m, line in done.lines)]
    needed = {key for _, key in wanted}
    unused = sum(not any(names(line, pieces[k]["match"]) for k in needed) for _, line in done.lines)
    successors = [p for p in pieces.values() if p["replaces"] and p["planted_day"] < day]
    stale = sum(
        1 for p in successors for _, line in done.lines if names(line, p["stale"]) and not names(line, p["match"])
    )
    ports = {p["component"]: p["port"] for p in pieces.values() if p["port"] and p["planted_day"] < day}
    unsupported = 0
    for _, line in done.lines:
        low = line.lower()
        shown = {int(a or b) for a, b in _PORT.findall(low)}
        for component, port in ports.items():
            if f"{component} service" in low and shown and port not in shown:
                unsupported += 1
    missed = [key for _, key in wanted if key not in met]
    return Scored(
        session,
        len(wanted),
        len(met),
        done.tokens,
        len(done.lines),
        unused,
        stale,
        unsupported,
        done.prompt_ms,
        missed,
        done.lines,
        done.timed_out,
    )
