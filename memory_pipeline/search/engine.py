"""The three layers over `memory-summary` and `memory-observations`.

1. index: a compact ranked list for a query (BM25 and kNN fused by RRF, with filters);
2. timeline: the chronological neighbours of a hit, in the same project;
3. detail: the full records of chosen ids, with the messages of their source turns.
Every row's `id` is the document id: a stable citation.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from elasticsearch import Elasticsearch

from memory_pipeline.search.rrf import reciprocal_rank_fusion
from memory_pipeline.stores.embeddings import EmbeddingsClient
from memory_pipeline.stores.indices import RAW_INDEX, RECALL_INDICES, SEARCH_INDICES, vector_field
from memory_pipeline.stores.openai_compat import ServerError

Mode = Literal["hybrid", "bm25", "knn"]
_SOURCE = [
    "doc_id", "summary", "priority", "project", "established_at", "session_id", "turn_id", "tags", "partition",
    "superseded_by", "author",
]  # fmt: skip
KIND_INDEX = {kind: index for index, kind in SEARCH_INDICES.items()}
BM25_MINIMUM_SHOULD_MATCH = "2<50%"
# A hit only the embeddings found, below this cosine similarity, is a guess rather than a match (MiniLM: related
# sentences score 0.5-0.8, unrelated ones 0.0-0.35).
STRONG_SIMILARITY = 0.5
_RAW_SOURCE = [
    "doc_id", "entry_id", "role", "content", "tool_name", "tool_calls", "is_error", "exit_code", "entry_type",
    "message_timestamp", "message_index",
]  # fmt: skip


@dataclass(frozen=True)
class Filters:
    project: str | None = None
    since: str | None = None  # ISO date or datetime, inclusive
    until: str | None = None
    priority: tuple[str, ...] = ()
    kind: tuple[str, ...] = ()  # summary, observation

    def clauses(self) -> list[dict[str, Any]]:
        clauses: list[dict[str, Any]] = []
        if self.project:
            clauses.append({"term": {"project": self.project}})
        if self.since or self.until:
            clauses.append(
                {"range": {"established_at": {k: v for k, v in (("gte", self.since), ("lte", self.until)) if v}}}
            )
        if self.priority:
            clauses.append({"terms": {"priority": list(self.priority)}})
        return clauses

    def indices(self) -> list[str]:
        return [KIND_INDEX[k] for k in self.kind] if self.kind else list(SEARCH_INDICES)


@dataclass
class Row:
    id: str
    kind: str
    time: str
    priority: str
    summary: str
    project: str
    session_id: str
    turn_id: str
    score: float = 0.0
    tags: list[str] = field(default_factory=list)
    superseded_by: str | None = None  # a later decision replaced this one (reflection's mark)
    author: str | None = None  # who stored a note on purpose (notes only)
    bm25: float | None = None  # the BM25 score, when the words matched
    similarity: float | None = None  # the cosine similarity to the query, when the embeddings found it

    @property
    def strong(self) -> bool:
        """Matched on the query's words, or close in meaning: an answer rather than a guess."""
        return self.bm25 is not None or (self.similarity or 0.0) >= STRONG_SIMILARITY

    @property
    def one_line(self) -> str:
        text = " ".join(self.summary.split())
        return text if len(text) <= 140 else text[:139] + "…"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _row(hit: dict[str, Any], score: float = 0.0) -> Row:
    source = hit["_source"]
    return Row(
        id=hit["_id"],
        kind=SEARCH_INDICES.get(hit["_index"], hit["_index"]),
        time=source.get("established_at", ""),
        priority=source.get("priority", ""),
        summary=source.get("summary", ""),
        project=source.get("project", ""),
        session_id=source.get("session_id", ""),
        turn_id=source.get("turn_id", ""),
        score=score,
        tags=source.get("tags", []),
        superseded_by=source.get("superseded_by"),
        author=source.get("author"),
    )


