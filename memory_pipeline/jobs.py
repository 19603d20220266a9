"""Jobs: the pipeline for a set of session days (what sensors, schedules and backfills run)."""

from __future__ import annotations

from dagster import AssetSelection, define_asset_job

memory_job = define_asset_job(
    "memory_job",
    selection=AssetSelection.groups("ingest", "summarize", "recall", "reflect"),
    description="Session files of the chosen days into memory-raw, the LLM's ideas into memory-summary, "
    "embeddings of both into dense_vector fields, the daily log; with the acceptance checks.",
)
