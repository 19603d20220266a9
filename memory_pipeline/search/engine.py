"""The three layers over `memory-summary`, `memory-observations` and `memory-notes`.

1. index: a compact ranked list for a query: three channels (BM25 over the memories, BM25 over the raw
   messages of their turns, kNN over the memories) fused by weighted RRF from a candidate pool of fixed depth,
   with the time the question names favoured and a relevance floor marking what is an answer (`Ranking`);
2. timeline: the chronological neighbours of a hit, in the same project;
3. detail: the full records of chosen ids, with the messages of their source turns.
Every row's `id` is the document id: a stable citation.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import asdict, dataclass, field, replace
from datetime import date
from typing import Any, Literal

from elasticsearch import Elasticsearch

from memory_pipeline.recall.observations import observation_id
from memory_pipeline.search import files as file_rules
from memory_pipeline.search.query import QueryPlan, history_today, plan_query
from memory_pipeline.search.rrf import RRF_K, reciprocal_rank_fusion
from memory_pipeline.sentences import by_sentence
from memory_pipeline.stores.embeddings import EmbeddingsClient
from memory_pipeline.stores.indices import (
    NOTES_INDEX,
    OBSERVATION_INDEX,
    RAW_INDEX,
    RECALL_INDICES,
    SEARCH_INDICES,
    SUMMARY_INDEX,
    vector_field,
)
from memory_pipeline.stores.openai_compat import ServerError

Mode = Literal["hybrid", "bm25", "knn"]
_SOURCE = [
    "doc_id", "summary", "priority", "project", "established_at", "session_id", "turn_id", "tags", "partition",
    "superseded_by", "author", "kind", "subject", "evidence", "evidence_role",
]  # fmt: skip
KIND_INDEX = {kind: index for index, kind in SEARCH_INDICES.items()}
MEMORY_FIELDS = ["summary", "subject", "evidence^0.5", "tags.text^0.5", "project.text^0.3"]
ONE_LINE_CHARS = 280


@dataclass(frozen=True)
class Ranking:
    """How `MemorySearch.index` ranks. `DEFAULT` is the variant the hard benchmark chose on its tuning split
    (bench/results.md, section `hard`, which lists every variant tried); `V0` is the ranking before it."""

    plan: bool = True  # match on the question's informative words; favour the time it names
    minimum_should_match: str | None = None  # of those words, for a BM25 hit (None: any one)
    depth: int | None = 50  # candidates per channel, whatever k is (None: grows with k, as V0 did)
    bm25: float = 1.0  # channel weights in the fusion
    raw: float = 1.0
    knn: float = 1.0
    phrase: float = 0.0  # boost of the words as a phrase (slop 3), in both BM25 channels
    said: float = 0.0  # added to a raw message's BM25 score when a person or the agent said it (not a tool)
    context: float = 0.0  # weight of a turn's neighbour (the request before it) in the memory BM25 channel
    # A BM25 hit whose meaning is far from the question (cosine below this, when kNN saw it) weighs `weak`:
    # in code-heavy sessions most turns share the subject's words. Not for a question that names a time: its
    # time words pull every cosine down. Chosen on the tuning split: on the real pi session, hybrid then
    # finds what kNN alone finds, where it found less.
    agree: float | None = 0.25
    time_boost: float = 1.0  # for a candidate in the time the question names, in first places of one channel
    recency: float = 0.0  # for the newest candidate (falling to 0 for the oldest), in the same units
    strong_terms: str = "2<75%"  # share of the informative words a BM25 hit must match to be an answer
    weak: float = 0.0  # weight, relative to its channel's, of a BM25 hit below that share (one common word)
    # Cosine between two results at which the newer one trades places with the older one above it (None:
    # never), and how many places above it that one may be. For MiniLM, chosen on the tuning split: 0.5 and
    # one place put the newer decision first for 75% of the knowledge updates and cost no recall.
    supersede: float | None = 0.5
    reach: int = 1
    diverse: float = 0.0  # share of its score a row loses for each row of its session ranked above it (MMR-like)
    # Cosine at which a kNN hit is an answer. For MiniLM, chosen on the tuning split as the lowest at which
    # 85% of the questions with no answer get none: 0.35 (22% of the others are flagged as guesses).
    strong_similarity: float = 0.35


V0 = Ranking(
    plan=False,
    minimum_should_match="2<50%",
    depth=None,
    raw=0.0,
    time_boost=0.0,
    strong_terms="",
    weak=1.0,
    supersede=None,
    agree=None,
    strong_similarity=0.5,
)
DEFAULT = Ranking()
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
    session: str | None = None  # one session's memories (a compaction's summary reads its own session)

    def clauses(self) -> list[dict[str, Any]]:
        clauses: list[dict[str, Any]] = []
        if self.project:
            clauses.append({"term": {"project": self.project}})
        if self.session:
            clauses.append({"term": {"session_id": self.session}})
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
    knowledge: str = ""  # what a memory is: rule | decision | gotcha | fact | task ("" for observations)
    subject: str = ""
    evidence: str = ""  # the exact words a memory rests on
    evidence_role: str = ""  # who said them
    bm25: float | None = None  # the BM25 score, when the words matched (the memory's, else its turn's messages)
    similarity: float | None = None  # the cosine similarity to the query, when the embeddings found it
    worded: bool = False  # matched most of the question's informative words (itself or a message of its turn)
    strong: bool = False  # above the relevance floor: an answer rather than a guess (set by `index`)
    messages: list[str] = field(default_factory=list)  # raw messages of its turn that matched, best first

    @property
    def one_line(self) -> str:
        """The memory on one line: whole, or its first sentences within 280 characters, marked when cut."""
        return by_sentence(self.summary, ONE_LINE_CHARS)

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
        # `kind` in memory-summary is the knowledge's kind; the Row's own `kind` names the index.
        knowledge=source.get("kind", "") if hit["_index"] == KIND_INDEX["summary"] else "",
        subject=source.get("subject", ""),
        evidence=source.get("evidence", ""),
        evidence_role=source.get("evidence_role", ""),
    )


class MemorySearch:
    def __init__(self, es: Elasticsearch, embedder: EmbeddingsClient) -> None:
        self.es = es
        self.embedder = embedder
        self.degraded: str | None = None  # why the last hybrid search fell back to BM25, if it did
        self.as_of: date = date.today()  # the day the last search read "last week", "in May" from
        # Indices known to hold vectors of a size: a field once mapped stays, so this is asked again only
        # while some index lacks it (a round trip a query saved).
        self._vector_indices: dict[tuple[str, tuple[str, ...]], list[str]] = {}

    def _existing(self, indices: list[str]) -> list[str]:
        return [i for i in indices if self.es.indices.exists(index=i)]

    def _hits(self, filters: Filters, size: int, **body: Any) -> list[dict[str, Any]]:
        """One search over the kinds `filters` allows (nothing while none of their indices exists)."""
        indices = self._existing(filters.indices())
        if not indices:
            return []
        return self.es.search(index=indices, size=size, source=_SOURCE, **body)["hits"]["hits"]

    def _memory_bm25(self, plan: QueryPlan, depth: int, filters: Filters, ranking: Ranking) -> dict[str, Any]:
        fields = MEMORY_FIELDS + ([f"context^{ranking.context}"] if ranking.context else [])
        match: dict[str, Any] = {"query": plan.text, "fields": fields}
        if ranking.minimum_should_match:
            match["minimum_should_match"] = ranking.minimum_should_match
        should: list[dict[str, Any]] = []
        if ranking.strong_terms:
            # Named, scoring nothing: which hits match enough of the words to be an answer.
            most = {"query": plan.text, "fields": fields, "minimum_should_match": ranking.strong_terms}
            should.append({"multi_match": {**most, "_name": "most", "boost": 0.0}})
        if ranking.phrase:
            should.append({"match_phrase": {"summary": {"query": plan.text, "slop": 3, "boost": ranking.phrase}}})
        query = {"bool": {"must": [{"multi_match": match}], "should": should, "filter": filters.clauses()}}
        return {"query": query, "size": depth, "_source": _SOURCE}

    def _raw_bm25(self, plan: QueryPlan, depth: int, filters: Filters, ranking: Ranking) -> dict[str, Any]:
        match: dict[str, Any] = {"query": plan.text}
        if ranking.minimum_should_match:
            match["minimum_should_match"] = ranking.minimum_should_match
        should: list[dict[str, Any]] = []
        if ranking.strong_terms:
            most = {"query": plan.text, "minimum_should_match": ranking.strong_terms, "_name": "most", "boost": 0.0}
            should.append({"match": {"content": most}})
        if ranking.phrase:
            should.append({"match_phrase": {"content": {"query": plan.text, "slop": 3, "boost": ranking.phrase}}})
        if ranking.said:
            said = {"terms": {"role": ["user", "assistant"]}}
            should.append({"constant_score": {"filter": said, "boost": ranking.said}})
        scope: list[dict[str, Any]] = [{"term": {"project": filters.project}}] if filters.project else []
        if filters.since or filters.until:
            bounds = {k: v for k, v in (("gte", filters.since), ("lte", filters.until)) if v}
            scope.append({"range": {"message_timestamp": bounds}})
        query = {"bool": {"must": [{"match": {"content": match}}], "should": should, "filter": scope}}
        # Several messages of one turn may match: ask for more, keep each turn's best.
        return {"query": query, "size": 3 * depth, "_source": ["session_id", "turn_id", "message_timestamp"]}

    def _knn(self, vector: list[float], depth: int, filters: Filters) -> tuple[list[str], dict[str, Any]] | None:
        field = vector_field(len(vector))
        indices = self._with_vectors(field, filters.indices())
        if not indices:
            return None
        knn: dict[str, Any] = {"field": field, "query_vector": vector, "k": depth, "num_candidates": max(50, 4 * depth)}
        if filters.clauses():
            knn["filter"] = filters.clauses()
        return indices, {"knn": knn, "size": depth, "_source": _SOURCE}

    def _with_vectors(self, field: str, wanted: list[str]) -> list[str]:
        """Of `wanted`, the indices that hold vectors in `field` (a notes index made while the embedder was
        down has none)."""
        key = (field, tuple(wanted))
        if key not in self._vector_indices:
            mappings = self.es.indices.get_field_mapping(index=wanted, fields=field, ignore_unavailable=True)
            indices = [index for index, found in mappings.body.items() if found.get("mappings")]
            if len(indices) < len(wanted):
                return indices
            self._vector_indices[key] = indices
        return self._vector_indices[key]

    def index(
        self,
        query: str,
        k: int = 10,
        filters: Filters = Filters(),
        mode: Mode = "hybrid",
        ranking: Ranking = DEFAULT,
        today: date | None = None,
    ) -> list[Row]:
        """Layer 1: a compact ranked list. `today` anchors the times a question names ("last week"). A question
        longer than `MAX_QUERY_WORDS` words is cut to them, and `degraded` says so."""
        query, cut = cut_query(query)
        self.as_of = today or date.today()
        plan = plan_query(query, self.as_of) if ranking.plan else QueryPlan(text=query)
        if plan.timed and today is None:
            # An old history is read in its own time (the newest memory in scope), not the clock's.
            anchor = history_today(self.as_of, self._newest(filters))
            if anchor != self.as_of:
                self.as_of, plan = anchor, plan_query(query, anchor)
        if not plan.text.strip():
            plan = replace(plan, text=query)  # nothing but glue: match what was asked rather than nothing
        depth = ranking.depth or max(k * 3, 30)
        self.degraded = cut
        channels: list[tuple[str, list[str], dict[str, Any]]] = []
        # No existence checks (a round trip each): the searches skip indices not made yet.
        if mode in ("hybrid", "bm25"):
            channels.append(("bm25", filters.indices(), self._memory_bm25(plan, depth, filters, ranking)))
        raw_allowed = not filters.priority and (not filters.kind or "observation" in filters.kind)
        if mode in ("hybrid", "bm25") and ranking.raw and raw_allowed:
            channels.append(("raw", [RAW_INDEX], self._raw_bm25(plan, depth, filters, ranking)))
        vector: list[float] | None = None
        if mode in ("hybrid", "knn"):
            try:
                [vector] = self.embedder.embed([query], purpose="query")
                knn = self._knn(vector, depth, filters)
                if knn:
                    channels.append(("knn", *knn))
            except ServerError:
                if mode == "knn":
                    raise
                # The embedding server is down: BM25 alone still answers (a briefing must not fail on it).
                self.degraded = "; ".join(filter(None, [cut, f"{self.embedder.base_url} unreachable: BM25 only"]))
        if not channels:
            return []
        searches: list[dict[str, Any]] = []
        for _, indices, body in channels:
            searches += [{"index": indices, "ignore_unavailable": True}, body]
        responses = self.es.msearch(searches=searches, ignore_unavailable=True, allow_no_indices=True)["responses"]
        hits: dict[str, dict[str, Any]] = {}
        rankings: dict[str, list[str]] = {}
        bm25: dict[str, float] = {}
        similarity: dict[str, float] = {}
        worded: set[str] = set()
        turn_messages: dict[str, list[str]] = {}
        partial: dict[str, set[str]] = {}
        when: dict[str, str] = {}
        for (name, _, _), response in zip(channels, responses, strict=True):
            if "error" in response:
                raise RuntimeError(f"search channel {name} failed: {response['error']}")
            ranked: list[str] = []
            for hit in response["hits"]["hits"]:
                if name == "raw":
                    source = hit["_source"]
                    doc_id = observation_id(source["session_id"], source["turn_id"])
                    when.setdefault(doc_id, source.get("message_timestamp") or "")  # until its memory says
                    if not ranking.strong_terms or "most" in hit.get("matched_queries", []):
                        turn_messages.setdefault(doc_id, []).append(hit["_id"])  # worth showing: most words matched
                else:
                    doc_id = hit["_id"]
                    hits.setdefault(doc_id, hit)
                    when[doc_id] = hit["_source"].get("established_at", "")
                if doc_id in ranked:
                    continue
                ranked.append(doc_id)
                if name == "knn":
                    similarity[doc_id] = 2 * hit["_score"] - 1  # Elasticsearch reports cosine as (1 + cos) / 2
                else:
                    bm25.setdefault(doc_id, hit["_score"])
                    if not ranking.strong_terms or "most" in hit.get("matched_queries", []):
                        worded.add(doc_id)
            rankings[name] = ranked[:depth]
            if name != "knn" and ranking.strong_terms and ranking.weak != 1.0:
                # A hit on one common word is weak evidence: it counts for less than one on most of the words.
                partial[name] = {d for d in ranked if d not in worded}
        bonus = self._bonus(plan, ranking, when)
        names = list(rankings)
        weights = [getattr(ranking, name) for name in names]
        if ranking.agree is not None and not plan.timed:
            far = {d for d, cosine in similarity.items() if cosine < ranking.agree}
            partial = {name: partial.get(name, set()) | (set(rankings[name]) & far) for name in names if name != "knn"}
        scale = [dict.fromkeys(partial.get(name, ()), ranking.weak) for name in names]
        fused = reciprocal_rank_fusion([rankings[n] for n in names], when, weights=weights, bonus=bonus, scale=scale)
        # One more round trip, whatever is asked: the memories of turns only the raw channel found, among the
        # first places (twice k: a turn not observed yet, or filtered out, has none and cannot be a row), and
        # the vectors of those places when newer decisions are to go first.
        head = [doc_id for doc_id, _ in fused[: 2 * k]]
        compare = ranking.supersede is not None and vector is not None
        field = vector_field(len(vector)) if vector else ""
        # Vectors of the first k only (a row that moves up from further down is just not compared).
        found, vectors = self._follow_up(
            [d for d in head if d not in hits], head[:k] if compare else [], field, filters
        )
        hits |= found
        fused = [(doc_id, score) for doc_id, score in fused if doc_id in hits]
        if ranking.diverse:
            fused = self._spread_sessions(fused, hits, ranking.diverse)
        if compare:
            fused = self._newer_first(fused, hits, vectors, ranking, k)
        rows = []
        for doc_id, score in fused[:k]:
            row = _row(hits[doc_id], score)
            row.bm25, row.similarity = bm25.get(doc_id), similarity.get(doc_id)
            row.worded, row.messages = doc_id in worded, turn_messages.get(doc_id, [])
            # Above the relevance floor: most of the words, or close enough in meaning.
            row.strong = row.worded or similarity.get(doc_id, -1.0) >= ranking.strong_similarity
            rows.append(row)
        return knowledge_first(rows)

    def _newest(self, filters: Filters) -> date | None:
        """The day of the newest memory in scope (None when there is none)."""
        response = self.es.search(
            index=filters.indices(),
            size=0,
            ignore_unavailable=True,
            allow_no_indices=True,
            query={"bool": {"filter": filters.clauses()}},
            aggs={"newest": {"max": {"field": "established_at"}}},
        )
        newest = response.get("aggregations", {}).get("newest", {}).get("value_as_string")
        return date.fromisoformat(newest[:10]) if newest else None

    @staticmethod
    def _spread_sessions(
        fused: list[tuple[str, float]], hits: dict[str, dict[str, Any]], diverse: float
    ) -> list[tuple[str, float]]:
        """`fused` again by score, each row losing `diverse` of it for every row of its session above it."""
        seen: dict[str, int] = {}
        spread = []
        for doc_id, score in fused:
            session = hits[doc_id]["_source"].get("session_id", "")
            spread.append((doc_id, score * (1 - diverse) ** seen.get(session, 0)))
            seen[session] = seen.get(session, 0) + 1
        return sorted(spread, key=lambda item: -item[1])

    @staticmethod
    def _newer_first(
        fused: list[tuple[str, float]],
        hits: dict[str, dict[str, Any]],
        vectors: dict[str, list[float]],
        ranking: Ranking,
        k: int,
    ) -> list[tuple[str, float]]:
        """A later memory on the same subject as one ranked at most `ranking.reach` places above it (cosine
        of their vectors at least `ranking.supersede`, or marked by reflection as its replacement) trades
        places with it: the newer decision is the answer, the replaced one its history. A swap, not a move,
        so what is shown stays the same, only its order."""
        top = [doc_id for doc_id, _ in fused[:k]]
        when = {doc_id: hits[doc_id]["_source"].get("established_at", "") for doc_id in top}

        def replaces(later: str, earlier: str) -> bool:
            if when[later] <= when[earlier]:
                return False
            if hits[earlier]["_source"].get("superseded_by") == later:
                return True
            if later not in vectors or earlier not in vectors:
                return False
            return sum(a * b for a, b in zip(vectors[later], vectors[earlier], strict=True)) >= (ranking.supersede or 0)

        order = list(fused)
        moved: set[int] = set()  # one swap a place: an old memory must not sink through a chain of newer ones
        for j in range(1, min(len(order), k)):
            for i in range(max(0, j - ranking.reach), j):
                if i not in moved and replaces(order[j][0], order[i][0]):
                    # The scores stay with the places: the list remains sorted by score.
                    (a, score_a), (b, score_b) = order[i], order[j]
                    order[i], order[j] = (b, score_a), (a, score_b)
                    moved |= {i, j}
                    break
        return order

    @staticmethod
    def _bonus(plan: QueryPlan, ranking: Ranking, when: dict[str, str]) -> dict[str, float]:
        """What the time a question names, and recency, add to each candidate's fused score."""
        unit = 1.0 / (RRF_K + 1)  # a first place in one channel
        bonus: dict[str, float] = {}
        if plan.timed and ranking.time_boost:
            since, until = plan.since.isoformat(), plan.until.isoformat()  # type: ignore[union-attr]
            for doc_id, moment in when.items():
                if moment and since <= moment[:10] <= until:
                    bonus[doc_id] = ranking.time_boost * unit
        if ranking.recency and when:
            order = sorted(when, key=lambda d: when[d])
            for position, doc_id in enumerate(order):
                share = position / max(1, len(order) - 1)
                bonus[doc_id] = bonus.get(doc_id, 0.0) + ranking.recency * unit * share
        return bonus

    def _follow_up(
        self, missing: list[str], compare: list[str], field: str, filters: Filters
    ) -> tuple[dict[str, dict[str, Any]], dict[str, list[float]]]:
        """In one `_msearch`: the memories with ids `missing` that pass `filters`, and the stored vectors of
        `compare` in `field` (by id, those that have one)."""
        searches: list[dict[str, Any]] = []
        if missing:
            query = {"bool": {"filter": [{"ids": {"values": missing}}, *filters.clauses()]}}
            searches += [{"index": filters.indices()}, {"query": query, "size": len(missing), "_source": _SOURCE}]
        if compare:
            searches += [
                {"index": list(SEARCH_INDICES)},
                {"query": {"ids": {"values": compare}}, "size": len(compare), "_source": False, "fields": [field]},
            ]
        if not searches:
            return {}, {}
        responses = self.es.msearch(searches=searches, ignore_unavailable=True, allow_no_indices=True)["responses"]
        for response in responses:
            if "error" in response:
                raise RuntimeError(f"search follow-up failed: {response['error']}")
        found = {h["_id"]: h for h in responses[0]["hits"]["hits"]} if missing else {}
        vectors = {
            h["_id"]: h["fields"][field] for h in responses[-1]["hits"]["hits"] if field in h.get("fields", {})
        } if compare else {}  # fmt: skip
        return found, vectors

    def recent(self, filters: Filters = Filters(), k: int = 10) -> list[Row]:
        """The newest `k` memories that pass `filters` (no query)."""
        hits = self._hits(filters, k, sort=[{"established_at": "desc"}], query={"bool": {"filter": filters.clauses()}})
        return [_row(h) for h in hits]

    def about_file(self, path: str, filters: Filters = Filters(), k: int = file_rules.FILE_RECALL_K) -> list[Row]:
        """The memories that concern the file at `path` (a gotcha, a rule, a decision, a note or a failure that
        names it; see search/files.py), at most `k`, the most useful first."""
        names = file_rules.file_names(path, filters.project)
        if not names:
            return []
        # Candidates: memories whose files hold one of the names; notes and failed turns whose text has the
        # bare name (the rules then read which file their text really names).
        named = [
            {"bool": {"filter": [{"term": {"_index": SUMMARY_INDEX}}, {"terms": {"files": names}}]}},
            {"bool": {"filter": [{"term": {"_index": NOTES_INDEX}}, {"match_phrase": {"summary": names[-1]}}]}},
            {
                "bool": {
                    "filter": [
                        {"term": {"_index": OBSERVATION_INDEX}},
                        {"match_phrase": {"summary": names[-1]}},
                        {"match_phrase": {"summary": file_rules.FAILED}},
                    ]
                }
            },
        ]
        indices = self._existing(filters.indices())
        if not indices:
            return []
        hits = self.es.search(
            index=indices,
            size=100,
            source=[*_SOURCE, "files"],
            sort=[{"established_at": "desc"}],
            query={"bool": {"filter": filters.clauses(), "should": named, "minimum_should_match": 1}},
        )["hits"]["hits"]
        rows = [(_row(h), h["_source"].get("files") or []) for h in hits]
        return file_rules.for_file(rows, names, k)

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


