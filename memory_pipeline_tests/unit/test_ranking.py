"""The ranking rules alone (search/ranking.py): no Elasticsearch, hits as the channels return them."""

from __future__ import annotations

import ast
from dataclasses import replace
from datetime import date
from pathlib import Path

from memory_pipeline.search import ranking as ranking_module
from memory_pipeline.search.query import QueryPlan
from memory_pipeline.search.ranking import (
    DEFAULT,
    MAX_QUERY_WORDS,
    cut_query,
    fuse,
    rows_of,
    spread_sessions,
    time_bonus,
)

PLAN = QueryPlan(text="pnpm package manager")


def _memory(doc_id: str, when: str, score: float = 1.0, most: bool = True, **source: str) -> dict:
    hit = {"_id": doc_id, "_index": "memory-summary", "_score": score, "_source": {"established_at": when, **source}}
    if most:
        hit["matched_queries"] = ["most"]
    return hit


def _raw(doc_id: str, session: str, turn: str, when: str, most: bool = True) -> dict:
    source = {"session_id": session, "turn_id": turn, "message_timestamp": when}
    return {"_id": doc_id, "_score": 3.0, "_source": source, **({"matched_queries": ["most"]} if most else {})}


def test_ranking_and_models_import_no_elasticsearch() -> None:
    for module in ("ranking", "models"):
        tree = ast.parse((Path(ranking_module.__file__).parent / f"{module}.py").read_text())
        imported = {
            (node.module or "") if isinstance(node, ast.ImportFrom) else alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in node.names
        }
        assert not {m for m in imported if m.startswith("elasticsearch")}, module


def test_fusion_favours_what_several_channels_found_and_marks_strong_rows() -> None:
    both, words_only, meaning_only = (
        _memory("both", "2026-01-02"),
        _memory("words", "2026-01-03"),
        _memory("meaning", "2026-01-04"),
    )
    knn = [{**both, "_score": 0.9}, {**meaning_only, "_score": 0.8}]  # cosine 0.8 and 0.6
    fusion = fuse([("bm25", [words_only, both]), ("knn", knn)], PLAN, DEFAULT, depth=50)
    assert [d for d, _ in fusion.fused][0] == "both"
    assert fusion.similarity["both"] == 0.8 and round(fusion.similarity["meaning"], 6) == 0.6
    rows = rows_of(fusion, fusion.fused, DEFAULT, k=3)
    assert {r.id: r.strong for r in rows} == {"both": True, "words": True, "meaning": True}
    weak = rows_of(fusion, fusion.fused, replace(DEFAULT, strong_similarity=0.7), k=3)
    assert {r.id: r.strong for r in weak}["meaning"] is False  # found by meaning only, below the floor


def test_a_hit_on_few_words_weighs_less_than_one_on_most_of_them() -> None:
    few = _memory("few", "2026-01-05", most=False)
    most = _memory("most", "2026-01-01")
    fused = fuse([("bm25", [few, most])], PLAN, DEFAULT, depth=50).fused
    assert [d for d, _ in fused] == ["most", "few"]  # DEFAULT.weak is 0: ranked first, it still comes second
    even = fuse([("bm25", [few, most])], PLAN, replace(DEFAULT, weak=1.0), depth=50).fused
    assert [d for d, _ in even] == ["few", "most"]


def test_the_raw_channel_speaks_for_its_turns_observation() -> None:
    fusion = fuse(
        [("raw", [_raw("m1", "s", "t1", "2026-01-02T10:00:00Z"), _raw("m2", "s", "t1", "2026-01-02T10:01:00Z")])],
        PLAN,
        DEFAULT,
        depth=50,
    )
    assert [d for d, _ in fusion.fused] == ["obs_s_t1"]  # two messages of one turn: one candidate
    assert fusion.turn_messages["obs_s_t1"] == ["m1", "m2"] and "obs_s_t1" not in fusion.hits


