"""A chat server's answers through httpx.MockTransport, to drive validation, retry and error paths."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx

from memory_pipeline.stores.llm import ChatClient


def completion(content: str, finish: str = "stop") -> httpx.Response:
    return httpx.Response(
        200,
        json={
            "model": "m",
            "choices": [{"message": {"content": content}, "finish_reason": finish}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20},
            "timings": {"predicted_ms": 500.0, "predicted_per_second": 40.0},
        },
    )


def plain_server(handler: Callable[[httpx.Request], httpx.Response]) -> httpx.MockTransport:
    """A server like most OpenAI-compatible ones: no llama-server `/props` or `/tokenize` (404), so the
    clients fall back to byte counts; everything else goes to `handler`."""

    def route(request: httpx.Request) -> httpx.Response:
        if request.url.path in ("/props", "/tokenize"):
            return httpx.Response(404, json={"error": "not found"})
        return handler(request)

    return httpx.MockTransport(route)


def chat_client(answers: list[httpx.Response] | Callable[[dict], httpx.Response], calls: list[dict]) -> ChatClient:
    """A client whose server answers `answers` in turn (the last one repeats), or `answers(request body)`."""

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        calls.append(body)
        if callable(answers):
            return answers(body)
        return answers[min(len(calls) - 1, len(answers) - 1)]

    return ChatClient("http://llm.test:8080", model="m", retries=1, backoff=0, transport=plain_server(handler))
