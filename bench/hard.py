"""The hard retrieval benchmark: natural questions over eight months of four projects' sessions.

    uv run python -m bench hard            # every variant, both splits, into bench/results.md
    uv run python -m bench hard --quick    # the baselines, V0 and DEFAULT only

Corpus and questions: bench/corpus/hard (made by `python -m bench.make_hard_corpus`; 48 sessions, 328
questions in five categories, a third held out by a hash of the question id before any tuning). The sessions
go through the pipeline's own ingest and recall assets (raw messages, turn observations, embeddings; no LLM
summaries: 600 turns at ~10 s each is too slow here), then every question is asked, scoped to its project and
"asked" on its own date, of:

- `bm25-raw`: plain BM25 over the raw messages (the question as typed, Elasticsearch's standard analyzer);
- `knn`: the engine's kNN channel alone (the question's embedding against the turn observations), with the
  same relevance floor (cosine) as DEFAULT;
- `V0`: the engine's hybrid ranking before this benchmark;
- every `Ranking` variant tried, the chosen `DEFAULT` among them.

The metric is recall at an equal budget of shown text: 10 messages, however they are grouped. `bm25-raw`
shows its 10 best messages; a turn the engine returns shows up to 3: the messages of it that matched, the
person's message and the assistant's last reply. Recall is the share of a question's evidence messages shown;
MRR the reciprocal position of the first; for updates also whether the newer decision is shown above the
replaced one; abstention is right when no row clears the relevance floor (an empty or flagged result).
"""

from __future__ import annotations

import json
import shutil
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import Any

from dagster import materialize

from bench.results_file import table, write_section
from memory_pipeline.partitions import RANGE_END, RANGE_START, instance_with_days
from memory_pipeline.resources import build_resources
from memory_pipeline.search.engine import DEFAULT, V0, Filters, MemorySearch, Ranking, Row
from memory_pipeline.settings import isolated_settings, load_settings
from memory_pipeline.stores.elasticsearch import delete_days, make_client, stored_sources
from memory_pipeline.stores.embeddings import embeddings_client
from memory_pipeline.stores.indices import PIPELINE_INDICES, RAW_INDEX

CORPUS = Path(__file__).parent / "corpus" / "hard"
WORK = Path(__file__).parent / ".work" / "hard"
BUDGET, PER_TURN = 10, 3
CATEGORIES = ["single", "multi", "temporal", "update", "abstention"]

# Each variant changes one thing from the one before it; then the fusion and the floor, tuned on the tuning
# split only. `V0` is the ranking before this benchmark, `DEFAULT` the one chosen.
_ANY = replace(V0, plan=True, time_boost=0.0, minimum_should_match=None)
_ALL = replace(_ANY, depth=50, raw=1.0, time_boost=1.0, strong_terms="2<60%", strong_similarity=0.33)
VARIANTS: dict[str, Ranking] = {
    "V0": V0,
    "informative words": replace(V0, plan=True, time_boost=0.0),
    "+ any word matches": _ANY,
    "+ depth 50 whatever k": replace(_ANY, depth=50),
    "+ raw messages channel": replace(_ANY, depth=50, raw=1.0),
    "+ named time boosted": replace(_ANY, depth=50, raw=1.0, time_boost=1.0),
    "+ floor (60% words, cos 0.33)": _ALL,
    "+ one-word hits weigh 0.3": replace(_ALL, weak=0.3),
    "+ one-word hits weigh 0": replace(_ALL, weak=0.0),
    "floor 75% words, weak 0.3": replace(_ALL, strong_terms="2<75%", weak=0.3),
    "raw weight 2": replace(DEFAULT, raw=2.0),
    "kNN weight 2": replace(DEFAULT, knn=2.0),
    "time boost 2": replace(DEFAULT, time_boost=2.0),
    "recency 1": replace(DEFAULT, recency=1.0),
    "newer first at cos 0.6": replace(DEFAULT, supersede=0.6),
    "newer first at cos 0.7": replace(DEFAULT, supersede=0.7),
    "floor cos 0.5": replace(DEFAULT, strong_similarity=0.5),
    "DEFAULT": DEFAULT,
}
# kNN alone: the question's embedding against the memories, nothing else (no time, no words).
KNN_ALONE = Ranking(plan=False, time_boost=0.0, strong_terms="", strong_similarity=DEFAULT.strong_similarity)


