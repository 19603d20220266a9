"""The chat model's answers kept on disk, so a benchmark of what the code does after the model can be run again in
seconds on the same answers (`CachedChat`). An answer is found by everything the request sends (messages, schema,
token limit, temperature, model), so a changed prompt asks the model again; what the code does with the answer
(composition, checks) runs anew every time. A refusal or an unusable answer is kept too (the retry that followed
it is part of the run); a timeout is not (the next run asks again).

The answers to set B's turns are also kept in the repository (`KEPT`, one JSON file per model, an answer a line,
written by `pack`): a fresh checkout has no bench/.work, and asking the model again costs over an hour. Plain
text, so that what scans the repository for secrets reads them too.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from memory_pipeline.stores.llm import ChatClient, InvalidAnswer, JsonAnswer, TruncatedAnswer
from memory_pipeline.stores.openai_compat import RejectedRequest

_ERRORS: dict[str, type[Exception]] = {"InvalidAnswer": InvalidAnswer, "TruncatedAnswer": TruncatedAnswer}


KEPT = Path(__file__).with_name("kept_answers")


def kept_file(folder: Path) -> Path:
    """Where the repository keeps the answers of `folder` (named by its model)."""
    return KEPT / f"{folder.name}.json"


def pack(folder: Path) -> int:
    """Keep every answer of `folder` in the repository's file for its model (merged with what it held); how many."""
    kept = kept_file(folder)
    answers = json.loads(kept.read_text()) if kept.exists() else {}
    answers |= {path.stem: json.loads(path.read_text()) for path in folder.glob("*.json")}
    kept.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        f"{json.dumps(key)}: {json.dumps(answers[key], sort_keys=True, ensure_ascii=False)}" for key in sorted(answers)
    ]
    kept.write_text("{\n" + ",\n".join(lines) + "\n}\n")  # the same answers, the same bytes
    return len(answers)


class CachedChat:
    """A `ChatClient` whose `complete_json` answers from `folder` when it asked the same before, or from the
    repository's kept answers for its model; `asked` and `replayed` count the requests of each kind."""

    def __init__(self, client: ChatClient, folder: Path) -> None:
        self.client, self.folder = client, folder
        self.asked = self.replayed = 0
        kept = kept_file(folder)
        self.kept: dict[str, dict] = json.loads(kept.read_text()) if kept.exists() else {}

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
        if path.exists() or key in self.kept:
            self.replayed += 1
            kept = json.loads(path.read_text()) if path.exists() else self.kept[key]
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
