"""OpenAI-compatible embeddings client: batches in, one unit vector per text out.

The dimension is whatever the server answers (never hard-coded), optionally cut
to a Matryoshka prefix (`dims`) and re-normalised. Models trained with task
prefixes (jina v5: "Query: " / "Document: ") get them added here, so callers
only say whether a text is a document or a query.

Every input is cut to the model's context in its own tokens before it is sent
(a Chinese observation of 300 characters can be 500 tokens). A text the server
still refuses is that text's failure: the batch is retried one text at a time
and only the refused one is given back as an error.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from memory_pipeline.settings import Settings
from memory_pipeline.stores.openai_compat import OpenAICompatibleClient, RejectedRequest, ServerError

Purpose = Literal["document", "query"]
# Known task prefixes by model-name fragment; anything else gets none unless configured.
_PREFIXES: dict[str, dict[str, str]] = {
    "jina-embeddings-v5": {"document": "Document: ", "query": "Query: "},
    "e5": {"document": "passage: ", "query": "query: "},
}


# Inputs of servers that do not say their context: every embedding model in use takes at least this.
DEFAULT_MAX_INPUT_TOKENS = 512


@dataclass(frozen=True)
class Embedded:
    """One text's result: its vector, or why the server refused it; `truncated` when cut to fit."""

    vector: list[float] | None
    error: str | None = None
    truncated: bool = False


class _Embedding(BaseModel):
    index: int
    embedding: list[float]


class _EmbeddingResponse(BaseModel):
    data: list[_Embedding]


def normalise(vector: Sequence[float], dims: int | None = None) -> list[float]:
    """The first `dims` components (all if None), scaled to unit length."""
    cut = list(vector[:dims] if dims else vector)
    norm = math.sqrt(sum(x * x for x in cut))
    if norm == 0:
        raise ServerError("the server returned a zero vector")
    return [x / norm for x in cut]


class EmbeddingsClient(OpenAICompatibleClient):
    def __init__(
        self,
        base_url: str,
        *,
        dims: int | None = None,
        doc_prefix: str | None = None,
        query_prefix: str | None = None,
        max_input_tokens: int | None = None,
        **kwargs,
    ) -> None:  # noqa: ANN003 - passed through
        super().__init__(base_url, **kwargs)
        self.dims = dims
        self._prefix = {"document": doc_prefix, "query": query_prefix}
        self._max_input_tokens = max_input_tokens

    def prefix(self, purpose: Purpose) -> str:
        configured = self._prefix[purpose]
        if configured is not None:
            return configured
        model = self.model_id().lower()
        return next((p[purpose] for fragment, p in _PREFIXES.items() if fragment in model), "")

    def max_input_tokens(self) -> int:
        """Tokens one input may have: as configured, else the server's context, else 512."""
        return self._max_input_tokens or self.context_size() or DEFAULT_MAX_INPUT_TOKENS

    def dimensions(self) -> int:
        """The size of this client's vectors (the model's, or `dims`): one probe request."""
        return len(self.embed(["dimension probe"])[0])

    def embed(self, texts: Sequence[str], *, batch_size: int = 32, purpose: Purpose = "document") -> list[list[float]]:
        """A unit vector per text; any refused text is an error (queries, probes: all or nothing)."""
        results = self.embed_each(texts, batch_size=batch_size, purpose=purpose)
        refused = [r.error for r in results if r.vector is None]
        if refused:
            raise ServerError(f"{self.base_url}: {len(refused)} of {len(texts)} texts refused, e.g. {refused[0]}")
        return [r.vector for r in results if r.vector is not None]

    def embed_each(
        self, texts: Sequence[str], *, batch_size: int = 32, purpose: Purpose = "document"
    ) -> list[Embedded]:
        """A result per text, in order: refused texts are errors of their own, not of their batch."""
        model = self.model_id()
        prefix = self.prefix(purpose)
        limit = self.max_input_tokens()
        results: list[Embedded] = []
        for start in range(0, len(texts), batch_size):
            fitted = [self.fit(prefix + text, limit, add_special=True) for text in texts[start : start + batch_size]]
            batch = [text for text, _ in fitted]
            try:
                vectors: list[list[float] | str] = list(self._vectors(model, batch))
            except RejectedRequest:
                vectors = []
                for text in batch:
                    try:
                        vectors += self._vectors(model, [text])
                    except RejectedRequest as exc:
                        vectors.append(str(exc))
            results += [
                Embedded(None, error=v, truncated=cut) if isinstance(v, str) else Embedded(v, truncated=cut)
                for v, (_, cut) in zip(vectors, fitted, strict=True)
            ]
        if len({len(r.vector) for r in results if r.vector is not None}) > 1:
            raise ServerError(f"{self.base_url}: vectors of mixed dimensions")
        return results

    def _vectors(self, model: str, batch: list[str]) -> list[list[float]]:
        answer = _EmbeddingResponse.model_validate(
            self.request("POST", "/v1/embeddings", json={"model": model, "input": batch})
        )
        if len(answer.data) != len(batch):
            raise ServerError(f"{self.base_url}: {len(answer.data)} vectors for {len(batch)} texts")
        return [normalise(item.embedding, self.dims) for item in sorted(answer.data, key=lambda item: item.index)]


def embeddings_client(settings: Settings, **overrides: Any) -> EmbeddingsClient:
    """The embedding server of these settings (URL, model, key, dims, prefixes, input limit)."""
    return EmbeddingsClient(
        settings.embeddings_url,
        **{
            "model": settings.embed_model,
            "dims": settings.embed_dims,
            "doc_prefix": settings.embed_doc_prefix,
            "query_prefix": settings.embed_query_prefix,
            "max_input_tokens": settings.embed_max_tokens,
            "api_key": settings.api_key("embed"),
            **overrides,
        },
    )