@dataclass
class Shown:
    messages: list[str]  # raw message ids, in the order shown
    abstained: bool
    seconds: float


class Corpus:
    """The raw messages of the corpus: evidence ids and each turn's messages."""

    def __init__(self, es: Any, days: list[str]) -> None:
        fields = ["session_id", "turn_id", "entry_id", "message_index", "role"]
        docs = stored_sources(es, RAW_INDEX, {"terms": {"partition": days}}, fields=fields)
        self.by_entry = {(d["session_id"], d["entry_id"]): doc_id for doc_id, d in docs.items()}
        turns: dict[tuple[str, str], list[tuple[int, str, str]]] = {}
        for doc_id, d in docs.items():
            turns.setdefault((d["session_id"], d["turn_id"]), []).append((d["message_index"], doc_id, d["role"]))
        self.turns = {key: sorted(rows) for key, rows in turns.items()}

    def turn_view(self, row: Row) -> list[str]:
        """What one returned turn shows: its matched messages, the person's message, the last reply."""
        rows = self.turns.get((row.session_id, row.turn_id), [])
        user = [doc for _, doc, role in rows if role == "user"][:1]
        reply = [doc for _, doc, role in rows if role == "assistant"][-1:]
        shown: list[str] = []
        for doc in [*row.messages, *user, *reply]:
            if doc not in shown:
                shown.append(doc)
        return shown[:PER_TURN]

    def evidence(self, refs: list[dict[str, str]]) -> list[str]:
        return [self.by_entry[(r["session_id"], r["entry_id"])] for r in refs]


def engine_runner(search: MemorySearch, corpus: Corpus, ranking: Ranking, mode: str) -> Callable[[dict], Shown]:
    def run(question: dict) -> Shown:
        begin = time.perf_counter()
        rows = search.index(
            question["question"],
            k=BUDGET,
            filters=Filters(project=question["project"]),
            mode=mode,  # type: ignore[arg-type]
            ranking=ranking,
            today=date.fromisoformat(question["asked_at"]),
        )
        seconds = time.perf_counter() - begin
        shown: list[str] = []
        for row in rows:
            shown += [m for m in corpus.turn_view(row) if m not in shown]
        return Shown(shown[:BUDGET], not any(r.strong for r in rows), seconds)

    return run


def bm25_raw_runner(es: Any) -> Callable[[dict], Shown]:
    def run(question: dict) -> Shown:
        begin = time.perf_counter()
        query = {
            "bool": {
                "must": [{"match": {"content": question["question"]}}],
                "filter": [{"term": {"project": question["project"]}}],
            }
        }
        hits = es.search(index=RAW_INDEX, query=query, size=BUDGET, source=False)["hits"]["hits"]
        return Shown([h["_id"] for h in hits], not hits, time.perf_counter() - begin)

    return run


def score(question: dict, shown: Shown, corpus: Corpus) -> dict[str, float]:
    if question["category"] == "abstention":
        return {"abstained": float(shown.abstained)}
    evidence = corpus.evidence(question["evidence"])
    found = [shown.messages.index(e) for e in evidence if e in shown.messages]
    result = {
        "recall": len(found) / len(evidence),
        "mrr": 1.0 / (min(found) + 1) if found else 0.0,
        "abstained": float(shown.abstained),
    }
    if question["category"] == "update":
        newer = evidence[0] if evidence[0] in shown.messages else None
        older = [o for o in corpus.evidence(question["replaced"]) if o in shown.messages]
        result["newer_first"] = float(
            newer is not None and all(shown.messages.index(newer) < shown.messages.index(o) for o in older)
        )
    return result


def summarise(scores: list[tuple[dict, dict[str, float]]]) -> dict[str, float]:
    def mean(values: list[float]) -> float:
        return statistics.mean(values) if values else 0.0

    answerable = [s for q, s in scores if q["category"] != "abstention"]
    out = {c: mean([s["recall"] for q, s in scores if q["category"] == c]) for c in CATEGORIES[:-1]}
    out["overall"] = mean([s["recall"] for s in answerable])
    out["mrr"] = mean([s["mrr"] for s in answerable])
    out["newer_first"] = mean([s["newer_first"] for q, s in scores if q["category"] == "update"])
    out["abstention"] = mean([s["abstained"] for q, s in scores if q["category"] == "abstention"])
    out["false_abstention"] = mean([s["abstained"] for s in answerable])
    return out


