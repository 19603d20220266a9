"""What a person says of a lasting trait is told from what happened that day (recall/disclosures.py), and a turn
whose request says one is tagged so that a judgement question is also searched among those turns."""

from __future__ import annotations

import polars as pl
import pytest

from memory_pipeline.recall.disclosures import DISCLOSURE_TAG, discloses
from memory_pipeline.recall.observations import observe_turns
from memory_pipeline.sessions.messages import session_messages, to_frame
from memory_pipeline.sessions.parse import parse_session
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.sessions.turns import group_turns
from testkit.paths import CORPUS


@pytest.mark.parametrize(
    "said",
    [
        "My wife can't stand spicy food, so we never order Thai.",
        "I'm allergic to peanuts, badly.",
        "I get carsick on anything longer than an hour.",
        "Tom hates flying, he'd rather take the train all day.",
        "Ever since the accident I avoid motorways.",
        "The doctor said no alcohol for a few months.",
        "We're saving up for a wedding next year.",
        "I quit sugar in January.",
        "Never run terraform apply yourself; only plan.",
        "Always use pnpm here, npm rewrote the lockfile last time.",
        "I'm really into pottery these days.",
        "My favourite band has always been Khruangbin.",
        "Caroline is passionate about counselling.",
    ],
)
def test_a_lasting_trait_or_rule_is_a_disclosure(said: str) -> None:
    assert discloses(said)


@pytest.mark.parametrize(
    "said",
    [
        "We went to the market and came back with far too many vegetables.",
        "The train was late again this morning.",
        "Fix the failing test in the cart module.",
        "What did we decide about the queue?",
        "I called my sister for an hour about the anniversary plans.",
        "Add pagination to the recipes endpoint.",
        "I like to think the talk went well.",
    ],
)
def test_what_happened_that_day_is_not(said: str) -> None:
    assert not discloses(said)


def test_a_turn_whose_request_discloses_is_tagged_and_no_other() -> None:
    session = parse_session(
        CORPUS / "conversation" / "sessions" / "--home-maya-journal--"
        / "2022-04-02T21-00-00-000Z_00000000-0000-4000-8000-000000001006.jsonl"
    )  # fmt: skip
    frame = to_frame(session_messages(session, Redactor(), "p")[0])
    observed = observe_turns(group_turns(frame), frame)
    tagged = observed.filter(pl.col("tags").list.contains(DISCLOSURE_TAG))["summary"].to_list()
    # Of this evening's small talk, the one lasting thing said: the rest happened that day.
    assert len(tagged) == 1 and tagged[0].startswith("Asked: I've been vegetarian since college")
    assert observed.height > 4 and all("turn" in tags for tags in observed["tags"].to_list())
    # Only the person's words decide: "Tomatoes do love to sprawl" is the assistant's, and its turn is not tagged.
    [garden] = observed.filter(pl.col("summary").str.starts_with("Asked: Hannah sent me photos")).rows(named=True)
    assert discloses(garden["summary"].split(" Outcome: ")[1]) and DISCLOSURE_TAG not in garden["tags"]
