"""Materialisation metadata that tells a run's story in the Dagster UI."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import polars as pl
from dagster import MetadataValue, TableColumn, TableRecord, TableSchema

from memory_pipeline.sessions.parse import Problem
from memory_pipeline.sessions.redact import masked_project


def preview(frame: pl.DataFrame, columns: Sequence[str], rows: int = 10, width: int = 80) -> MetadataValue:
    """The first rows of `frame` as a Dagster table (long strings shortened)."""
    head = frame.select(columns).head(rows)
    records = []
    for row in head.iter_rows(named=True):
        records.append(TableRecord({k: _cell(v, width) for k, v in row.items()}))
    schema = TableSchema(columns=[TableColumn(name=c, type=str(head.schema[c])) for c in columns])
    return MetadataValue.table(records=records, schema=schema)


def _cell(value: object, width: int) -> str | int | float | bool | None:
    if value is None or isinstance(value, bool | int | float):
        return value  # type: ignore[return-value]
    # Dagster keeps metadata in its run storage: a cell is masked again (a summary the LLM wrote, a row of a
    # frame read before a rule existed), whatever the frame says it holds. Masking twice changes nothing.
    text = (masked_project(str(value)) or "").replace("\n", " ")
    return text if len(text) <= width else text[: width - 1] + "…"


def problems_markdown(problems: Iterable[Problem], limit: int = 500) -> MetadataValue:
    """Every problem by file and line (a real history has dozens; past `limit`, the run's log has the rest)."""
    listed = list(problems)
    lines = [f"- `{p.file}{':' + str(p.line) if p.line else ''}` **{p.kind}**: {p.detail}" for p in listed[:limit]]
    if len(listed) > limit:
        lines.append(f"- … and {len(listed) - limit} more (see the run's logs)")
    return MetadataValue.md("\n".join(lines) or "none")
