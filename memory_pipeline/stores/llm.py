"""OpenAI-compatible chat client for structured (JSON-schema) output.

The answer's JSON is parsed here and handed back with the server's own timings;
validating it against the pipeline's models is the caller's job. A completion
cut off by the token limit is an error, never a result.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from memory_pipeline.settings import Settings
from memory_pipeline.stores.openai_compat import OpenAICompatibleClient, ServerError


class InvalidAnswer(ServerError):
    """The server answered, but not with what was asked (not JSON, cut off): worth one retry."""


class TruncatedAnswer(InvalidAnswer):
    """finish_reason was "length": the JSON is incomplete."""


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Timings(BaseModel):
    """llama-server's own measurement of the request (absent on other servers)."""

    prompt_per_second: float | None = None
    predicted_per_second: float | None = None
    prompt_ms: float | None = None
    predicted_ms: float | None = None


class _Message(BaseModel):
    content: str | None = None


class _Choice(BaseModel):
    message: _Message
    finish_reason: str | None = None


class ChatCompletion(BaseModel):
    model: str = ""
    choices: list[_Choice] = Field(min_length=1)
    usage: Usage = Usage()
    timings: Timings | None = None


class JsonAnswer(BaseModel):
    data: Any
    model: str
    usage: Usage
    timings: Timings | None


class ChatClient(OpenAICompatibleClient):
    def complete_json(
        self,
        messages: list[dict[str, str]],
        schema: dict[str, Any],
        *,
        name: str = "answer",
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> JsonAnswer:
        body = {
            "model": self.model_id(),
            "messages": messages,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "response_format": {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": schema}},
        }
        completion = ChatCompletion.model_validate(self.request("POST", "/v1/chat/completions", json=body))
        choice = completion.choices[0]
        if choice.finish_reason == "length":
            raise TruncatedAnswer(f"{self.base_url}: answer cut off at max_tokens={max_tokens}")
        try:
            data = json.loads(choice.message.content or "")
        except json.JSONDecodeError as exc:
            raise InvalidAnswer(
                f"{self.base_url}: answer is not JSON ({exc}): {(choice.message.content or '')[:200]!r}"
            ) from None
        return JsonAnswer(
            data=data, model=completion.model or body["model"], usage=completion.usage, timings=completion.timings
        )


def chat_client(settings: Settings, **overrides: Any) -> ChatClient:
    """The chat server of these settings (URL, model, key), as tests, benchmarks and tools open it."""
    return ChatClient(
        settings.chat_url, **{"model": settings.llama_model, "api_key": settings.api_key("chat"), **overrides}
    )
