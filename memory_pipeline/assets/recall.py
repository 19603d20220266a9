"""Recall: turn observations and their index, embeddings of every memory, and the dense_vector fields kNN
searches."""

import time

import polars as pl
from dagster import (
    AssetExecutionContext,
    MaterializeResult,
    MetadataValue,
    Output,
    asset,
)
from dagster_elasticsearch import ElasticsearchResource

from memory_pipeline.assets.metadata import preview
from memory_pipeline.assets.when import DAILY, runs
from memory_pipeline.checks import (
    every_memory_has_a_vector,
    index_equals_observations,
    knn_finds_itself,
    specs,
)
from memory_pipeline.curation.corrections import correct_frame
from memory_pipeline.curation.trail import read_corrections
from memory_pipeline.partitions import daily_assets
from memory_pipeline.recall.observations import observe_turns
from memory_pipeline.resources import DayLocksResource, EmbeddingsResource, MemoryWorkspaceResource, SessionsResource
from memory_pipeline.stores.indices import OBSERVATION_INDEX
from memory_pipeline.stores.raw_store import elsewhere_sessions
from memory_pipeline.stores.recall_store import (
    embed_hash,
    ensure_vectors,
    observation_hashes,
    self_retrieval,
    texts_to_embed,
    vector_coverage,
    write_observations,
    write_vectors,
)

RECALL = "recall"
_common = daily_assets(RECALL)
_VECTOR_SCHEMA = {
    "index": pl.String,
    "doc_id": pl.String,
    "partition": pl.String,
    "embed_hash": pl.String,
    "model": pl.String,
    "vector": pl.List(pl.Float32),  # null when the server refused the text (see `error`)
    "error": pl.String,
    "truncated": pl.Boolean,
}


@asset(**_common, kinds={"polars"})
@runs(DAILY)
def turn_observations(
    turns: pl.DataFrame,
    raw_messages: pl.DataFrame,
    workspace: MemoryWorkspaceResource,
    day_locks: DayLocksResource,  # held for the whole run, however it was started
) -> Output[pl.DataFrame]:
    """One compact record per active-path turn (asked, tools, files, what failed, outcome), built without the
    LLM, so search works before any summary exists and every memory can be cited back to its turn. People's
    corrections apply: an observation they forgot is not made again, one they edited keeps their text."""
    observed = observe_turns(turns, raw_messages)
    frame = correct_frame(observed, read_corrections(workspace.root), OBSERVATION_INDEX)
    return Output(
        frame,
        metadata={
            "observations": frame.height,
            "left_out_by_people": observed.height - frame.height,
            "preview": preview(frame, ["turn_id", "summary"]),
        },
    )


@asset(**_common, kinds={"elasticsearch"}, check_specs=specs("memory_observations_index"))
@runs(DAILY)
def memory_observations_index(
    context: AssetExecutionContext,
    turn_observations: pl.DataFrame,
    es: ElasticsearchResource,
    sessions: SessionsResource,
    day_locks: DayLocksResource,  # held for the whole run, however it was started
) -> MaterializeResult:
    """`memory-observations`: one document per active-path turn (id `obs_<session>_<turn>`), the turn's
    observation as `turn_observations` made it. It is what search finds before any summary exists (the
    person's own words of each turn, ranked beside the memories) and what every memory cites back to. Kept
    equal to the frame: only new or changed observations are written (vectors on them stay), those of turns no
    longer there are deleted, so re-running writes nothing; the sessions of a folder no longer configured are
    left as they are."""
    keys = context.partition_keys
    with es.get_client() as client:
        # The observations of a folder no longer configured stay as they are (`folders --forget` removes them).
        kept = elsewhere_sessions(client, keys, {str(root.path) for root in sessions.roots})
        counts = write_observations(client, turn_observations, keys, kept)
        client.indices.refresh(index=OBSERVATION_INDEX)
        check = index_equals_observations(*observation_hashes(client, turn_observations, keys, kept))
    return MaterializeResult(
        metadata={
            "observations": turn_observations.height,
            "written": counts.written,
            "deleted": counts.deleted,
            "unchanged": counts.unchanged,
            "sessions": turn_observations["session_id"].n_unique() if turn_observations.height else 0,
            "kept_from_unconfigured_folders": len(kept),
        },
        check_results=[check],
    )


