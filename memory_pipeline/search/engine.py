"""The three layers over `memory-summary`, `memory-observations` and `memory-notes`.

1. index: a compact ranked list for a query: three channels (BM25 over the memories, BM25 over the raw
   messages of their turns, kNN over the memories) fused by weighted RRF from a candidate pool of fixed depth,
   with the time the question names favoured and a relevance floor marking what is an answer (`Ranking`);
2. timeline: the chronological neighbours of a hit, in the same project;
3. detail: the full records of chosen ids, with the messages of their source turns, the same knowledge said in
   other sessions, and what replaced a replaced decision.
`find` is layer 1 as people and agents are shown it: restatements folded into one row that counts its sessions,
and a replaced decision with what holds now (`consolidate`). Every row's `id` is the document id: a stable
citation.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from typing import Any, Literal

from elasticsearch import Elasticsearch, NotFoundError

from memory_pipeline.language.kinds import Kind
from memory_pipeline.recall.disclosures import DISCLOSURE_TAG
from memory_pipeline.search import files as file_rules
from memory_pipeline.search.consolidate import RESTATED_COSINE, folded, replaced, restates
from memory_pipeline.search.models import Detail, Filters, Restatement, Row, row_of
from memory_pipeline.search.query import QueryPlan, history_today, plan_query
from memory_pipeline.search.ranking import (
    DEFAULT,
    Ranking,
    cut_query,
    fuse,
    newer_first,
    rows_of,
    spread_sessions,
)
from memory_pipeline.stores.embeddings import EmbeddingsClient
from memory_pipeline.stores.folders import unconfigured_sessions
from memory_pipeline.stores.followthrough_store import counters, demoted_ids, restated_ids
from memory_pipeline.stores.indices import (
    RAW_INDEX,
    REFLECTION_INDEX,
    SEARCH_INDICES,
    SUMMARY_INDEX,
    vector_field,
)
from memory_pipeline.stores.openai_compat import ServerError

Mode = Literal["hybrid", "bm25", "knn"]
_SOURCE = [
    "doc_id", "summary", "priority", "project", "established_at", "session_id", "turn_id", "tags", "partition",
    "superseded_by", "author", "kind", "subject", "evidence", "evidence_role", "agent",
]  # fmt: skip
MEMORY_FIELDS = ["summary", "subject", "evidence^0.5", "tags.text^0.5", "project.text^0.3"]
# What a person said of themselves that lasts: a turn where they disclosed a trait, preference or rule
# (recall/disclosures.py), or a rule or decision the LLM drew from what they said.
LASTING = {
    "bool": {
        "should": [{"term": {"tags": DISCLOSURE_TAG}}, {"terms": {"kind": [Kind.RULE.value, Kind.DECISION.value]}}],
        "minimum_should_match": 1,
    }
}


_RESTATED = set(Restatement.model_fields)  # what the detail layer shows of each restatement
_RAW_SOURCE = [
    "doc_id", "entry_id", "role", "content", "tool_name", "tool_calls", "is_error", "exit_code", "entry_type",
    "message_timestamp", "message_index",
]  # fmt: skip


class MemorySearch:
    def __init__(
        self, es: Elasticsearch, embedder: EmbeddingsClient, configured_folders: frozenset[str] | None = None
    ) -> None:
        self._es = es
        self.embedder = embedder
        # The session folders read now (`stores.folders.configured_folders`): a row of another folder's session
        # is marked as such (None: rows are not marked).
        self.configured_folders = configured_folders
        self.degraded: str | None = None  # why the last hybrid search fell back to BM25, if it did
        self.vector_field: str | None = None  # where the last search's query vector's size is stored
        self.as_of: date = date.today()  # the day the last search read "last week", "in May" from
        # Indices known to hold vectors of a size: a field once mapped stays, so this is asked again only
        # while some index lacks it (a round trip a query saved).
        self._vector_indices: dict[tuple[str, tuple[str, ...]], list[str]] = {}

    def _existing(self, indices: list[str]) -> list[str]:
        return [i for i in indices if self._es.indices.exists(index=i)]

    def has_history(self) -> bool:
        """Whether any memory index was made yet (False before the first run: every search answers empty)."""
        return bool(self._existing(list(SEARCH_INDICES)))

    def _hits(self, filters: Filters, size: int, **body: Any) -> list[dict[str, Any]]:
        """One search over the kinds `filters` allows (nothing while none of their indices exists)."""
        indices = self._existing(filters.indices())
        if not indices:
            return []
        return self._es.search(index=indices, size=size, source=_SOURCE, **body)["hits"]["hits"]

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

    def _knn(
        self, vector: list[float], depth: int, filters: Filters, only: list[dict[str, Any]] | None = None
    ) -> tuple[list[str], dict[str, Any]] | None:
        """The kNN channel's search (`only`: clauses that narrow it further), or None while no index in scope
        holds vectors of this size."""
        field = vector_field(len(vector))
        indices = self._with_vectors(field, filters.indices())
        if not indices:
            return None
        knn: dict[str, Any] = {"field": field, "query_vector": vector, "k": depth, "num_candidates": max(50, 4 * depth)}
        if filters.clauses() or only:
            knn["filter"] = [*filters.clauses(), *(only or [])]
        return indices, {"knn": knn, "size": depth, "_source": _SOURCE}

    def _with_vectors(self, field: str, wanted: list[str]) -> list[str]:
        """Of `wanted`, the indices that hold vectors in `field` (a notes index made while the embedder was
        down has none)."""
        key = (field, tuple(wanted))
        if key not in self._vector_indices:
            try:
                mappings = self._es.indices.get_field_mapping(index=wanted, fields=field, ignore_unavailable=True)
            except NotFoundError:
                # None of them made yet (before the first run): `ignore_unavailable` still answers 404 then.
                return []
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
        self.vector_field = None
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
                self.vector_field = vector_field(len(vector))
                knn = self._knn(vector, depth, filters)
                if knn:
                    channels.append(("knn", *knn))
                if mode == "hybrid" and knn and plan.judgement and ranking.disclosed:
                    # What the person said of themselves that lasts, for a question asking a judgement.
                    mine = self._knn(vector, depth, filters, [LASTING])
                    if mine:
                        channels.append(("disclosed", *mine))
            except ServerError:
                if mode == "knn":
                    raise
                # The embedding server is down: BM25 alone still answers (a briefing must not fail on it).
                down = f"embeddings down ({self.embedder.base_url} unreachable): BM25 only, no similarity (sim -)"
                self.degraded = "; ".join(filter(None, [cut, down]))
        if not channels:
            return []
        searches: list[dict[str, Any]] = []
        for _, indices, body in channels:
            searches += [{"index": indices, "ignore_unavailable": True}, body]
        responses = self._es.msearch(searches=searches, ignore_unavailable=True, allow_no_indices=True)["responses"]
        named = []
        for (name, _, _), response in zip(channels, responses, strict=True):
            if "error" in response:
                raise RuntimeError(f"search channel {name} failed: {response['error']}")
            named.append((name, response["hits"]["hits"]))
        fusion = fuse(named, plan, ranking, depth)
        hits = fusion.hits
        # One more round trip, whatever is asked: the memories of turns only the raw channel found, among the
        # first places (twice k: a turn not observed yet, or filtered out, has none and cannot be a row), and
        # the vectors of those places when newer decisions are to go first.
        head = [doc_id for doc_id, _ in fusion.fused[: 2 * k]]
        compare = ranking.supersede is not None and vector is not None
        field = vector_field(len(vector)) if vector else ""
        # Vectors of the first k only (a row that moves up from further down is just not compared).
        found, vectors = self._follow_up(
            [d for d in head if d not in hits], head[:k] if compare else [], field, filters
        )
        hits.update(found)  # the fusion's own hits: its rows are made from them
        order = [(doc_id, score) for doc_id, score in fusion.fused if doc_id in hits]
        diverse = ranking.diverse_many if plan.many and ranking.diverse_many else ranking.diverse
        if diverse:
            order = spread_sessions(order, hits, diverse)
        if compare:
            order = newer_first(order, hits, vectors, ranking, k)
        return rows_of(fusion, order, ranking, k)

    def find(self, query: str, k: int = 10, filters: Filters = Filters(), mode: Mode = "hybrid") -> list[Row]:
        """Layer 1 as a person or an agent reads it: `index`'s rows with restatements folded into the first (the
        sessions that said it counted) and each replaced decision carrying what holds now."""
        rows = self.index(query, k=k, filters=filters, mode=mode)
        field = self.vector_field if mode != "bm25" else None
        _, vectors = self._follow_up([], [r.id for r in rows], field, filters) if field and rows else ({}, {})
        return self.marked(self.with_replacements(folded(rows, vectors=vectors)))

    def marked(self, rows: list[Row]) -> list[Row]:
        """`rows`, each of a session from a folder no longer configured naming that folder (one look-up)."""
        if self.configured_folders is None or not rows:
            return rows
        cited = {r.session_id for r in rows if r.session_id}
        elsewhere = unconfigured_sessions(self._es, self.configured_folders, cited)
        return [
            r.model_copy(update={"folder_no_longer_configured": elsewhere[r.session_id]})
            if r.session_id in elsewhere
            else r
            for r in rows
        ]

    def with_replacements(self, rows: list[Row]) -> list[Row]:
        """`rows`, a replaced decision's with the text and day of the decision that replaced it (one look-up)."""
        wanted = sorted({r.superseded_by for r in rows if r.superseded_by})
        if not wanted:
            return rows
        # Reflection's marks name a reflection; replacement by words (`reflect.replacing`) names the memory.
        response = self._es.search(
            index=[REFLECTION_INDEX, SUMMARY_INDEX],
            ignore_unavailable=True,
            allow_no_indices=True,
            size=len(wanted),
            source=["summary", "established_at"],
            query={"ids": {"values": wanted}},
        )
        return replaced(rows, {h["_id"]: h["_source"] for h in response["hits"]["hits"]})

    def restatements(self, row: Row, k: int = 20) -> list[Row]:
        """The other memories of `row`'s project that say the same knowledge (`consolidate.restates`: most of its
        words, or its meaning in a memory of its kind), oldest first: the sessions it was said in, each with its
        own evidence."""
        if row.kind == "observation" or not row.summary.strip():
            return []
        filters = Filters(project=row.project or None)
        scope = replace(filters, kind=("summary", "note"))
        query = {"bool": {"must": [{"match": {"summary": row.summary}}], "filter": filters.clauses()}}
        # In one `_msearch`: the memories sharing its words, and its own stored vector (for those of its meaning).
        worded, own = self._es.msearch(
            index=scope.indices(),
            ignore_unavailable=True,
            allow_no_indices=True,
            searches=[
                {},
                {"query": query, "size": k, "_source": _SOURCE},
                {},
                {"query": {"ids": {"values": [row.id]}}, "size": 1, "_source": False, "fields": ["vector_*"]},
            ],
        )["responses"]
        for response in (worded, own):
            if "error" in response:
                raise RuntimeError(f"restatements search failed: {response['error']}")
        found = {h["_id"]: row_of(h) for h in worded["hits"]["hits"]}
        vectors: dict[str, list[float]] = {}
        stored = own["hits"]["hits"]
        # One field: vectors of two sizes (two embedding models) are not comparable.
        for field, vector in list((stored[0].get("fields", {}) if stored else {}).items())[:1]:
            indices = self._with_vectors(field, scope.indices())
            if not indices:
                continue
            knn = {"field": field, "query_vector": vector, "k": k, "num_candidates": 4 * k,
                   "similarity": RESTATED_COSINE, "filter": filters.clauses()}  # fmt: skip
            near = self._es.search(index=indices, knn=knn, size=k, source=_SOURCE, fields=[field])["hits"]["hits"]
            for hit in near:
                found.setdefault(hit["_id"], row_of(hit))
                vectors[hit["_id"]] = hit["fields"][field]
            vectors[row.id] = vector
        same = [r for r in found.values() if r.id != row.id and restates(row, r, vectors)]
        return sorted(same, key=lambda r: r.time)

    def _newest(self, filters: Filters) -> date | None:
        """The day of the newest memory in scope (None when there is none)."""
        response = self._es.search(
            index=filters.indices(),
            size=0,
            ignore_unavailable=True,
            allow_no_indices=True,
            query={"bool": {"filter": filters.clauses()}},
            aggs={"newest": {"max": {"field": "established_at"}}},
        )
        newest = response.get("aggregations", {}).get("newest", {}).get("value_as_string")
        return date.fromisoformat(newest[:10]) if newest else None

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
        responses = self._es.msearch(searches=searches, ignore_unavailable=True, allow_no_indices=True)["responses"]
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
        return self.marked([row_of(h) for h in hits])

    def about_file(self, path: str, filters: Filters = Filters(), k: int = file_rules.FILE_RECALL_K) -> list[Row]:
        """The memories that concern the file at `path` (a gotcha, a rule, a decision, a note or a failure that
        names it, then a rule, gotcha or decision about its component; see search/files.py), at most `k`, the
        most useful first."""
        names = file_rules.file_names(path, filters.project)
        if not names:
            return []
        parts = file_rules.components(names) if filters.project else []  # another project's `alerts` is not ours
        indices = self._existing(filters.indices())
        if not indices:
            return []
        hits = self._es.search(
            index=indices,
            size=100,
            source=[*_SOURCE, "files"],
            sort=[{"established_at": "desc"}],
            query={
                "bool": {
                    "filter": filters.clauses(),
                    "should": file_rules.candidates(names, parts),
                    "minimum_should_match": 1,
                }
            },
        )["hits"]["hits"]
        rows = [(row_of(h), h["_source"].get("files") or []) for h in hits]
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
            return [row_of(h) for h in hits]

        before = list(reversed(side("lte", "desc")))
        after = side("gte", "asc")
        seen = {r.id for r in before}
        return [*before, row, *[r for r in after if r.id not in seen]]

    def learned(self, project: str | None) -> tuple[set[str], set[str]]:
        """What the sessions after injections taught (`memory-followthrough`): the memories people contradicted
        in two sessions (no longer injected), and those ignored then said again by the person (raised)."""
        return demoted_ids(self._es, project), restated_ids(self._es, project)

    def get(self, ids: list[str]) -> list[Row]:
        indices = self._existing(list(SEARCH_INDICES))
        if not ids or not indices:
            return []
        response = self._es.search(index=indices, size=len(ids), source=_SOURCE, query={"ids": {"values": ids}})
        by_id = {h["_id"]: row_of(h) for h in response["hits"]["hits"]}
        return [by_id[i] for i in ids if i in by_id]

    def detail(self, ids: list[str]) -> list[Detail]:
        """Layer 3: the full records of `ids`, each with every message of its source turn from memory-raw."""
        records = []
        rows = self.with_replacements(self.get(ids))
        followed = counters(self._es, [row.id for row in rows])
        for row in rows:
            messages = []
            if row.session_id and row.turn_id and self._es.indices.exists(index=RAW_INDEX):
                messages = self.turn_messages(row.session_id, row.turn_id)
            again = self.restatements(row)
            said_in = len({row.session_id, *(r.session_id for r in again)} - {""}) or 1
            restated = [r.model_dump(include=_RESTATED) for r in again]
            fields = {"source_turn": messages, "said_in": said_in, "said_again": restated}
            fields["followthrough"] = followed[row.id]
            records.append(Detail.model_validate(row.to_dict() | fields))
        return records

    def turn_messages(self, session_id: str, turn_id: str, page: int = 500) -> list[dict[str, Any]]:
        """Every message of one turn, in order: paged, so a long turn is never cut short."""
        query = {"bool": {"filter": [{"term": {"session_id": session_id}}, {"term": {"turn_id": turn_id}}]}}
        messages: list[dict[str, Any]] = []
        after: list[Any] | None = None
        while True:
            response = self._es.search(
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
