"""Recall: turn observations, embeddings of every memory, and the dense_vector fields kNN searches."""

import time

import polars as pl
from dagster import (
    AssetCheckResult,
    AssetCheckSpec,
    AssetExecutionContext,
    MaterializeResult,
    MetadataValue,
    Output,
    asset,
)
from dagster_elasticsearch import ElasticsearchResource

from memory_pipeline.assets.metadata import preview
from memory_pipeline.partitions import daily_assets
from memory_pipeline.recall.observations import observe_turns
from memory_pipeline.resources import EmbeddingsResource
from memory_pipeline.search.engine import self_retrieval
from memory_pipeline.stores.recall_store import (
    embed_hash,
    ensure_vectors,
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
    "vector": pl.List(pl.Float32),
}


@asset(**_common, kinds={"polars"})
def turn_observations(turns: pl.DataFrame, raw_messages: pl.DataFrame) -> Output[pl.DataFrame]:
    """One compact record per active-path turn (asked, tools, files, outcome), built without the LLM, so
    search works before any summary exists and every memory can be cited back to its turn."""
    frame = observe_turns(turns, raw_messages)
    return Output(frame, metadata={"observations": frame.height, "preview": preview(frame, ["turn_id", "summary"])})


@asset(**_common, kinds={"polars"}, deps=["memory_summary_index"])
def embeddings(
    context: AssetExecutionContext,
    turn_observations: pl.DataFrame,
    embedder: EmbeddingsResource,
    es: ElasticsearchResource,
) -> Output[pl.DataFrame]:
    """Vectors from `/v1/embeddings` for the memories (summaries and observations) whose text, model,
    dimension or prefix changed since they were embedded; unchanged texts are never embedded twice."""
    keys = context.partition_keys
    with embedder.get_client() as client, es.get_client() as es_client:
        model, prefix = client.model_id(), client.prefix("document")
        items = texts_to_embed(es_client, turn_observations, keys)
        for item in items:
            item["embed_hash"] = embed_hash(item["text"], model, client.dims, prefix)
        todo = [item for item in items if item["embed_hash"] != item["stored_hash"]]
        begin = time.perf_counter()
        vectors = client.embed([item["text"] for item in todo], batch_size=32) if todo else []
        seconds = time.perf_counter() - begin
    frame = pl.DataFrame(
        [
            {
                "index": i["index"],
                "doc_id": i["doc_id"],
                "partition": i["partition"],
                "embed_hash": i["embed_hash"],
                "model": model,
                "vector": v,
            }
            for i, v in zip(todo, vectors, strict=True)
        ],
        schema=_VECTOR_SCHEMA,
    )
    context.log.info(f"embedded {len(todo)} of {len(items)} memories with {model} in {seconds:.1f}s")
    return Output(
        frame,
        metadata={
            "memories": len(items),
            "embedded": len(todo),
            "reused": len(items) - len(todo),
            "model": model,
            "dims": len(vectors[0]) if vectors else 0,
            "seconds": round(seconds, 2),
            "texts_per_second": round(len(todo) / seconds, 1) if todo and seconds else 0,
        },
    )


_CHECKS = [
    AssetCheckSpec(
        "every_memory_has_a_vector",
        asset="es_dense_vector",
        description="Every summary and observation has a vector of the model's dimension.",
    ),
    AssetCheckSpec(
        "knn_finds_itself",
        asset="es_dense_vector",
        description="A kNN query for a summary's own text returns that summary first.",
    ),
]


@asset(**_common, kinds={"elasticsearch"}, check_specs=_CHECKS)
def es_dense_vector(
    context: AssetExecutionContext,
    embeddings: pl.DataFrame,
    turn_observations: pl.DataFrame,
    embedder: EmbeddingsResource,
    es: ElasticsearchResource,
) -> MaterializeResult:
    """The vectors as indexed `dense_vector` fields (cosine, `vector_<dims>`) on `memory-summary` and
    `memory-observations`, ready for kNN and hybrid search; the mapping's size comes from the model."""
    keys = context.partition_keys
    with embedder.get_client() as client, es.get_client() as es_client:
        dims = embeddings["vector"].list.len()[0] if embeddings.height else client.dimensions()
        ensure_vectors(es_client, dims)
        observed = write_observations(es_client, turn_observations, keys)
        written = write_vectors(es_client, embeddings, dims)
        es_client.indices.refresh(index="memory-*")
        coverage = vector_coverage(es_client, keys, dims)
        missing = {index: total - covered for index, (total, covered) in coverage.items() if total != covered}
        found, tried = self_retrieval(es_client, client, keys, dims, sample=5)
    return MaterializeResult(
        metadata={
            "dims": dims,
            "vectors_written": written,
            "observations_written": observed[0],
            "observations_deleted": observed[1],
            "coverage": MetadataValue.json({k: list(v) for k, v in coverage.items()}),
        },
        check_results=[
            AssetCheckResult(
                check_name="every_memory_has_a_vector",
                passed=not missing,
                metadata={"without_vector": MetadataValue.json(missing), "dims": dims},
            ),
            AssetCheckResult(
                check_name="knn_finds_itself", passed=found == tried, metadata={"found_first": found, "tried": tried}
            ),
        ],
    )
