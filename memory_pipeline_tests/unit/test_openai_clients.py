"""Error paths of the chat and embedding clients, driven through httpx.MockTransport."""

from __future__ import annotations

import json

import httpx
import pytest

from memory_pipeline.stores.embeddings import EmbeddingsClient
from memory_pipeline.stores.llm import ChatClient, TruncatedAnswer
from memory_pipeline.stores.openai_compat import ServerError
from memory_pipeline_tests.unit.mock_llm import plain_server

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
    return ChatClient(URL, model="m", retries=retries, backoff=0, transport=plain_server(handler))


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

    client = ChatClient(URL, transport=plain_server(handler))
    assert client.model_id() == "served-model"


def test_a_query_embedding_is_one_request_once_the_model_is_known() -> None:
    paths = []

    def handler(request: httpx.Request) -> httpx.Response:
        paths.append(request.url.path)
        if request.url.path == "/v1/models":
            return httpx.Response(200, json={"data": [{"id": "multilingual-e5-small"}]})
        texts = json.loads(request.content)["input"]
        assert texts == ["query: which cache"]  # the prefix follows the listed model
        return httpx.Response(200, json={"data": [{"index": 0, "embedding": [1.0, 0.0]}]})

    client = EmbeddingsClient(URL, retries=0, transport=plain_server(handler))
    for _ in range(3):
        client.embed(["which cache"], purpose="query")
    assert paths == ["/v1/models", "/v1/embeddings", "/v1/embeddings", "/v1/embeddings"]


def _embedder(handler) -> EmbeddingsClient:
    return EmbeddingsClient(URL, model="e", retries=0, transport=plain_server(handler))


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
        URL, model="jina-embeddings-v5-text-small", dims=2, retries=0, transport=plain_server(handler)
    )
    [vector] = client.embed(["stripe webhook"], purpose="query")
    assert vector == pytest.approx([0.6, 0.8])
    client.embed(["a memory"])
    assert seen == ["Query: stripe webhook", "Document: a memory"]
    plain = EmbeddingsClient(URL, model="all-MiniLM-L6-v2", retries=0, transport=plain_server(handler))
    plain.embed(["x"], purpose="query")
    assert seen[-1] == "x"


def test_embeddings_with_a_missing_vector_are_refused() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"data": [{"index": 0, "embedding": [1.0]}]})

    with pytest.raises(ServerError, match="1 vectors for 2 texts"):
        _embedder(handler).embed(["a", "b"])


def test_a_refused_text_fails_alone_and_its_batch_goes_on() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        texts = json.loads(request.content)["input"]
        if any("bad" in t for t in texts):
            return httpx.Response(400, json={"error": {"message": "input is rejected"}})
        return httpx.Response(200, json={"data": [{"index": i, "embedding": [1.0, 0.0]} for i in range(len(texts))]})

    results = _embedder(handler).embed_each(["good", "bad one", "fine"], batch_size=3)
    assert [r.vector is not None for r in results] == [True, False, True]
    assert "HTTP 400" in results[1].error and "input is rejected" in results[1].error
    with pytest.raises(ServerError, match="1 of 3 texts refused"):
        _embedder(handler).embed(["good", "bad one", "fine"])


def test_texts_are_cut_to_the_servers_context_in_its_tokens() -> None:
    """A llama-server that says its context (/props) and counts tokens (/tokenize): 1 token per character,
    plus CLS and SEP, as MiniLM does for Chinese."""
    sent: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else {}
        if request.url.path == "/props":
            return httpx.Response(200, json={"default_generation_settings": {"n_ctx": 64}})
        if request.url.path == "/tokenize":
            return httpx.Response(200, json={"tokens": [0] * (len(body["content"]) + 2 * body["add_special"])})
        sent.extend(body["input"])
        return httpx.Response(200, json={"data": [{"index": i, "embedding": [1.0]} for i in range(len(body["input"]))]})

    client = EmbeddingsClient(URL, model="e", retries=0, transport=httpx.MockTransport(handler))
    results = client.embed_each(["短" * 10, "长" * 300])
    assert [r.truncated for r in results] == [False, True]
    assert len(sent[0]) == 10 and len(sent[1]) + 2 <= 64 and sent[1] == "长" * len(sent[1])


def test_without_a_tokenizer_the_bound_is_bytes() -> None:
    client = _embedder(lambda r: httpx.Response(200, json={"data": [{"index": 0, "embedding": [1.0]}]}))
    text, cut = client.fit("漢字" * 100, 50, add_special=True)
    assert cut and len(text.encode()) <= 48 and text == "漢字" * 8
    assert client.max_input_tokens() == 512  # no /props: a size every embedding model takes


def test_the_key_goes_with_every_request() -> None:
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization"))
        return httpx.Response(200, json={"data": [{"id": "served"}]})

    ChatClient(URL, api_key="k3y", transport=plain_server(handler)).model_id()
    ChatClient(URL, transport=plain_server(handler)).model_id()
    assert seen == ["Bearer k3y", None]
