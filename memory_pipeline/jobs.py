"""Jobs: the pipeline for a set of session days (what sensors, schedules and backfills run)."""

from __future__ import annotations

from dagster import AssetSelection, define_asset_job

ingest_job = define_asset_job(
    "ingest_job",
    selection=AssetSelection.groups("ingest"),
    description="Session files of the chosen days into memory-raw, with the acceptance checks.",
)
