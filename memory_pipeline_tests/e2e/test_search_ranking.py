"""The ranking on one project of the hard benchmark's corpus (12 sessions over eight months), through the
pipeline's own assets: a time the question names is favoured, a question on a subject never discussed is
flagged, a newer decision is shown above the one it replaced, and the default ranking finds at least what
kNN alone finds."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest

from memory_pipeline.search.engine import MemorySearch
from memory_pipeline.search.models import Filters
from memory_pipeline.search.ranking import DEFAULT, Ranking
from memory_pipeline.settings import Settings, isolated_settings
from memory_pipeline.stores.elasticsearch import make_client
from memory_pipeline.stores.embeddings import embeddings_client
from testkit.corpora.hard_corpus import KNN_ALONE, Corpus
from testkit.ingest_helpers import recall_history, reset_days

HARD = Path(__file__).resolve().parents[2] / "bench" / "corpus" / "hard"
SOURCE_PROJECT, PROJECT = "/home/dev/shop-api", "/home/dev/ranking-test"


@pytest.fixture(scope="module")
def ranked(local_runtime: Settings, tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    root = tmp_path_factory.mktemp("ranking")
    sessions = root / "sessions"
    # Under a project of its own: other tests' corpora (the reflect corpus is also a shop-api) stay out of scope.
    for source in (HARD / "sessions" / "--home-dev-shop-api--").glob("*.jsonl"):
        lines = source.read_text().split("\n")
        header = json.loads(lines[0])
        lines[0] = json.dumps(header | {"cwd": PROJECT})
        (sessions / source.name).parent.mkdir(parents=True, exist_ok=True)
        (sessions / source.name).write_text("\n".join(lines))
    settings = isolated_settings(local_runtime, root, sessions_dir=sessions)
    days = recall_history(settings)
    # The generated project's own questions (the reflect corpus's, on the same project, are not ingested here).
    questions = [q for q in json.loads((HARD / "questions.json").read_text()) if q["id"].startswith("shop-api-")]
    with make_client(settings) as es, embeddings_client(settings) as embedder:
        es.indices.refresh(index="memory-*")
        yield MemorySearch(es, embedder), Corpus(es, days), questions
    reset_days(settings, days)


def _ask(search: MemorySearch, question: dict, ranking: Ranking, mode: str = "hybrid") -> list:
    """The rows for a question, asked on its own date."""
    return search.index(
        question["question"], k=10, filters=Filters(project=PROJECT), ranking=ranking,
        mode=mode, today=date.fromisoformat(question["asked_at"]),  # type: ignore[arg-type]
    )  # fmt: skip


def _first_turn_hits(
    search: MemorySearch, corpus: Corpus, questions: list[dict], ranking: Ranking, mode: str = "hybrid"
) -> int:
    """How many questions get the turn holding their evidence as the first row."""
    hits = 0
    for question in questions:
        rows = _ask(search, question, ranking, mode)
        evidence = set(corpus.evidence(question["evidence"]))
        first = {doc for _, doc, _ in corpus.turns.get((rows[0].session_id, rows[0].turn_id), [])} if rows else set()
        hits += bool(evidence & first)
    return hits


def test_the_time_a_question_names_is_favoured(ranked) -> None:  # noqa: ANN001
    search, corpus, questions = ranked
    temporal = [q for q in questions if q["category"] == "temporal"]
    assert len(temporal) == 12
    timed = _first_turn_hits(search, corpus, temporal, DEFAULT)
    untimed = _first_turn_hits(search, corpus, temporal, replace(DEFAULT, time_boost=0.0))
    # The boost does what it is for (more questions found with it than without); how many is the benchmark's
    # figure (bench/results.md, `hard`: 7 of 12 against 2), not a threshold here.
    assert timed > untimed, (timed, untimed)


def test_a_subject_never_discussed_is_flagged_and_answers_are_not(ranked) -> None:  # noqa: ANN001
    search, _, questions = ranked

    def flagged(question: dict) -> bool:
        rows = search.index(question["question"], k=10, filters=Filters(project=PROJECT))
        return not any(r.strong for r in rows)

    absent = [q for q in questions if q["category"] == "abstention"]
    answerable = [q for q in questions if q["category"] == "single"]
    flagged_absent, flagged_answerable = sum(map(flagged, absent)), sum(map(flagged, answerable))
    # The floor trades one for the other (bench/results.md, `hard`): measured 9 of 10, and 12 of 38.
    # Flagging works in the direction it is for: a larger share of the absent subjects than of the answerable
    # ones (how large is the benchmark's figure: 9 of 10 against 12 of 38).
    assert flagged_absent / len(absent) > flagged_answerable / len(answerable), (flagged_absent, flagged_answerable)


def test_the_default_ranking_finds_at_least_what_knn_alone_finds(ranked) -> None:  # noqa: ANN001
    search, corpus, questions = ranked
    answerable = [q for q in questions if q["category"] != "abstention"]
    hybrid = _first_turn_hits(search, corpus, answerable, DEFAULT)
    knn = _first_turn_hits(search, corpus, answerable, KNN_ALONE, mode="knn")
    assert hybrid >= knn, (hybrid, knn)


def _newer_above_older(search: MemorySearch, corpus: Corpus, questions: list[dict], ranking: Ranking) -> int:
    """How many knowledge updates show the turn of the newer decision above the turn it replaced."""

    def place(rows: list, message: str) -> int | None:
        turns = [{doc for _, doc, _ in corpus.turns.get((r.session_id, r.turn_id), [])} for r in rows]
        return next((i for i, docs in enumerate(turns) if message in docs), None)

    count = 0
    for question in questions:
        rows = _ask(search, question, ranking)
        [newer], [older] = corpus.evidence(question["evidence"]), corpus.evidence(question["replaced"])
        new_place, old_place = place(rows, newer), place(rows, older)
        count += new_place is not None and (old_place is None or new_place < old_place)
    return count


def test_a_newer_decision_is_shown_above_the_one_it_replaced(ranked) -> None:  # noqa: ANN001
    search, corpus, questions = ranked
    updates = [q for q in questions if q["category"] == "update"]
    assert len(updates) == 10
    default = _newer_above_older(search, corpus, updates, DEFAULT)
    unordered = _newer_above_older(search, corpus, updates, replace(DEFAULT, supersede=None))
    # Newer first does what it is for; how often is the benchmark's figure (8 of 10 against 0).
    assert default > unordered, (default, unordered)
