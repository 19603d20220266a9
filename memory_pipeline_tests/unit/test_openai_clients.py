"""Error paths of the chat and embedding clients, driven through httpx.MockTransport."""

from __future__ import annotations

import json

import httpx
import pytest

from memory_pipeline.stores.embeddings import EmbeddingsClient
from memory_pipeline.stores.llm import ChatClient, TruncatedAnswer
from memory_pipeline.stores.openai_compat import ServerError

URL = "http://llm.test:8080"
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def _completion(content: str, finish_reason: str = "stop") -> dict:
    return {
        "model": "m",
        "choices": [{"message": {"content": content}, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2},
        "timings": {"predicted_per_second": 20.0},
    }


def _chat(handler, retries: int = 2) -> ChatClient:
    return ChatClient(URL, model="m", retries=retries, backoff=0, transport=httpx.MockTransport(handler))


def test_json_answer_is_parsed_with_usage_and_timings() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        assert body["response_format"]["type"] == "json_schema"
        assert body["response_format"]["json_schema"]["schema"] == SCHEMA
        return httpx.Response(200, json=_completion('{"ok": true}'))

    answer = _chat(handler).complete_json([{"role": "user", "content": "hi"}], SCHEMA)
    assert answer.data == {"ok": True}
    assert answer.usage.completion_tokens == 2 and answer.timings and answer.timings.predicted_per_second == 20.0


def test_5xx_is_retried_then_succeeds() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(503 if len(calls) < 3 else 200, json=_completion('{"ok": false}'))

    assert _chat(handler).complete_json([], SCHEMA).data == {"ok": False}
    assert len(calls) == 3


def test_persistent_failure_names_the_url_after_all_retries() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        raise httpx.ConnectError("connection refused")

    with pytest.raises(ServerError, match=r"http://llm\.test:8080/v1/chat/completions failed after 3 attempts"):
        _chat(handler).complete_json([], SCHEMA)
    assert len(calls) == 3


def test_4xx_is_not_retried() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(400, json={"error": "bad schema"})

    with pytest.raises(ServerError, match="HTTP 400"):
        _chat(handler).complete_json([], SCHEMA)
    assert len(calls) == 1


def test_truncated_answer_is_a_failure() -> None:
    with pytest.raises(TruncatedAnswer):
        _chat(lambda r: httpx.Response(200, json=_completion('{"ok": tr', "length"))).complete_json([], SCHEMA)


def test_non_json_answer_is_a_failure() -> None:
    with pytest.raises(ServerError, match="not JSON"):
        _chat(lambda r: httpx.Response(200, json=_completion("Sure! Here you go"))).complete_json([], SCHEMA)


def test_model_id_comes_from_the_server_when_not_configured() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1/models"
        return httpx.Response(200, json={"data": [{"id": "served-model"}]})

    client = ChatClient(URL, transport=httpx.MockTransport(handler))
    assert client.model_id() == "served-model"


def _embedder(handler) -> EmbeddingsClient:
    return EmbeddingsClient(URL, model="e", retries=0, transport=httpx.MockTransport(handler))


def test_embeddings_are_batched_and_reordered_by_index() -> None:
    sizes = []

    def handler(request: httpx.Request) -> httpx.Response:
        texts = json.loads(request.content)["input"]
        sizes.append(len(texts))
        data = [{"index": i, "embedding": [float(len(t)), 1.0]} for i, t in enumerate(texts)]
        return httpx.Response(200, json={"data": list(reversed(data))})

    vectors = _embedder(handler).embed(["a", "bb", "ccc", "dddd", "eeeee"], batch_size=2)
    assert sizes == [2, 2, 1]
    assert [round(v[0] / v[1]) for v in vectors] == [1, 2, 3, 4, 5]
    assert all(abs(v[0] ** 2 + v[1] ** 2 - 1) < 1e-9 for v in vectors)


def test_matryoshka_truncation_renormalises_and_prefixes_follow_the_model() -> None:
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.extend(body["input"])
        return httpx.Response(
            200, json={"data": [{"index": i, "embedding": [3.0, 4.0, 12.0]} for i in range(len(body["input"]))]}
        )

    client = EmbeddingsClient(
        URL, model="jina-embeddings-v5-text-small", dims=2, retries=0, transport=httpx.MockTransport(handler)
    )
    [vector] = client.embed(["stripe webhook"], purpose="query")
    assert vector == pytest.approx([0.6, 0.8])
    client.embed(["a memory"])
    assert seen == ["Query: stripe webhook", "Document: a memory"]
    plain = EmbeddingsClient(URL, model="all-MiniLM-L6-v2", retries=0, transport=httpx.MockTransport(handler))
    plain.embed(["x"], purpose="query")
    assert seen[-1] == "x"


def test_embeddings_with_a_missing_vector_are_refused() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"data": [{"index": 0, "embedding": [1.0]}]})

    with pytest.raises(ServerError, match="1 vectors for 2 texts"):
        _embedder(handler).embed(["a", "b"])
