"""What a question asks for: its informative words, and the time it names (relative to the day it is asked)."""

from __future__ import annotations

from datetime import date

import pytest

from memory_pipeline.search.query import (
    asks_for_many,
    asks_judgement,
    history_today,
    informative_words,
    plan_query,
    time_range,
)

TODAY = date(2025, 10, 15)  # a Wednesday


def test_glue_question_and_time_words_are_not_matched_on() -> None:
    assert informative_words("What did we decide last week about the Redis cache?") == ["decide", "Redis", "cache"]
    assert informative_words("Remind me which HTTP client library we agreed on?") == [
        "HTTP",
        "client",
        "library",
        "agreed",
    ]
    assert informative_words("What happened on 3 June 2025?") == []


@pytest.mark.parametrize(
    ("question", "since", "until"),
    [
        ("what broke yesterday", date(2025, 10, 14), date(2025, 10, 14)),
        ("what did we conclude last week", date(2025, 10, 2), date(2025, 10, 14)),
        ("anything this week?", date(2025, 10, 13), date(2025, 10, 15)),
        ("the retro last month", date(2025, 9, 1), date(2025, 9, 30)),
        ("the retro in August", date(2025, 8, 1), date(2025, 8, 31)),
        ("the demo in December", date(2024, 12, 1), date(2024, 12, 31)),  # not yet this year: last year's
        ("back in march 2024", date(2024, 3, 1), date(2024, 3, 31)),
        ("what did we decide on 3 June", date(2025, 6, 2), date(2025, 6, 4)),
        ("June 12th", date(2025, 6, 11), date(2025, 6, 13)),
        ("two weeks ago", date(2025, 9, 27), date(2025, 10, 5)),
        ("see 2025-06-03", date(2025, 6, 3), date(2025, 6, 3)),
    ],
)
def test_a_named_time_becomes_a_date_range(question: str, since: date, until: date) -> None:
    assert time_range(question, TODAY) == (since, until)


def test_may_the_verb_is_not_a_month_and_no_time_is_none() -> None:
    assert time_range("May I ask which ORM we use?", TODAY) is None
    assert time_range("which ORM do we use", TODAY) is None
    plan = plan_query("Which ORM do we use?", TODAY)
    assert plan.text == "ORM" and not plan.timed
    assert plan_query("What came out of the retro in July?", TODAY).since == date(2025, 7, 1)


def test_an_old_history_is_read_in_its_own_time() -> None:
    from datetime import date

    today, ended = date(2026, 12, 2), date(2023, 8, 30)
    assert history_today(today, ended) == ended  # the history ended years ago: its own "May"
    assert history_today(today, date(2026, 11, 28)) == today  # an active history: the clock
    assert history_today(today, None) == today
    may = plan_query("what did we decide in May about the cache?", history_today(today, ended))
    assert (may.since, may.until) == (date(2023, 5, 1), date(2023, 5, 31))


@pytest.mark.parametrize(
    ("question", "many"),
    [
        ("Which cities have I travelled to this year?", True),
        ("What new pastimes have I picked up?", True),
        ("Which of my friends are moving abroad?", True),
        ("How did the options for producing invoices that we measured compare?", True),
        ("List every flag we turned on", True),
        ("What did Jonas give me for my birthday?", False),
        ("What colour is Jonas's motorbike?", False),
        ("What does the deploy script do?", False),
        ("Which package manager do we use?", False),
        ("Remind me which migrations library we agreed on?", False),
    ],
)
def test_a_question_asking_for_several_things_is_known(question: str, many: bool) -> None:
    assert asks_for_many(question) is many
    assert plan_query(question, date(2026, 1, 1)).many is many


@pytest.mark.parametrize(
    ("question", "judgement"),
    [
        ("Should I book the steakhouse for my birthday dinner?", True),
        ("Would a sailing holiday be a good idea for me?", True),
        ("Is it fine to debug with print statements here?", True),
        ("so, can I run the migrations myself?", True),
        ("Do new functions need annotations?", True),
        ("Can you remind me what we chose for the queue?", False),  # a reminder, phrased as a question
        ("Could we list the flags we turned on?", False),
        ("What did Jonas give me for my birthday?", False),
        ("Which package manager do we use?", False),
        ("how do I start the dev server", False),
    ],
)
def test_a_question_asking_for_a_judgement_is_known(question: str, judgement: bool) -> None:
    assert asks_judgement(question) is judgement
    assert plan_query(question, date(2026, 1, 1)).judgement is judgement
