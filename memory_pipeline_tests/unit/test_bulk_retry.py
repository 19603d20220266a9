"""A bulk chunk refused for a passing reason (a node lost, no master yet, rejections) is sent again; a
document refused for good fails at once, naming it."""

from __future__ import annotations

from typing import Any

import pytest
from elastic_transport import ConnectionError as TransportConnectionError

from memory_pipeline.stores import elasticsearch as store


def _fake_bulk(outcomes: list[Any], sent: list[list[dict[str, Any]]]):  # noqa: ANN202
    def streaming_bulk(client: object, actions: list[dict[str, Any]], **_: object):  # noqa: ANN202
        sent.append(list(actions))
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        for action in actions:
            status = outcome.get(action["_id"], 201)
            ok = status < 300
            yield ok, {action["_op_type"]: {"_id": action["_id"], "status": status, **({} if ok else {"error": "x"})}}

    return streaming_bulk


def test_a_lost_node_then_a_missing_master_are_waited_out(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[list[dict[str, Any]]] = []
    outcomes = [TransportConnectionError("node gone"), {"b": 503}, {}]
    monkeypatch.setattr(store.helpers, "streaming_bulk", _fake_bulk(outcomes, sent))
    waits: list[float] = []
    monkeypatch.setattr(store.time, "sleep", waits.append)
    written, deleted = store.bulk_apply(object(), "idx", [("a", {"n": 1}), ("b", {"n": 2})], deletes=["c"])  # type: ignore[arg-type]
    assert (written, deleted) == (2, 1), "counted once, from the attempt that went through"
    assert len(sent) == 3 and all([a["_id"] for a in s] == ["a", "b", "c"] for s in sent)
    assert waits == [1, 2]


def test_a_document_refused_for_good_fails_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[list[dict[str, Any]]] = []
    monkeypatch.setattr(store.helpers, "streaming_bulk", _fake_bulk([{"b": 400}], sent))
    monkeypatch.setattr(store.time, "sleep", lambda s: pytest.fail("a mapping error is not retried"))
    with pytest.raises(store.IndexingError, match="idx: 1 documents failed, e.g. \\['b: x'\\]"):
        store.bulk_apply(object(), "idx", [("a", {}), ("b", {})])  # type: ignore[arg-type]
    assert len(sent) == 1


def test_a_cluster_that_never_recovers_is_reported_after_the_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[list[dict[str, Any]]] = []
    outcomes: list[Any] = [{"a": 503}] * (len(store.RETRY_SECONDS) + 1)
    monkeypatch.setattr(store.helpers, "streaming_bulk", _fake_bulk(outcomes, sent))
    monkeypatch.setattr(store.time, "sleep", lambda s: None)
    with pytest.raises(store.IndexingError, match="did not take 1 documents after 8 retries"):
        store.bulk_apply(object(), "idx", [("a", {})])  # type: ignore[arg-type]
    assert len(sent) == len(store.RETRY_SECONDS) + 1
