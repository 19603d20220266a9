"""The real chat llama-server: structured output through response_format json_schema."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from memory_pipeline.settings import Settings
from memory_pipeline.stores.llm import InvalidAnswer, chat_client


class Verdict(BaseModel):
    language: Literal["python", "rust", "go"]
    tags: list[str] = Field(min_length=1, max_length=3)


def test_chat_completion_returns_schema_valid_json(local_runtime: Settings) -> None:
    schema = Verdict.model_json_schema()
    with chat_client(local_runtime) as client:
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


def test_a_cjk_turn_is_sized_by_the_servers_tokens_and_fits(local_runtime: Settings) -> None:
    """A Chinese turn at 3 characters a token (the old guess) overflows a 2,048-token budget; counted by the
    server's tokenizer it fits, and the server takes it."""
    from memory_pipeline.summarize.ideas import MEMORIES_SCHEMA
    from memory_pipeline.summarize.prompt import TurnMessage, build_messages

    turn = [TurnMessage(role="user", content="请检查部署脚本为什么在预发布环境失败，并修复 SSH 密钥路径。" * 150)]
    with chat_client(local_runtime) as client:
        guessed = build_messages(turn, 2048, 256, count_tokens=lambda text: len(text) // 3)
        assert sum(client.count_tokens(m["content"]) for m in guessed) > 2048 - 256
        fitted = build_messages(turn, 2048, 256, count_tokens=client.count_tokens)
        assert sum(client.count_tokens(m["content"]) for m in fitted) <= 2048 - 256 - 64
        # The server takes the prompt (no HTTP 400): it answers, whether the answer fits 256 tokens or not.
        try:
            answered = client.complete_json(fitted, MEMORIES_SCHEMA, max_tokens=256).usage.prompt_tokens <= 2048 - 256
        except InvalidAnswer:
            answered = True
    assert answered
