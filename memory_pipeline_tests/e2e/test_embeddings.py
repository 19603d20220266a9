"""The real embedding llama-server serving our converted MiniLM GGUF."""

from __future__ import annotations

import json

import httpx
import numpy as np

from memory_pipeline.settings import Settings
from memory_pipeline.stores.embeddings import embeddings_client
from memory_pipeline_tests.conftest import FIXTURES


def _embed(settings: Settings, texts: list[str]) -> np.ndarray:
    with embeddings_client(settings) as client:
        return np.array(client.embed(texts))


def test_dimension_comes_from_the_answer_and_vectors_are_unit_length(local_runtime: Settings) -> None:
    vectors = _embed(local_runtime, ["hello world", "a second text"])
    assert vectors.shape == (2, vectors.shape[1]) and vectors.shape[1] > 0
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)


def test_related_texts_score_higher_than_unrelated(local_runtime: Settings) -> None:
    query, related, unrelated = _embed(
        local_runtime,
        [
            "The Stripe webhook signature check failed in production.",
            "Webhook verification error: invalid Stripe signature header.",
            "Bananas are a good source of potassium.",
        ],
    )
    assert query @ related > query @ unrelated + 0.2


def test_converted_model_agrees_with_the_independent_reference(local_runtime: Settings) -> None:
    # Reference: HF tokenizers + a numpy BERT on the original safetensors (fixtures/make_minilm_reference.py).
    reference = json.loads((FIXTURES / "minilm_reference.json").read_text())
    expected = np.array(reference["vectors"])
    served = _embed(local_runtime, reference["texts"])
    assert served.shape == expected.shape == (12, 384)
    cosines = (served * expected).sum(1) / np.linalg.norm(served, axis=1) / np.linalg.norm(expected, axis=1)
    assert cosines.min() >= 0.999, cosines


def test_a_text_over_the_models_context_is_cut_in_its_tokens_not_refused(local_runtime: Settings) -> None:
    """MiniLM's context is 512 tokens and it spends one on every Chinese character: 300 characters of
    Chinese plus English is over it, which once failed a whole day with HTTP 400."""
    long_cjk = "会话总是被驱逐，请把缓存换成 redis。" * 40
    with embeddings_client(local_runtime) as client:
        assert client.max_input_tokens() == 512  # from the server's /props
        assert client.count_tokens(long_cjk, add_special=True) > 512
    # The raw request, as the pipeline sent it before: refused.
    raw = httpx.post(
        f"{local_runtime.embeddings_url.rstrip('/')}/v1/embeddings",
        json={"input": [long_cjk]},
        headers={"Authorization": f"Bearer {local_runtime.api_key('embed')}"},
        timeout=30,
    )
    assert raw.status_code == 400
    with embeddings_client(local_runtime) as client:
        [short, cut] = client.embed_each(["短文本", long_cjk])
        assert short.vector and not short.truncated and cut.vector and cut.truncated


def test_the_local_servers_answer_only_with_the_key(local_runtime: Settings) -> None:
    """llama-server allows every CORS origin: without a key, any web page or local process could use it."""
    for url in (local_runtime.embeddings_url, local_runtime.chat_url):
        assert httpx.get(f"{url}/health", timeout=5).status_code == 200  # liveness stays public
        assert httpx.get(f"{url}/v1/models", timeout=5).status_code == 401
        wrong = {"Authorization": "Bearer not-the-key"}
        assert httpx.post(f"{url}/tokenize", json={"content": "x"}, headers=wrong, timeout=5).status_code == 401
    key_file = local_runtime.api_key_path
    assert key_file.stat().st_mode & 0o077 == 0 and len(key_file.read_text().strip()) >= 40
