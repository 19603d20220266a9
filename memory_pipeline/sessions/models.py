"""Pydantic models of pi session entries (v1, v2, v3; pi 0.x and 1.x), read tolerantly.

Every line of a session file is validated into one of these. Unknown keys are
ignored (pi adds fields often), unknown entry types and content blocks become
`UnknownEntry`/`UnknownBlock` instead of errors, and the shapes pi itself treats
as optional are optional here. The format is in docs/pi-session-format.md.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, TypeAdapter


class _Tolerant(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


# --- content blocks ---------------------------------------------------------------


class TextBlock(_Tolerant):
    type: Literal["text"]
    text: str = ""


class ThinkingBlock(_Tolerant):
    type: Literal["thinking"]
    thinking: str = ""
    redacted: bool = False


class ToolCallBlock(_Tolerant):
    type: Literal["toolCall"]
    id: str = ""
    name: str = ""
    # Models send wrong types and keys: arguments are untyped JSON.
    arguments: Any = None


class ImageBlock(_Tolerant):
    type: Literal["image"]
    mimeType: str = "application/octet-stream"
    # The base64 payload is deliberately not a field: it is never kept.


class UnknownBlock(_Tolerant):
    type: str = "unknown"


def _block_tag(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if kind in ("text", "thinking", "toolCall", "image") else "unknown"


Block = Annotated[
    Annotated[TextBlock, Tag("text")]
    | Annotated[ThinkingBlock, Tag("thinking")]
    | Annotated[ToolCallBlock, Tag("toolCall")]
    | Annotated[ImageBlock, Tag("image")]
    | Annotated[UnknownBlock, Tag("unknown")],
    Discriminator(_block_tag),
]
Content = str | list[Block] | None


class Usage(_Tolerant):
    input: int = 0
    output: int = 0
    cacheRead: int = 0
    cacheWrite: int = 0
    totalTokens: int | None = None
    cost: dict[str, float] | None = None


# --- messages (the `message` field of message entries) --------------------------------


class Message(_Tolerant):
    """Any role; role-specific fields are optional so unknown roles still parse."""

    role: str
    content: Content = None
    timestamp: float | None = None  # Unix ms
    # assistant
    api: str | None = None
    provider: str | None = None
    model: str | None = None
    usage: Usage | None = None
    stopReason: str | None = None
    errorMessage: str | None = None
    # toolResult
    toolCallId: str | None = None
    toolName: str | None = None
    isError: bool | None = None
    # bashExecution
    command: str | None = None
    output: str | None = None
    exitCode: int | None = None
    cancelled: bool | None = None
    truncated: bool | None = None
    excludeFromContext: bool | None = None
    # custom / hookMessage
    customType: str | None = None
    display: bool | None = None
    # system (1.x)
    sections: dict[str, str | None] | None = None


# --- entries -------------------------------------------------------------------------


class SessionHeader(_Tolerant):
    type: Literal["session"]
    id: str = Field(min_length=1)
    timestamp: str
    cwd: str = ""
    version: int | None = None
    parentSession: str | None = None
    branchedFrom: str | None = None  # v1 name of parentSession

    @classmethod
    def of(cls, session_id: str, timestamp: str, cwd: str, parent: str | None = None) -> SessionHeader:
        """The header of another agent's file, read as pi's newest format (its readers give pi's entries)."""
        return cls(type="session", id=session_id, timestamp=timestamp, cwd=cwd, version=3, parentSession=parent)


class _EntryBase(_Tolerant):
    # v1 entries have neither; the parser gives them deterministic ones.
    id: str | None = None
    parentId: str | None = None
    timestamp: str | None = None


class MessageEntry(_EntryBase):
    type: Literal["message"]
    message: Message


class CompactionEntry(_EntryBase):
    type: Literal["compaction"]
    summary: str = ""
    firstKeptEntryId: str | None = None
    firstKeptEntryIndex: int | None = None  # v1
    tokensBefore: int | None = None


class BranchSummaryEntry(_EntryBase):
    type: Literal["branch_summary"]
    fromId: str | None = None
    summary: str = ""


class CustomMessageEntry(_EntryBase):
    type: Literal["custom_message"]
    customType: str = ""
    content: Content = None
    display: bool = True


class LabelEntry(_EntryBase):
    type: Literal["label"]
    targetId: str = ""
    label: str | None = None


class SessionInfoEntry(_EntryBase):
    type: Literal["session_info"]
    name: str | None = None


class ContextEditEntry(_EntryBase):
    type: Literal["context_edit"]
    targetId: str = ""
    replacement: dict[str, Any] | None = None


class MetadataEntry(_EntryBase):
    """Entries that shape the tree but carry no conversation."""

    type: Literal["model_change", "thinking_level_change", "custom", "usage"]
    provider: str | None = None
    modelId: str | None = None


class UnknownEntry(_EntryBase):
    type: str


_KNOWN_TYPES = {
    "session",
    "message",
    "compaction",
    "branch_summary",
    "custom_message",
    "label",
    "session_info",
    "context_edit",
    "model_change",
    "thinking_level_change",
    "custom",
    "usage",
}


def _entry_tag(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    if kind in ("model_change", "thinking_level_change", "custom", "usage"):
        return "metadata"
    return kind if kind in _KNOWN_TYPES else "unknown"


Entry = Annotated[
    Annotated[SessionHeader, Tag("session")]
    | Annotated[MessageEntry, Tag("message")]
    | Annotated[CompactionEntry, Tag("compaction")]
    | Annotated[BranchSummaryEntry, Tag("branch_summary")]
    | Annotated[CustomMessageEntry, Tag("custom_message")]
    | Annotated[LabelEntry, Tag("label")]
    | Annotated[SessionInfoEntry, Tag("session_info")]
    | Annotated[ContextEditEntry, Tag("context_edit")]
    | Annotated[MetadataEntry, Tag("metadata")]
    | Annotated[UnknownEntry, Tag("unknown")],
    Discriminator(_entry_tag),
]

ENTRY = TypeAdapter(Entry)
HEADER = TypeAdapter(SessionHeader)
