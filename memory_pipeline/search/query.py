"""What a question asks for: its informative words, and the time it names.

A natural question is mostly glue ("what did we decide last week about…"): matched literally, the glue and
the date words outvote the one or two words that carry the subject. So the words a search matches on are the
question's without stop words, question words or time words, and a time named in it ("last week", "in
August", "on 3 June", "two months ago", "2025-06-03") becomes a date range that the ranking favours.
Pure functions, no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

from memory_pipeline.language.words import QUESTION_WORDS, STOP_WORDS, tokens

# What a search leaves out: function words, and the glue people say around a question.
_LEFT_OUT = STOP_WORDS | QUESTION_WORDS
MONTHS = {
    name: number
    for number, names in enumerate(
        [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
         ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
         ("november", "nov"), ("december", "dec")],
        start=1,
    )
    for name in names
}  # fmt: skip
_TIME_TEXT = """today yesterday tomorrow week weeks month months year years day days ago last past previous
    recent recently
    lately earlier later back this next monday tuesday wednesday thursday friday saturday sunday morning afternoon
    evening tonight weekend"""
TIME_WORDS = frozenset(_TIME_TEXT.split()) | frozenset(MONTHS)
NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "few": 3, "couple": 2}


@dataclass(frozen=True)
class QueryPlan:
    text: str  # the informative words, in order ("" when the question has none)
    since: date | None = None  # the time the question names, inclusive
    until: date | None = None
    many: bool = False  # asks for several things ("which cities…", "all the…"): answers may span sessions
    judgement: bool = False  # asks whether something suits or is allowed ("should I…?"): see `asks_judgement`

    @property
    def timed(self) -> bool:
        return self.since is not None


def informative_words(question: str) -> list[str]:
    """The words that carry the subject: no stop words, question words, time words or bare numbers of dates."""
    words = []
    for token in tokens(question):
        word = token.strip(".'")
        lowered = word.lower()
        if (
            not word
            or lowered in _LEFT_OUT
            or lowered in TIME_WORDS
            or re.fullmatch(r"\d{1,2}(st|nd|rd|th)?|(19|20)\d\d", lowered)  # days of a month, years
        ):
            continue
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", lowered):
            continue
        words.append(word)
    return words


def _month_range(year: int, month: int) -> tuple[date, date]:
    first = date(year, month, 1)
    following = date(year + (month == 12), month % 12 + 1, 1)
    return first, following - timedelta(days=1)


def _latest(month: int, day: int | None, today: date) -> int:
    """The year that makes month (and day) the latest such date not after today."""
    probe = date(today.year, month, min(day or 1, 28))
    return today.year if probe <= today else today.year - 1


def time_range(question: str, today: date) -> tuple[date, date] | None:
    """The dates a question names, relative to `today`; None when it names none."""
    text = question.lower()
    if m := re.search(r"\b(\d{4})-(\d{2})-(\d{2})\b", text):
        day = date(int(m[1]), int(m[2]), int(m[3]))
        return day, day
    if re.search(r"\byesterday\b", text):
        return today - timedelta(days=1), today - timedelta(days=1)
    if re.search(r"\btoday\b", text):
        return today, today
    if m := re.search(
        r"\b(\d+|a|an|one|two|three|four|five|six|few|couple of)\s+(day|week|month|year)s?\s+ago\b", text
    ):
        count = int(m[1]) if m[1].isdigit() else NUMBER_WORDS[m[1].split()[0]]
        days = {"day": 1, "week": 7, "month": 30, "year": 365}[m[2]] * count
        slack = max(1, days // 3)
        return today - timedelta(days=days + slack), today - timedelta(days=max(0, days - slack))
    if re.search(r"\b(last|past|previous)\s+week\b", text):
        return today - timedelta(days=13), today - timedelta(days=1)
    if re.search(r"\bthis\s+week\b", text):
        return today - timedelta(days=today.weekday()), today
    if re.search(r"\b(last|past|previous)\s+month\b", text):
        previous = today.replace(day=1) - timedelta(days=1)
        return _month_range(previous.year, previous.month)
    if re.search(r"\bthis\s+month\b", text):
        return today.replace(day=1), today
    if re.search(r"\b(last|past|previous)\s+year\b", text):
        return date(today.year - 1, 1, 1), date(today.year - 1, 12, 31)
    month_names = "|".join(sorted(MONTHS, key=len, reverse=True))
    # "on 3 June", "3rd of June", "June 3", with an optional year
    day_month = re.search(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({month_names})\b\.?(?:\s+(\d{{4}}))?", text)
    month_day = re.search(rf"\b({month_names})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}}))?", text)
    for m, day_group, month_group in ((day_month, 1, 2), (month_day, 2, 1)):
        if m and 1 <= int(m[day_group]) <= 31:
            month, day = MONTHS[m[month_group]], int(m[day_group])
            year = int(m[3]) if m[3] else _latest(month, day, today)
            try:
                exact = date(year, month, day)
            except ValueError:
                continue
            return exact - timedelta(days=1), exact + timedelta(days=1)
    # "in August", "back in march 2025", "during June" ("may" only with a preposition: it is also a verb)
    if m := re.search(rf"\b(?:in|during|from|since|of|early|late|mid)\s+({month_names})\b\.?(?:\s+(\d{{4}}))?", text):
        month = MONTHS[m[1]]
        return _month_range(int(m[2]) if m[2] else _latest(month, None, today), month)
    if m := re.search(rf"\b({month_names})\s+(\d{{4}})\b", text):
        return _month_range(int(m[2]), MONTHS[m[1]])
    return None


_MANY = re.compile(r"\b(?:all|every|list|which of|both|compared?|comparison|options)\b")
# A plural noun right after "which"/"what", or after one word that qualifies it: "which cities", "what new
# pastimes"; not "what did Jonas…" (a verb or a pronoun ends the search), nor "Jonas's".
_PLURAL_AFTER = re.compile(
    r"\b(?:which|what)\s+(?:(?!(?:is|are|was|were|did|do|does|have|has|had|we|i|you|value|kind)\b)[a-z-]+\s+)?"
    r"([a-z-]{3,}s)\b(?!')"
)
_NOT_PLURAL_TEXT = """does was is has this its his us yes always process status address access class bus gas less miss
    pass boss loss business news series analysis basis canvas alias atlas bias lens plus thus various previous famous
    serious migrations"""
_NOT_PLURAL = frozenset(_NOT_PLURAL_TEXT.split())


def asks_for_many(question: str) -> bool:
    """Whether `question` asks for several things, which may lie in several sessions."""
    text = question.lower()
    if _MANY.search(text):
        return True
    found = _PLURAL_AFTER.search(text)
    return bool(found) and found[1] not in _NOT_PLURAL and not found[1].endswith(("ss", "us", "is"))


# A yes/no question: it opens with an auxiliary or a modal ("Should I…", "Would a sailing holiday…", "Is it fine
# to…", "Can I…"), after an optional greeting or "so".
_JUDGEMENT = re.compile(
    r"^\W*(?:(?:hey|hi|ok|okay|so|and|but|quick question)\W+)*"
    r"(?:should|would|could|can|may|might|will|shall|is|are|am|do|does|did|was|were|has|have)\b"
    r"(?!\s+(?:you|we)\s+(?:tell|remind|show|list|find|remember|recall|look)\b)",
    re.IGNORECASE,
)


def asks_judgement(question: str) -> bool:
    """Whether `question` asks for a judgement (a yes/no question: "should I book the steakhouse?", "is it fine
    to debug with print?"): what the person said of themselves answers it more often than its own words do, so
    the search also looks among those statements (`recall/disclosures.py`). A request for a listing or a
    reminder phrased as a question ("can you remind me…") is not one."""
    return bool(_JUDGEMENT.match(question))


def plan_query(question: str, today: date) -> QueryPlan:
    """The informative words of `question`, the time it names (relative to `today`), and whether it asks for
    several things."""
    named = time_range(question, today)
    text = " ".join(informative_words(question))
    return QueryPlan(
        text=text,
        since=named[0] if named else None,
        until=named[1] if named else None,
        many=asks_for_many(question),
        judgement=asks_judgement(question),
    )


# A history whose newest memory is older than this is read in its own time: "in May", "last week" of a history
# that ended in 2023 mean that history's May and last week, not the clock's.
STALE_HISTORY_DAYS = 30


def history_today(today: date, newest: date | None) -> date:
    """The day relative times are read from: `today`, or the newest day of an old history in scope."""
    if newest is not None and (today - newest).days > STALE_HISTORY_DAYS:
        return newest
    return today
