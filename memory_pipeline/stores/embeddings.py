"""OpenAI-compatible embeddings client: batches in, one unit vector per text out.

The dimension is whatever the server answers (never hard-coded), optionally cut
to a Matryoshka prefix (`dims`) and re-normalised. Models trained with task
prefixes (jina v5: "Query: " / "Document: ") get them added here, so callers
only say whether a text is a document or a query.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from memory_pipeline.stores.openai_compat import OpenAICompatibleClient, ServerError

Purpose = Literal["document", "query"]
# Known task prefixes by model-name fragment; anything else gets none unless configured.
_PREFIXES: dict[str, dict[str, str]] = {
    "jina-embeddings-v5": {"document": "Document: ", "query": "Query: "},
    "e5": {"document": "passage: ", "query": "query: "},
}


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
        **kwargs,
    ) -> None:  # noqa: ANN003 - passed through
        super().__init__(base_url, **kwargs)
        self.dims = dims
        self._prefix = {"document": doc_prefix, "query": query_prefix}

    def prefix(self, purpose: Purpose) -> str:
        configured = self._prefix[purpose]
        if configured is not None:
            return configured
        model = self.model_id().lower()
        return next((p[purpose] for fragment, p in _PREFIXES.items() if fragment in model), "")

    def dimensions(self) -> int:
        """The size of this client's vectors (the model's, or `dims`): one probe request."""
        return len(self.embed(["dimension probe"])[0])

    def embed(self, texts: Sequence[str], *, batch_size: int = 32, purpose: Purpose = "document") -> list[list[float]]:
        vectors: list[list[float]] = []
        model = self.model_id()
        prefix = self.prefix(purpose)
        for start in range(0, len(texts), batch_size):
            batch = [prefix + text for text in texts[start : start + batch_size]]
            answer = _EmbeddingResponse.model_validate(
                self.request("POST", "/v1/embeddings", json={"model": model, "input": batch})
            )
            if len(answer.data) != len(batch):
                raise ServerError(f"{self.base_url}: {len(answer.data)} vectors for {len(batch)} texts")
            vectors.extend(
                normalise(item.embedding, self.dims) for item in sorted(answer.data, key=lambda item: item.index)
            )
        if len({len(v) for v in vectors}) > 1:
            raise ServerError(f"{self.base_url}: vectors of mixed dimensions {sorted({len(v) for v in vectors})}")
        return vectors