def ingest(settings: Any, days: list[str]) -> float:
    from memory_pipeline_tests.e2e.ingest_helpers import RECALL_ASSETS

    with make_client(settings, request_timeout=300) as es:
        delete_days(es, PIPELINE_INDICES, days)
    begin = time.perf_counter()
    result = materialize(
        RECALL_ASSETS,
        resources=build_resources(settings),
        instance=instance_with_days(days),
        tags={RANGE_START: days[0], RANGE_END: days[-1]},
    )
    assert result.success, "the corpus did not go through the pipeline"
    return time.perf_counter() - begin


def main(flags: list[str]) -> None:
    shared = load_settings()
    questions = json.loads((CORPUS / "questions.json").read_text())
    sessions = sorted((CORPUS / "sessions").rglob("*.jsonl"))
    days = sorted({json.loads(p.open().readline())["timestamp"][:10] for p in sessions})
    shutil.rmtree(WORK, ignore_errors=True)
    settings = isolated_settings(shared, WORK, sessions_dir=CORPUS / "sessions")
    ingest_seconds = ingest(settings, days)
    variants = {k: v for k, v in VARIANTS.items() if k in ("V0", "DEFAULT")} if "--quick" in flags else VARIANTS
    results: dict[str, dict[str, dict[str, float]]] = {}
    latency: dict[str, list[float]] = {}
    with make_client(settings, request_timeout=60) as es, embeddings_client(settings) as embedder:
        es.indices.refresh(index="memory-*")
        corpus = Corpus(es, days)
        search = MemorySearch(es, embedder)
        runners = {"bm25-raw": bm25_raw_runner(es), "knn": engine_runner(search, corpus, KNN_ALONE, "knn")}
        runners |= {name: engine_runner(search, corpus, ranking, "hybrid") for name, ranking in variants.items()}
        for name, run in runners.items():
            scored: dict[str, list[tuple[dict, dict[str, float]]]] = {"tune": [], "held_out": []}
            latency[name] = []
            for question in questions:
                shown = run(question)
                latency[name].append(shown.seconds)
                scored[question["split"]].append((question, score(question, shown, corpus)))
            results[name] = {split: summarise(items) for split, items in scored.items()}
            held = results[name]["held_out"]
            print(f"{name:>14}: held-out overall {held['overall']:.3f} abstention {held['abstention']:.2f}")
    with make_client(settings, request_timeout=300) as es:
        delete_days(es, PIPELINE_INDICES, days)
    shutil.rmtree(WORK, ignore_errors=True)
    write_section("hard", "uv run python -m bench hard" + (" --quick" if "--quick" in flags else ""),
                  report(questions, sessions, days, results, latency, ingest_seconds))  # fmt: skip


def report(
    questions: list[dict],
    sessions: list[Path],
    days: list[str],
    results: dict[str, dict[str, dict[str, float]]],
    latency: dict[str, list[float]],
    ingest_seconds: float,
) -> str:
    counts = {c: sum(q["category"] == c for q in questions) for c in CATEGORIES}
    held = sum(q["split"] == "held_out" for q in questions)
    head = (
        f"Corpus: {len(sessions)} sessions of 4 projects over {days[0]}..{days[-1]} ({len(days)} days), "
        f"{len(questions)} questions {counts}; held out: {held} (a third, by a hash of the id). Ingest + "
        f"observations + embeddings through the pipeline: {ingest_seconds:.0f} s. Budget: {BUDGET} messages a "
        f"question, {PER_TURN} a turn at most.\n\n"
    )

    def rows(split: str) -> list[list[str]]:
        out = []
        for name, by_split in results.items():
            r = by_split[split]
            p50 = statistics.median(latency[name]) * 1000
            out.append(
                [name]
                + [f"{r[c]:.3f}" for c in ("overall", "single", "multi", "temporal", "update")]
                + [f"{r[m]:.3f}" for m in ("mrr", "newer_first", "abstention", "false_abstention")]
                + [f"{p50:.0f}"]
            )  # fmt: skip
        return out

    headers = ["ranking", "recall@10 msgs", "single", "multi", "temporal", "update", "MRR", "newer first",
               "abstention", "false abstention", "p50 ms"]  # fmt: skip
    return (
        head
        + "Held out:\n\n"
        + table(headers, rows("held_out"))
        + "\n\nTuning split:\n\n"
        + table(headers, rows("tune"))
        + "\n"
    )