# Elasticsearch refuses a query of more clauses than its limit (1,024 by default, "too many clauses"), and a
# question is never that long: a 2,000-word paste is cut, with a note, rather than answered with an error.
MAX_QUERY_WORDS = 200
_QUERY_WORD = re.compile(r"\S+")


def cut_query(query: str) -> tuple[str, str | None]:
    """`query` within `MAX_QUERY_WORDS` words, and a note when it was cut."""
    words = _QUERY_WORD.findall(query)
    if len(words) <= MAX_QUERY_WORDS:
        return query, None
    return " ".join(
        words[:MAX_QUERY_WORDS]
    ), f"the question was cut to its first {MAX_QUERY_WORDS} of {len(words)} words"


def knowledge_first(rows: list[Row]) -> list[Row]:
    """`rows` with a turn's memories above that turn's observation where both came back: the knowledge before
    the record of what was asked (the same turn, so a count by turn is unchanged). Scores stay with the places,
    so the list stays sorted."""
    places: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        if row.session_id and row.turn_id:
            places[(row.session_id, row.turn_id)].append(i)
    ordered = list(rows)
    for slots in places.values():
        if len(slots) > 1:
            group = sorted((rows[i] for i in slots), key=lambda r: r.kind == "observation")  # stable
            for slot, row in zip(slots, group, strict=True):
                ordered[slot] = row
    scores = [row.score for row in rows]
    for row, score in zip(ordered, scores, strict=True):
        row.score = score
    return ordered