def test_the_time_a_question_names_adds_a_first_place() -> None:
    plan = QueryPlan(text="deploy", since=date(2026, 3, 1), until=date(2026, 3, 31))
    bonus = time_bonus(plan, DEFAULT, {"in": "2026-03-10T00:00:00Z", "out": "2026-04-01T00:00:00Z", "none": ""})
    assert set(bonus) == {"in"} and bonus["in"] > 0
    assert time_bonus(PLAN, DEFAULT, {"in": "2026-03-10"}) == {}  # no named time: nothing added


def test_rows_of_one_session_make_room_for_others_when_asked() -> None:
    hits = {d: _memory(d, "2026-01-01", session_id=s) for d, s in (("a1", "A"), ("a2", "A"), ("b1", "B"))}
    fused = [("a1", 1.0), ("a2", 0.9), ("b1", 0.8)]
    assert [d for d, _ in spread_sessions(fused, hits, 0.2)] == ["a1", "b1", "a2"]


def test_an_overlong_question_is_cut_with_a_note() -> None:
    assert cut_query("which package manager") == ("which package manager", None)
    text, note = cut_query("word " * (MAX_QUERY_WORDS + 5))
    assert len(text.split()) == MAX_QUERY_WORDS and str(MAX_QUERY_WORDS + 5) in (note or "")


def test_a_few_word_hit_counts_fully_when_knn_agrees() -> None:
    few = _memory("few", "2026-01-05", most=False)
    most = _memory("most", "2026-01-01")
    knn = [{**few, "_score": 0.75}]  # cosine 0.5: close in meaning
    apart = fuse([("bm25", [few, most]), ("knn", knn)], PLAN, DEFAULT, depth=50).fused
    together = fuse([("bm25", [few, most]), ("knn", knn)], PLAN, replace(DEFAULT, agreed=0.45), depth=50).fused
    # Without agreement counting, the few-word BM25 hit weighs nothing and kNN alone carries it.
    assert dict(together)["few"] > dict(apart)["few"]
    assert [d for d, _ in together][0] == "few"  # found by both channels, first
    far = fuse([("bm25", [few, most]), ("knn", knn)], PLAN, replace(DEFAULT, agreed=0.6), depth=50).fused
    assert dict(far)["few"] == dict(apart)["few"]  # kNN not close enough: still weak


def test_what_the_person_said_of_themselves_counts_by_meaning_for_a_judgement() -> None:
    # "Would a sailing holiday suit me?": BM25 finds two turns on holidays, kNN those and two more; among the
    # turns where the person said something lasting, the seasick one is the closest.
    holiday, trip, film = _memory("holiday", "2022-05-01"), _memory("trip", "2022-06-01"), _memory("film", "2022-07-01")
    seasick = _memory("seasick", "2022-03-01", most=False, tags=["turn", "disclosure"])
    knn = [{**holiday, "_score": 0.8}, {**trip, "_score": 0.79}, {**film, "_score": 0.7}, {**seasick, "_score": 0.62}]
    channels = [("bm25", [holiday, trip]), ("knn", knn)]
    plan = QueryPlan(text="sailing holiday good idea", judgement=True)
    said = ("disclosed", [{**seasick, "_score": 0.62}])
    without = [d for d, _ in fuse(channels, plan, DEFAULT, depth=50).fused]
    with_said = fuse([*channels, said], plan, DEFAULT, depth=50)
    assert without == ["holiday", "trip", "film", "seasick"]
    assert [d for d, _ in with_said.fused] == ["holiday", "trip", "seasick", "film"]
    # A cosine, as kNN's: no BM25 score, no word matched, the same similarity.
    assert "seasick" not in with_said.bm25 and "seasick" not in with_said.worded
    assert round(with_said.similarity["seasick"], 6) == 0.24
    off = fuse([*channels, said], plan, replace(DEFAULT, disclosed=0.0), depth=50)
    assert [d for d, _ in off.fused] == without
