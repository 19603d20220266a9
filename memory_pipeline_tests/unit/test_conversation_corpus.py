"""The conversational retrieval corpus (bench/corpus/conversation, made by
testkit/corpora/make_conversation_corpus.py): what is committed is what the generator makes, it loads through the
pipeline's own parsing, and every question's evidence is a person's message that says the fact in other words
than the question's."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from memory_pipeline.search.query import informative_words
from memory_pipeline.sessions.discovery import scan_sessions
from memory_pipeline.sessions.load import catalog, load_messages
from memory_pipeline.sessions.redact import Redactor
from testkit.corpora import make_conversation_corpus

COMMITTED = make_conversation_corpus.OUT
QUESTIONS = json.loads((COMMITTED / "questions.json").read_text())


def _files(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*.jsonl"))}


def test_the_committed_corpus_is_what_the_generator_makes(tmp_path: Path) -> None:
    questions = make_conversation_corpus.build(tmp_path / "sessions")
    assert questions == QUESTIONS
    assert _files(tmp_path / "sessions") == _files(COMMITTED / "sessions")


@pytest.fixture(scope="module")
def messages(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], dict]:
    found, problems = scan_sessions(COMMITTED / "sessions")
    assert not problems
    loaded, report = load_messages(catalog(found, {}), tmp_path_factory.mktemp("cache"), Redactor())
    assert not report.problems
    return {(m["session_id"], m["entry_id"]): m for m in loaded.iter_rows(named=True)}


def test_every_evidence_is_a_persons_message_in_other_words(messages: dict[tuple[str, str], dict]) -> None:
    for question in QUESTIONS:
        for ref in question["evidence"] + question.get("replaced", []):
            message = messages[(ref["session_id"], ref["entry_id"])]
            assert message["role"] == "user", question["id"]
            assert message["project"] == question["project"]
            if ref not in question["evidence"]:
                continue  # a replaced fact may say it plainly ("I work as…"): the answer is the newer one
            said = {w.lower() for w in informative_words(message["content"])}
            asked = {w.lower() for w in informative_words(question["question"])}
            # A paraphrase: never every informative word of the question in the evidence.
            assert not asked or not asked <= said, (question["id"], asked & said)


def test_every_category_is_held_out_and_the_histories_are_old() -> None:
    held = Counter(q["category"] for q in QUESTIONS if q["split"] == "held_out")
    assert set(held) == {"single", "multi", "temporal", "inference", "update", "abstention"}
    assert min(held.values()) >= 8
    assert 0.25 <= sum(held.values()) / len(QUESTIONS) <= 0.40
    assert all(len(q["evidence"]) >= 2 for q in QUESTIONS if q["category"] == "multi")
    assert all(not q["evidence"] for q in QUESTIONS if q["category"] == "abstention")
    # Asked with no date, years after the history: "in May" must be read in the history's own time.
    assert not any("asked_at" in q for q in QUESTIONS)
    days = sorted(path.name[:10] for path in COMMITTED.rglob("*.jsonl"))
    assert days[0] >= "2022-01-01" and days[-1] <= "2022-12-31"