def self_retrieval(
    es: Elasticsearch, embedder: EmbeddingsClient, partitions: list[str], dims: int, sample: int = 5
) -> tuple[int, int]:
    """(found first, tried): kNN with a memory's own text (up to `sample` of each recall index: summaries
    and observations, so an LLM-free day is tried too) should return that memory first."""
    found = tried = 0
    for index in RECALL_INDICES:
        if not es.indices.exists(index=index):
            continue
        hits = es.search(
            index=index,
            size=sample,
            source=["summary"],
            sort=[{"doc_id": "asc"}],
            query={
                "bool": {"filter": [{"terms": {"partition": partitions}}, {"exists": {"field": vector_field(dims)}}]}
            },
        )["hits"]["hits"]
        for hit in hits:
            [vector] = embedder.embed([hit["_source"]["summary"]], purpose="document")
            # Among the days checked only: another day may hold the same text, embedded by another server
            # (floats differ in the last places), and come first for it.
            top = es.search(
                index=index,
                size=10,
                source=["summary"],
                knn={
                    "field": vector_field(dims),
                    "query_vector": vector,
                    "k": 10,
                    "num_candidates": 50,
                    "filter": {"terms": {"partition": partitions}},
                },
            )["hits"]["hits"]
            # First, or tied first; or the first is the same text stored twice (same vector): either may come back.
            text = hit["_source"]["summary"]
            first = {h["_id"] for h in top if h["_score"] >= top[0]["_score"] - TIE} if top else set()
            if top and top[0]["_source"].get("summary") == text:
                first |= {h["_id"] for h in top if h["_source"].get("summary") == text}
            found += hit["_id"] in first
            tried += 1
    return found, tried
