"""The one way this project talks to Elasticsearch.

The local node is the integ-test distribution: it has no `GET /` handler (so the
client's `info()`/`ping()` fail there) but answers cluster health, which is also
where the client runs its product check (the `X-Elastic-Product` header).
"""

from __future__ import annotations

from typing import Any

from elasticsearch import Elasticsearch

from memory_pipeline.settings import Settings


def client_kwargs(settings: Settings) -> dict[str, Any]:
    """Constructor arguments for `elasticsearch.Elasticsearch` (and dagster-elasticsearch's HostsConfig)."""
    kwargs: dict[str, Any] = {"hosts": [settings.elasticsearch_url], "verify_certs": settings.es_verify_certs}
    if settings.es_api_key:
        kwargs["api_key"] = settings.es_api_key
    if settings.es_ca_certs:
        kwargs["ca_certs"] = str(settings.es_ca_certs)
    return kwargs


def make_client(settings: Settings, **overrides: Any) -> Elasticsearch:
    return Elasticsearch(**{**client_kwargs(settings), "request_timeout": 30, "retry_on_timeout": True,
                            "max_retries": 3, **overrides})


def cluster_summary(client: Elasticsearch) -> dict[str, str]:
    """Health and version of the cluster, for `local status` (raises if it does not answer)."""
    health = client.cluster.health(timeout="5s")
    nodes = client.nodes.info(node_id="_local", metric="_none")
    version = next(iter(nodes["nodes"].values()))["version"] if nodes.get("nodes") else "?"
    return {"health": str(health["status"]), "version": str(version), "cluster": str(health["cluster_name"])}
