"""Wire models of the service and the MCP tools: what a client gets back, with its schema."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator

from memory_pipeline.search.models import Filters, Memory, MemoryDetail, Row


class FilterParams(BaseModel):
    """Which memories a call may return."""

    project: str | None = Field(None, description="Only this project (the session's working directory).")
    since: str | None = Field(None, description="From this date (YYYY-MM-DD), inclusive.")
    until: str | None = Field(None, description="Up to this date (YYYY-MM-DD), inclusive.")
    priority: list[Literal["high", "medium", "low"]] = Field(default_factory=list)
    kind: list[Literal["summary", "observation", "note"]] = Field(default_factory=list)
    agent: str | None = Field(
        None, description="Only this coding agent's memories: pi, claude-code, codex or gemini-cli."
    )

    @field_validator("project", "since", "until", "agent", mode="before")
    @classmethod
    def _empty_is_none(cls, value: object) -> object:
        return value or None  # a form's empty field asks for nothing

    def filters(self) -> Filters:
        """The one way a call's filters become the search's (the API, the browser, the CLI)."""
        return Filters(self.project, self.since, self.until, tuple(self.priority), tuple(self.kind), agent=self.agent)


class Memories(BaseModel):
    data: list[Memory]
    count: int
    strong: int = Field(0, description="How many matched the query's words or meaning (not a guess).")
    degraded: str | None = Field(
        None, description="Why ranking fell back to BM25 alone, or how the question was cut, if it was."
    )

    @classmethod
    def of(cls, rows: list[Row], degraded: str | None = None) -> Memories:
        return cls(
            data=[Memory.of(r) for r in rows], count=len(rows), strong=sum(r.strong for r in rows), degraded=degraded
        )


class MemoryDetails(BaseModel):
    data: list[MemoryDetail]
    count: int


class Briefing(BaseModel):
    """Markdown to put before a new session's first prompt; empty when nothing fits or matches."""

    markdown: str
    project: str | None = None
    ids: list[str] = Field(default_factory=list, description="The citation ids in it, in order.")
    degraded: str | None = Field(None, description="What could not be read (a server down), when anything.")


class ProposalOut(BaseModel):
    """A proposed rule waiting in REVIEW.md (`mark`: " " waiting, "x" to promote, "-" to reject)."""

    id: str
    section: str
    text: str
    mark: str


class ReviewOut(BaseModel):
    project: str
    proposals: list[ProposalOut]
    memory: str = Field(description="The project's MEMORY.md as it is now.")


class Decisions(BaseModel):
    """What a person decided about proposals of one project: applied exactly as `review apply` would."""

    project: str = Field(min_length=1)
    promote: list[str] = Field(default_factory=list)
    reject: list[str] = Field(default_factory=list)


class ApplyOut(BaseModel):
    promoted: list[str]
    rejected: list[str]
    untouched: list[str]


class CompactionSummary(BaseModel):
    """A session's earlier part from its memory, for pi's compaction."""

    markdown: str = Field(description="The summary; empty when the memory holds nothing of the session yet.")
    ids: list[str] = Field(description="Every citation id in it, in order.")
    turns: int = Field(description="Turns of the session the memory knew.")
    left_out: int = Field(description="Of those, the turns not shown for the budget.")


class IngestNotice(BaseModel):
    """A session file that changed (a turn ended, the session closed): ingest its day now, without the LLM."""

    session_file: str = Field(description="The session file, under the sessions folder the pipeline reads.")


class DayIngestState(BaseModel):
    """What the service did with a day's notices: queued, waiting (another run holds the day), running, done or
    failed (after retries, with the error), and the last run's id in the Dagster instance."""

    day: str
    state: Literal["queued", "waiting", "running", "done", "failed"]
    files: list[str]
    notices: int
    requested_at: float = Field(description="The first notice not yet run (epoch seconds; 0 when none is due).")
    started_at: float | None = None
    finished_at: float | None = None
    run_id: str | None = None
    seconds: float | None = Field(None, description="How long the last run took.")
    runs: int = Field(description="Successful runs of the day so far.")
    error: str | None = None
    retry_at: float | None = Field(None, description="A failed day's next try (epoch seconds), made without a notice.")
