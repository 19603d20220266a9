"""The hard retrieval corpus's raw messages as the benchmark scores them, and the kNN-alone ranking: shared by
`bench hard` and the search-ranking e2e test."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memory_pipeline.recall.observations import FAILED_TOKENS, failed, failure_text
from memory_pipeline.search.models import Row
from memory_pipeline.search.ranking import DEFAULT, Ranking
from memory_pipeline.stores.elasticsearch import stored_sources
from memory_pipeline.stores.indices import RAW_INDEX

PER_TURN = 3  # messages a returned turn shows

# kNN alone: the question's embedding against the memories, nothing else (no time, no words, no reordering).
KNN_ALONE = Ranking(
    plan=False, time_boost=0.0, strong_terms="", supersede=None, agree=None,
    strong_similarity=DEFAULT.strong_similarity,
)  # fmt: skip


@dataclass
class Shown:
    messages: list[str]  # raw message ids, in the order shown
    abstained: bool
    seconds: float
    best: float = -1.0  # the closest row's cosine to the question (-1: none had one)
    worded: bool = False  # some row matched most of the question's informative words


class Corpus:
    """The raw messages of the corpus: evidence ids and each turn's messages."""

    def __init__(self, es: Any, days: list[str]) -> None:
        fields = ["session_id", "turn_id", "entry_id", "message_index", "role", "content", "is_error", "exit_code"]
        docs = stored_sources(es, RAW_INDEX, {"terms": {"partition": days}}, fields=fields)
        self.by_entry = {(d["session_id"], d["entry_id"]): doc_id for doc_id, d in docs.items()}
        turns: dict[tuple[str, str], list[tuple[int, str, str]]] = {}
        self.failure: dict[tuple[str, str], str] = {}  # each turn's first failure, as its observation tells it
        for doc_id, d in sorted(docs.items(), key=lambda item: item[1]["message_index"]):
            key = (d["session_id"], d["turn_id"])
            turns.setdefault(key, []).append((d["message_index"], doc_id, d["role"]))
            if key not in self.failure and failed(d) and failure_text(d.get("content") or "", FAILED_TOKENS):
                self.failure[key] = doc_id
        self.turns = {key: sorted(rows) for key, rows in turns.items()}

    def turn_view(self, row: Row) -> list[str]:
        """What one returned turn shows: the messages of it that matched most of the question's words (a
        snippet), else the messages its observation is made of: the request, the first failure, the last
        reply."""
        key = (row.session_id, row.turn_id)
        rows = self.turns.get(key, [])
        user = [doc for _, doc, role in rows if role == "user"][:1]
        failure = [self.failure[key]] if key in self.failure else []
        reply = [doc for _, doc, role in rows if role == "assistant"][-1:]
        shown: list[str] = []
        for doc in row.messages or [*user, *failure, *reply]:
            if doc not in shown:
                shown.append(doc)
        return shown[:PER_TURN]

    def evidence(self, refs: list[dict[str, str]]) -> list[str]:
        return [self.by_entry[(r["session_id"], r["entry_id"])] for r in refs]