@asset(**_common, kinds={"polars"}, deps=["memory_summary_index", "own_word_memories"])
@runs(DAILY)
def embeddings(
    context: AssetExecutionContext,
    turn_observations: pl.DataFrame,
    embedder: EmbeddingsResource,
    es: ElasticsearchResource,
    day_locks: DayLocksResource,  # held for the whole run, however it was started
) -> Output[pl.DataFrame]:
    """Vectors from `/v1/embeddings` for the memories (summaries and observations) whose text, model,
    dimension or prefix changed since they were embedded; unchanged texts are never embedded twice.
    Each text is cut to the model's context in its tokens; a text the server refuses is listed with its
    id (and tried again next run), the others go on. The observations' texts are `turn_observations`; the
    summaries' are read from `memory-summary`, where every writer leaves them (a run without the chat model
    has no summary frame), so a memory the index holds without a vector is embedded by the next run."""
    keys = context.partition_keys
    with embedder.get_client() as client, es.get_client() as es_client:
        model, prefix = client.model_id(), client.prefix("document")
        items = texts_to_embed(es_client, turn_observations, keys)
        for item in items:
            item["embed_hash"] = embed_hash(item["text"], model, client.dims, prefix)
        todo = [item for item in items if item["embed_hash"] != item["stored_hash"]]
        begin = time.perf_counter()
        results = client.embed_each([item["text"] for item in todo], batch_size=32) if todo else []
        seconds = time.perf_counter() - begin
        max_tokens = client.max_input_tokens()
    frame = pl.DataFrame(
        [
            {
                "index": i["index"],
                "doc_id": i["doc_id"],
                "partition": i["partition"],
                "embed_hash": i["embed_hash"],
                "model": model,
                "vector": r.vector,
                "error": r.error,
                "truncated": r.truncated,
            }
            for i, r in zip(todo, results, strict=True)
        ],
        schema=_VECTOR_SCHEMA,
    )
    refused = frame.filter(pl.col("vector").is_null())
    for row in refused.iter_rows(named=True):
        context.log.warning(f"{row['index']}/{row['doc_id']}: not embedded: {row['error']}")
    context.log.info(f"embedded {len(todo) - refused.height} of {len(items)} memories with {model} in {seconds:.1f}s")
    dims = [len(r.vector) for r in results if r.vector is not None]
    return Output(
        frame,
        metadata={
            "memories": len(items),
            "embedded": len(todo) - refused.height,
            "refused": refused.height,
            "refused_items": MetadataValue.json(
                [f"{r['index']}/{r['doc_id']}: {r['error']}" for r in refused.head(100).iter_rows(named=True)]
            ),
            "truncated_to_fit": int(frame["truncated"].sum()),
            "max_input_tokens": max_tokens,
            "reused": len(items) - len(todo),
            "model": model,
            "dims": dims[0] if dims else 0,
            "seconds": round(seconds, 2),
            "texts_per_second": round(len(todo) / seconds, 1) if todo and seconds else 0,
        },
    )


SELF_SAMPLE = 5  # memories of each index a run queries for themselves


@asset(
    **_common,
    kinds={"elasticsearch"},
    check_specs=specs("es_dense_vector"),
    # Vectors are written onto documents that exist: the observations' are written by their own asset.
    deps=["memory_observations_index"],
)
@runs(DAILY)
def es_dense_vector(
    context: AssetExecutionContext,
    embeddings: pl.DataFrame,
    embedder: EmbeddingsResource,
    es: ElasticsearchResource,
    day_locks: DayLocksResource,  # held for the whole run, however it was started
) -> MaterializeResult:
    """The vectors as indexed `dense_vector` fields (cosine, `vector_<dims>`) on `memory-summary` and
    `memory-observations`, ready for kNN and hybrid search; the mapping's size comes from the model."""
    keys = context.partition_keys
    embedded = embeddings.filter(pl.col("vector").is_not_null())
    refused = embeddings.filter(pl.col("vector").is_null())
    with embedder.get_client() as client, es.get_client() as es_client:
        dims = embedded["vector"].list.len()[0] if embedded.height else client.dimensions()
        ensure_vectors(es_client, dims)
        written = write_vectors(es_client, embedded, dims)
        es_client.indices.refresh(index="memory-*")
        coverage = vector_coverage(es_client, keys, dims)
        found, tried = self_retrieval(es_client, client, keys, dims, sample=SELF_SAMPLE)
    return MaterializeResult(
        metadata={
            "dims": dims,
            "vectors_written": written,
            "coverage": MetadataValue.json({k: list(v) for k, v in coverage.items()}),
        },
        check_results=[
            every_memory_has_a_vector(coverage, refused, dims),
            knn_finds_itself(found, tried, coverage, SELF_SAMPLE),
        ],
    )
