"""What an agent asks memory at a moment of its session (`Moment`) and what it is given (`Recalled`): the
wire of `POST /api/v1/recall`, beside the injection ledger that records each answer.

Apart from the recall itself (`search/moment.py`) so a client that only asks the running service (Claude Code's
hook, run at every file read) loads no search: importing the search costs about 2 s, the hook's whole answer
through the service well under one.
"""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

from memory_pipeline.limits import MAX_TOKENS, MIN_TOKENS
from memory_pipeline.stores.injections import Event

MAX_TEXT = 20_000  # characters of a prompt read for recall (a search reads its first words anyway)


class Moment(BaseModel):
    """A moment of a session where memory may help: what every agent sends to `POST /api/v1/recall`."""

    session_id: str = Field(min_length=1, max_length=300)
    agent: str = Field("pi", min_length=1, max_length=40)
    event: Event
    project: str | None = Field(None, max_length=4096)
    text: str = Field("", description="The prompt, the file's path or the command (read up to 20,000 characters).")
    tokens: int | None = Field(None, ge=MIN_TOKENS, le=MAX_TOKENS, description="The budget (default: the event's).")
    wait_ms: int | None = Field(
        None, ge=1, le=600_000, description="How long the client waits: an answer made later is not recorded."
    )

    @field_validator("text", mode="before")
    @classmethod
    def _clipped(cls, value: object) -> object:
        # A prompt with a pasted 200k-character log is still a prompt: read its start, never refuse it.
        return value[:MAX_TEXT] if isinstance(value, str) else value


class Recalled(BaseModel):
    """What the session is given now: markdown for its context (empty: nothing new), the memory ids in it,
    its size, and what could not be read."""

    markdown: str
    ids: list[str]
    tokens: int
    event: Event
    first: bool = Field(description="The session's first delivery.")
    degraded: str | None = None
