"""The real local Elasticsearch, through the pinned Python client."""

from __future__ import annotations

import uuid

import elasticsearch
import pytest

from memory_pipeline.settings import Settings
from memory_pipeline.stores.elasticsearch import cluster_summary, make_client


@pytest.fixture
def client(local_runtime: Settings):
    with make_client(local_runtime) as es:
        yield es


def test_health_and_product_check(client: elasticsearch.Elasticsearch) -> None:
    # Any successful call went through the client's product check (X-Elastic-Product).
    summary = cluster_summary(client)
    assert summary["health"] in ("yellow", "green")
    assert summary["version"].split(".")[0] == elasticsearch.__versionstr__.split(".")[0], (
        "the client's major must match the server's"
    )


def test_dense_vector_index_knn_and_delete(client: elasticsearch.Elasticsearch) -> None:
    index = f"test-knn-{uuid.uuid4().hex[:8]}"
    client.indices.create(
        index=index,
        mappings={
            "properties": {
                "text": {"type": "text"},
                "vector": {"type": "dense_vector", "dims": 3, "index": True, "similarity": "cosine"},
            }
        },
    )
    try:
        docs = {"east": [1.0, 0.0, 0.0], "north": [0.0, 1.0, 0.0], "north-east": [0.7, 0.7, 0.0]}
        for doc_id, vector in docs.items():
            client.index(index=index, id=doc_id, document={"text": doc_id, "vector": vector})
        client.indices.refresh(index=index)
        hits = client.search(
            index=index, knn={"field": "vector", "query_vector": [0.9, 0.1, 0.0], "k": 2, "num_candidates": 10}
        )["hits"]["hits"]
        assert [h["_id"] for h in hits] == ["east", "north-east"]
        assert client.search(index=index, query={"match": {"text": "north"}})["hits"]["total"]["value"] == 2
        mapping = client.indices.get_mapping(index=index)[index]["mappings"]["properties"]["vector"]
        assert mapping["similarity"] == "cosine" and mapping["dims"] == 3
    finally:
        client.indices.delete(index=index)
    assert not client.indices.exists(index=index)
