"""The real chat llama-server: structured output through response_format json_schema."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from memory_pipeline.settings import Settings
from memory_pipeline.stores.llm import ChatClient


class Verdict(BaseModel):
    language: Literal["python", "rust", "go"]
    tags: list[str] = Field(min_length=1, max_length=3)


def test_chat_completion_returns_schema_valid_json(local_runtime: Settings) -> None:
    schema = Verdict.model_json_schema()
    with ChatClient(local_runtime.chat_url, model=local_runtime.llama_model) as client:
        assert client.health() == "ok"
        answer = client.complete_json(
            [
                {"role": "system", "content": "Answer in JSON."},
                {"role": "user", "content": 'Which language is this? `fn main() { println!("hi"); }`'},
            ],
            schema,
            max_tokens=128,
        )
    verdict = Verdict.model_validate(answer.data)  # raises if the grammar let anything else through
    assert verdict.language in ("python", "rust", "go")
    assert answer.usage.completion_tokens > 0
    assert answer.timings is not None and (answer.timings.predicted_per_second or 0) > 0