class MemorySearch:
    def __init__(self, es: Elasticsearch, embedder: EmbeddingsClient) -> None:
        self.es = es
        self.embedder = embedder
        self.degraded: str | None = None  # why the last hybrid search fell back to BM25, if it did

    def _existing(self, indices: list[str]) -> list[str]:
        return [i for i in indices if self.es.indices.exists(index=i)]

    def _hits(self, filters: Filters, size: int, **body: Any) -> list[dict[str, Any]]:
        """One search over the kinds `filters` allows (nothing while none of their indices exists)."""
        indices = self._existing(filters.indices())
        if not indices:
            return []
        return self.es.search(index=indices, size=size, source=_SOURCE, **body)["hits"]["hits"]

    def bm25(self, query: str, k: int, filters: Filters = Filters()) -> list[dict[str, Any]]:
        # Most of a longer query's terms must match: one shared common word ("theme") is no evidence, and
        # a long list of such weak hits would push the kNN channel's good ones down in the fusion.
        return self._hits(
            filters,
            k,
            query={
                "bool": {
                    "must": [
                        {
                            "multi_match": {
                                "query": query,
                                "fields": ["summary", "tags.text^0.5", "project.text^0.3"],
                                "minimum_should_match": BM25_MINIMUM_SHOULD_MATCH,
                            }
                        }
                    ],
                    "filter": filters.clauses(),
                }
            },
        )

    def knn(self, query: str, k: int, filters: Filters = Filters()) -> list[dict[str, Any]]:
        [vector] = self.embedder.embed([query], purpose="query")
        field = vector_field(len(vector))
        # Only indices that hold vectors of this size (a notes index made while the embedder was down has none).
        mappings = self.es.indices.get_field_mapping(index=filters.indices(), fields=field, ignore_unavailable=True)
        indices = [index for index, found in mappings.body.items() if found.get("mappings")]
        if not indices:
            return []
        knn: dict[str, Any] = {
            "field": field,
            "query_vector": vector,
            "k": k,
            "num_candidates": max(50, 4 * k),
        }
        if filters.clauses():
            knn["filter"] = filters.clauses()
        return self.es.search(index=indices, size=k, source=_SOURCE, knn=knn)["hits"]["hits"]

    def index(self, query: str, k: int = 10, filters: Filters = Filters(), mode: Mode = "hybrid") -> list[Row]:
        """Layer 1: a compact ranked list."""
        depth = max(k * 3, 30)
        lists = []
        self.degraded = None
        if mode in ("hybrid", "bm25"):
            lists.append(self.bm25(query, depth, filters))
        if mode in ("hybrid", "knn"):
            try:
                lists.append(self.knn(query, depth, filters))
            except ServerError:
                if mode == "knn":
                    raise
                # The embedding server is down: BM25 alone still answers (a briefing must not fail on it).
                self.degraded = f"{self.embedder.base_url} unreachable: BM25 only"
        hits = {hit["_id"]: hit for ranking in lists for hit in ranking}
        recency = {doc_id: hit["_source"].get("established_at", "") for doc_id, hit in hits.items()}
        fused = reciprocal_rank_fusion([[h["_id"] for h in ranking] for ranking in lists], recency)
        bm25 = {h["_id"]: h["_score"] for h in lists[0]} if mode != "knn" else {}
        # Elasticsearch reports a cosine kNN hit as (1 + cosine) / 2.
        knn = {h["_id"]: 2 * h["_score"] - 1 for h in lists[-1]} if mode != "bm25" and not self.degraded else {}
        rows = []
        for doc_id, score in fused[:k]:
            row = _row(hits[doc_id], score)
            row.bm25, row.similarity = bm25.get(doc_id), knn.get(doc_id)
            rows.append(row)
        return rows

    def recent(self, filters: Filters = Filters(), k: int = 10) -> list[Row]:
        """The newest `k` memories that pass `filters` (no query)."""
        hits = self._hits(filters, k, sort=[{"established_at": "desc"}], query={"bool": {"filter": filters.clauses()}})
        return [_row(h) for h in hits]

    def timeline(self, anchor: str, window: int = 5, filters: Filters = Filters()) -> list[Row]:
        """Layer 2: the `window` memories before and after `anchor` (an id, or the best match for a query)."""
        center = self.get([anchor])
        if not center:
            best = self.index(anchor, k=1, filters=filters)
            if not best:
                return []
            center = self.get([best[0].id])
        row = center[0]
        if filters.project and row.project != filters.project:
            return []  # the anchor is another project's: nothing of it may show
        # The anchor's project, and every filter asked for, hold on both sides.
        scope = [{"term": {"project": row.project}}] if row.project else []
        scope += [c for c in filters.clauses() if "term" not in c or "project" not in c["term"]]

        def side(op: str, order: str) -> list[Row]:
            hits = self._hits(
                filters,
                window,
                sort=[{"established_at": order}],
                query={
                    "bool": {
                        "filter": [*scope, {"range": {"established_at": {op: row.time}}}],
                        "must_not": [{"ids": {"values": [row.id]}}],
                    }
                },
            )
            return [_row(h) for h in hits]

        before = list(reversed(side("lte", "desc")))
        after = side("gte", "asc")
        seen = {r.id for r in before}
        return [*before, row, *[r for r in after if r.id not in seen]]

    def get(self, ids: list[str]) -> list[Row]:
        indices = self._existing(list(SEARCH_INDICES))
        if not ids or not indices:
            return []
        response = self.es.search(index=indices, size=len(ids), source=_SOURCE, query={"ids": {"values": ids}})
        by_id = {h["_id"]: _row(h) for h in response["hits"]["hits"]}
        return [by_id[i] for i in ids if i in by_id]

    def detail(self, ids: list[str]) -> list[dict[str, Any]]:
        """Layer 3: the full records of `ids`, each with every message of its source turn from memory-raw."""
        records = []
        for row in self.get(ids):
            messages = []
            if row.session_id and row.turn_id and self.es.indices.exists(index=RAW_INDEX):
                messages = self.turn_messages(row.session_id, row.turn_id)
            records.append(row.to_dict() | {"source_turn": messages})
        return records

    def turn_messages(self, session_id: str, turn_id: str, page: int = 500) -> list[dict[str, Any]]:
        """Every message of one turn, in order: paged, so a long turn is never cut short."""
        query = {"bool": {"filter": [{"term": {"session_id": session_id}}, {"term": {"turn_id": turn_id}}]}}
        messages: list[dict[str, Any]] = []
        after: list[Any] | None = None
        while True:
            response = self.es.search(
                index=RAW_INDEX,
                size=page,
                sort=[{"message_index": "asc"}, {"doc_id": "asc"}],
                source=_RAW_SOURCE,
                query=query,
                **({"search_after": after} if after else {}),
            )
            hits = response["hits"]["hits"]
            messages += [h["_source"] for h in hits]
            if len(hits) < page:
                return messages
            after = hits[-1]["sort"]


