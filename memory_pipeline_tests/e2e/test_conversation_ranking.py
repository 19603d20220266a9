"""The ranking on three people's histories of the conversational benchmark's corpus (60 sessions of chit-chat in
2022, asked about years later), through the pipeline's own assets: news told over two turns is found by the turn
that holds the answer (its neighbour's words count), a month named without a year is read in the history's
own time, not the clock's, and a question asking a judgement ("should I book the steakhouse?") finds what the
person said of themselves that answers it ("I've been vegetarian since college")."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from datetime import date

import pytest

from memory_pipeline.search.engine import MemorySearch
from memory_pipeline.search.models import Filters
from memory_pipeline.search.query import plan_query
from memory_pipeline.search.ranking import DEFAULT, Ranking
from memory_pipeline.settings import Settings, isolated_settings
from memory_pipeline.stores.elasticsearch import make_client
from memory_pipeline.stores.embeddings import embeddings_client
from testkit.corpora.hard_corpus import Corpus
from testkit.corpora.make_conversation_corpus import OUT as CONVERSATION
from testkit.ingest_helpers import recall_history, reset_days

PEOPLE = ["maya", "theo", "amara"]
TOLD_IN_TWO_TURNS = ("What is the name of", "Who gives me my music lessons?", "What vehicle did we end up buying?",
                     "Where did")  # fmt: skip


@pytest.fixture(scope="module")
def ranked(local_runtime: Settings, tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    root = tmp_path_factory.mktemp("conversation")
    sessions = root / "sessions"
    for who in PEOPLE:
        shutil.copytree(CONVERSATION / "sessions" / f"--home-{who}-journal--", sessions / who)
    settings = isolated_settings(local_runtime, root, sessions_dir=sessions)
    days = recall_history(settings)
    questions = [
        q
        for q in json.loads((CONVERSATION / "questions.json").read_text())
        if q["project"] in {f"/home/{who}/journal" for who in PEOPLE}
    ]
    with make_client(settings) as es, embeddings_client(settings) as embedder:
        es.indices.refresh(index="memory-*")
        yield MemorySearch(es, embedder), Corpus(es, days), questions, days
    reset_days(settings, days)


def _found(
    search: MemorySearch, corpus: Corpus, questions: list[dict], ranking: Ranking, today: date | None = None
) -> int:
    """How many questions get a turn holding their evidence among the first ten rows."""
    hits = 0
    for question in questions:
        rows = search.index(
            question["question"], k=10, filters=Filters(project=question["project"]), ranking=ranking, today=today
        )
        evidence = set(corpus.evidence(question["evidence"]))
        shown = {doc for row in rows for _, doc, _ in corpus.turns.get((row.session_id, row.turn_id), [])}
        hits += bool(evidence & shown)
    return hits


def test_news_told_over_two_turns_is_found_by_its_answer(ranked) -> None:  # noqa: ANN001
    search, corpus, questions, _ = ranked
    told = [q for q in questions if q["category"] == "single" and q["question"].startswith(TOLD_IN_TWO_TURNS)]
    assert len(told) == 4 * len(PEOPLE)
    with_neighbour = _found(search, corpus, told, DEFAULT)
    alone = _found(search, corpus, told, replace(DEFAULT, context=0.0))
    # The answer ("Biscuit. He already chewed…") shares no word with the question; the turn before it does.
    assert with_neighbour > alone, (with_neighbour, alone)


def test_a_month_without_a_year_is_read_in_the_historys_own_time(ranked) -> None:  # noqa: ANN001
    search, corpus, questions, days = ranked
    by_month = [q for q in questions if q["category"] == "temporal" and " in " in q["question"]]
    assert len(by_month) == 2 * len(PEOPLE)
    own_time = _found(search, corpus, by_month, DEFAULT)  # asked with no date, as a person asks
    assert date(2022, 1, 1) <= search.as_of <= date.fromisoformat(days[-1])  # the newest memory's day
    clock = _found(search, corpus, by_month, DEFAULT, today=date(2026, 12, 1))  # "in April" = April 2026
    assert own_time > clock, (own_time, clock)


def test_a_judgement_question_finds_what_the_person_said_of_themselves(ranked) -> None:  # noqa: ANN001
    search, corpus, questions, _ = ranked
    judgements = [q for q in questions if q["category"] == "inference"]
    assert len(judgements) == 4 * len(PEOPLE)
    assert all(plan_query(q["question"], date.today()).judgement for q in judgements)
    among_disclosures = _found(search, corpus, judgements, DEFAULT)
    words_and_meaning = _found(search, corpus, judgements, replace(DEFAULT, disclosed=0.0))
    # "Should I book the steakhouse?" shares no word with "I've been vegetarian since college", and MiniLM puts
    # a year of small talk nearer; among what the person said of themselves that lasts, it is the closest.
    # How many such questions are answered is the model's quality, measured by `python -m bench hard` (its
    # `inference` column in bench/results.md), not asserted here.
    assert among_disclosures > words_and_meaning, (among_disclosures, words_and_meaning)
