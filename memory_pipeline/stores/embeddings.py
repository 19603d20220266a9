"""OpenAI-compatible embeddings client: batches in, one vector per text out.

The dimension is whatever the server answers (never hard-coded), and every
answer is checked: one vector per input, in order, all of one dimension.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from memory_pipeline.stores.openai_compat import OpenAICompatibleClient, ServerError


class _Embedding(BaseModel):
    index: int
    embedding: list[float]


class _EmbeddingResponse(BaseModel):
    data: list[_Embedding]


class EmbeddingsClient(OpenAICompatibleClient):
    def embed(self, texts: Sequence[str], *, batch_size: int = 32) -> list[list[float]]:
        vectors: list[list[float]] = []
        model = self.model_id()
        for start in range(0, len(texts), batch_size):
            batch = list(texts[start:start + batch_size])
            answer = _EmbeddingResponse.model_validate(
                self.request("POST", "/v1/embeddings", json={"model": model, "input": batch}))
            if len(answer.data) != len(batch):
                raise ServerError(f"{self.base_url}: {len(answer.data)} vectors for {len(batch)} texts")
            vectors.extend(item.embedding for item in sorted(answer.data, key=lambda item: item.index))
        if len({len(v) for v in vectors}) > 1:
            raise ServerError(f"{self.base_url}: vectors of mixed dimensions {sorted({len(v) for v in vectors})}")
        return vectors