TIE = 1e-4  # scores of identical vectors differ by float noise in the HNSW graph (about 1e-7)


def self_retrieval(
    es: Elasticsearch, embedder: EmbeddingsClient, partitions: list[str], dims: int, sample: int = 5
) -> tuple[int, int]:
    """(found first, tried): kNN with a summary's own text should return that summary first."""
    summary_index = next(i for i, kind in RECALL_INDICES.items() if kind == "summary")
    if not es.indices.exists(index=summary_index):
        return 0, 0
    hits = es.search(
        index=summary_index,
        size=sample,
        source=["summary"],
        sort=[{"doc_id": "asc"}],
        query={"bool": {"filter": [{"terms": {"partition": partitions}}, {"exists": {"field": vector_field(dims)}}]}},
    )["hits"]["hits"]
    found = 0
    for hit in hits:
        [vector] = embedder.embed([hit["_source"]["summary"]], purpose="document")
        top = es.search(
            index=summary_index,
            size=10,
            source=False,
            knn={"field": vector_field(dims), "query_vector": vector, "k": 10, "num_candidates": 50},
        )["hits"]["hits"]
        # First, or tied first: the same text stored twice has the same vector, and either may come back.
        first = [h["_id"] for h in top if h["_score"] >= top[0]["_score"] - TIE] if top else []
        found += hit["_id"] in first
    return found, len(hits)
