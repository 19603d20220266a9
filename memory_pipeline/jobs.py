"""Jobs: the pipeline for a set of session days (what sensors, schedules and backfills run), and the
review loop."""

from datetime import UTC, datetime

from dagster import AssetKey, AssetSelection, OpExecutionContext, define_asset_job, in_process_executor, job, op

from memory_pipeline.reflect.review import apply_all
from memory_pipeline.resources import MemoryWorkspaceResource

memory_job = define_asset_job(
    "memory_job",
    selection=AssetSelection.groups("ingest", "summarize", "recall", "reflect"),
    description="Session files of the chosen days into memory-raw, the LLM's ideas into memory-summary, "
    "embeddings of both into dense_vector fields, the daily log, reflections, REVIEW.md proposals and rule "
    "maturity; with the acceptance checks.",
    # One process for all steps: a process per step costs seconds each, far more than most steps' own work
    # (bench/results.md, "executor"); the steps run one after another anyway on two cores.
    executor_def=in_process_executor,
)

# What `memory_job` runs without the chat model (MEMORY_PIPELINE_NO_LLM, `backfill --no-llm`): everything search
# needs that costs no LLM call, as the run's asset selection. A later full run summarises those days; their
# files are not read again (the manifest says they are unchanged).
LLM_FREE_ASSETS = [
    AssetKey(name)
    for name in (
        "session_files",
        "raw_messages",
        "turns",
        "memory_raw_index",
        "turn_observations",
        "embeddings",
        "es_dense_vector",
        "memory_followthrough",
    )
]


def assets_to_run(with_llm: bool) -> list[AssetKey] | None:
    """The asset selection of a `memory_job` run: None (all of it) with the chat model, else the LLM-free part."""
    return None if with_llm else LLM_FREE_ASSETS


friction_job = define_asset_job(
    "friction_job",
    selection=AssetSelection.groups("friction"),
    description="The weekly friction report: repeated corrections, recurring failures and tool misuse across the "
    "week's sessions, as fix proposals in REVIEW.md.",
)


@op(description="Promote checked REVIEW.md proposals into MEMORY.md; archive rejected ones in the daily log.")
def apply_reviews(context: OpExecutionContext, workspace: MemoryWorkspaceResource) -> None:
    reports = apply_all(workspace.root, datetime.now(UTC).date().isoformat())
    for name, report in reports.items():
        context.log.info(
            f"{name}: {len(report.promoted)} promoted, {len(report.rejected)} rejected, {len(report.untouched)} waiting"
        )
    context.add_output_metadata(
        {
            "projects": len(reports),
            "promoted": sum(len(r.promoted) for r in reports.values()),
            "rejected": sum(len(r.rejected) for r in reports.values()),
        }
    )


@job(description="The review loop from the UI: `memory-pipeline review apply` for every project.")
def review_apply_job() -> None:
    apply_reviews()
