"""OpenAI-compatible chat client for structured (JSON-schema) output.

The answer's JSON is parsed here and handed back with the server's own timings;
validating it against the pipeline's models is the caller's job. A completion
cut off by the token limit is an error, never a result.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from memory_pipeline.settings import Settings
from memory_pipeline.stores.openai_compat import OpenAICompatibleClient, ServerError


class InvalidAnswer(ServerError):
    """The server answered, but not with what was asked (not JSON, cut off): worth one retry. `spent` is what
    the server says the answer cost it (an answer cut off at the token cap costs the most), so a caller's
    account of the server's time holds every attempt."""

    spent: ChatCompletion | None = None


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


# Until the server's speed is measured, it is assumed as slow as the busiest machine a real history met
# (issue 31: 8 prompt tokens a second, under 2 of answer), so the first request of a slow day gets its time.
ASSUMED_PROMPT_PER_SECOND = 8.0
ASSUMED_ANSWER_PER_SECOND = 1.5
# How much slower than its last measured pace a request may be before it counts as lost: a busy machine's
# speed wanders (a second process, a longer answer), a hung server does not answer at all.
SLACK = 3.0


@dataclass
class Pace:
    """The chat server's speed as this client last saw it, wall clock included (a proxy, a queue, a load)."""

    prompt_per_second: float = ASSUMED_PROMPT_PER_SECOND
    answer_per_second: float = ASSUMED_ANSWER_PER_SECOND
    measured: bool = False

    def seconds(self, prompt_tokens: int, answer_tokens: int) -> float:
        return prompt_tokens / self.prompt_per_second + answer_tokens / self.answer_per_second

    def learn(self, wall_seconds: float, usage: Usage, timings: Timings | None) -> None:
        """The pace of an answered request: the server's own split of prompt and answer time (llama-server's
        timings), scaled to the wall clock; without timings, the wall clock for each part alone (slower than
        true, so timeouts err long)."""
        if wall_seconds <= 0:
            return
        if timings and timings.prompt_ms and timings.predicted_ms and timings.prompt_per_second:
            slower = max(1.0, wall_seconds * 1000 / (timings.prompt_ms + timings.predicted_ms))
            if timings.prompt_ms >= 50:  # a prompt served from the cache says nothing of the server's speed
                self.prompt_per_second = timings.prompt_per_second / slower
            if timings.predicted_per_second:
                self.answer_per_second = timings.predicted_per_second / slower
        else:
            self.prompt_per_second = max(usage.prompt_tokens, 1) / wall_seconds
            self.answer_per_second = max(usage.completion_tokens, 1) / wall_seconds
        self.measured = True


class ChatClient(OpenAICompatibleClient):
    """Chat completions with JSON-schema output. Each request's read timeout follows its size and the server's
    measured pace (never below the configured timeout), and a request still unanswered then is `TimedOut`:
    that turn's failure, not retried at once with the same prompt."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pace = Pace()
        self.floor_seconds = float(self._http.timeout.read or 300.0)

    def read_timeout(self, prompt_tokens: int, max_tokens: int) -> float:
        """Seconds to wait for an answer of up to `max_tokens` to a prompt of `prompt_tokens`."""
        return max(self.floor_seconds, SLACK * self.pace.seconds(prompt_tokens, max_tokens) + 10)

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
        # Sized without a request: half the UTF-8 bytes is more tokens than English or CJK text holds, so the
        # timeout errs long.
        prompt_tokens = len("\n".join(m["content"] for m in messages).encode()) // 2
        begin = time.perf_counter()
        answer = self.request(
            "POST",
            "/v1/chat/completions",
            json=body,
            read_timeout=self.read_timeout(prompt_tokens, max_tokens),
            slow_fails=True,
        )
        completion = ChatCompletion.model_validate(answer)
        self.pace.learn(time.perf_counter() - begin, completion.usage, completion.timings)
        choice = completion.choices[0]
        try:
            if choice.finish_reason == "length":
                raise TruncatedAnswer(f"{self.base_url}: answer cut off at max_tokens={max_tokens}")
            try:
                data = json.loads(choice.message.content or "")
            except json.JSONDecodeError as exc:
                raise InvalidAnswer(
                    f"{self.base_url}: answer is not JSON ({exc}): {(choice.message.content or '')[:200]!r}"
                ) from None
        except InvalidAnswer as invalid:
            invalid.spent = completion
            raise
        return JsonAnswer(
            data=data, model=completion.model or body["model"], usage=completion.usage, timings=completion.timings
        )


def chat_client(settings: Settings, **overrides: Any) -> ChatClient:
    """The chat server of these settings (URL, model, key), as tests, benchmarks and tools open it."""
    return ChatClient(
        settings.chat_url, **{"model": settings.llama_model, "api_key": settings.api_key("chat"), **overrides}
    )
