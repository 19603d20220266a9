"""The real embedding llama-server serving our converted MiniLM GGUF."""

from __future__ import annotations

import json

import numpy as np

from memory_pipeline.settings import Settings
from memory_pipeline.stores.embeddings import EmbeddingsClient
from memory_pipeline_tests.conftest import FIXTURES


def _embed(settings: Settings, texts: list[str]) -> np.ndarray:
    with EmbeddingsClient(settings.embeddings_url, model=settings.embed_model) as client:
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
