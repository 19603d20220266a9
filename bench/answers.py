"""The chat model's answers kept on disk, so a benchmark of what the code does after the model can be run again in
seconds on the same answers (`CachedChat`). An answer is found by everything the request sends (messages, schema,
token limit, temperature, model), so a changed prompt asks the model again; what the code does with the answer
(composition, checks) runs anew every time. A refusal or an unusable answer is kept too (the retry that followed
it is part of the run); a timeout is not (the next run asks again).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from memory_pipeline.stores.llm import ChatClient, InvalidAnswer, JsonAnswer, TruncatedAnswer
from memory_pipeline.stores.openai_compat import RejectedRequest

_ERRORS: dict[str, type[Exception]] = {"InvalidAnswer": InvalidAnswer, "TruncatedAnswer": TruncatedAnswer}


class CachedChat:
    """A `ChatClient` whose `complete_json` answers from `folder` when it asked the same before; `asked` and
    `replayed` count the requests of each kind."""

    def __init__(self, client: ChatClient, folder: Path) -> None:
        self.client, self.folder = client, folder
        self.asked = self.replayed = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)  # model_id, context_size, count_tokens: the server's own

    def complete_json(
        self,
        messages: list[dict[str, str]],
        schema: dict[str, Any],
        *,
        name: str = "answer",
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> JsonAnswer:
        request = [self.client.model_id(), messages, schema, name, max_tokens, temperature]
        key = hashlib.sha1(json.dumps(request, sort_keys=True).encode()).hexdigest()
        path = self.folder / f"{key}.json"
        if path.exists():
            self.replayed += 1
            kept = json.loads(path.read_text())
            if "refused" in kept:
                raise RejectedRequest(kept["refused"], kept["status"])
            if "error" in kept:
                raise _ERRORS[kept["error"]](kept["message"])
            return JsonAnswer.model_validate(kept["answer"])
        self.asked += 1
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            answer = self.client.complete_json(
                messages, schema, name=name, max_tokens=max_tokens, temperature=temperature
            )
        except RejectedRequest as exc:
            path.write_text(json.dumps({"refused": str(exc), "status": exc.status}))
            raise
        except (InvalidAnswer, TruncatedAnswer) as exc:
            path.write_text(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
            raise
        path.write_text(json.dumps({"answer": answer.model_dump(mode="json")}))
        return answer
