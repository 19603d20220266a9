"""Reflect (first part): the human-readable daily log of what the pipeline learned.

Written from the LLM's ideas directly, before anything else of the day's reflection and without
Elasticsearch, so a reader has it even when the cluster is down.
"""

import polars as pl
from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset

from memory_pipeline.partitions import daily_assets
from memory_pipeline.reflect.workspace import write_daily_log
from memory_pipeline.resources import MemoryWorkspaceResource
from memory_pipeline.summarize.frames import summary_documents

REFLECT = "reflect"


@asset(**daily_assets(REFLECT), kinds={"markdown"})
def daily_log(
    context: AssetExecutionContext, llm_ideas: pl.DataFrame, workspace: MemoryWorkspaceResource
) -> MaterializeResult:
    """`<workspace>/<project>/daily/<day>.md`: the day's ideas by priority, with their ids and source
    sessions; what the review loop rejects is archived at its end."""
    ideas = summary_documents(llm_ideas)
    written, unchanged = [], 0
    for project, day in llm_ideas.select("project", "partition").unique().sort("project", "partition").iter_rows():
        rows = ideas.filter((pl.col("project") == project) & (pl.col("partition") == day)) if ideas.height else ideas
        path, changed = write_daily_log(workspace.root, project, day, rows.to_dicts())
        if changed:
            written.append(str(path))
        else:
            unchanged += 1
    context.log.info(f"daily logs: {len(written)} written, {unchanged} unchanged under {workspace.root}")
    return MaterializeResult(
        metadata={
            "written": len(written),
            "unchanged": unchanged,
            "files": MetadataValue.json(written[:50]),
            "workspace": str(workspace.root),
        }
    )
