"""The words of a text: one tokenizer, one list of stop words, one stemmer, for every package.

A word is a run of letters and digits that may hold the marks code names are made of (`app.py`, `--force`,
`c++`, `#123`, `don't`); each CJK character is a word of its own (those scripts do not separate words by
spaces). Stop words are function words; what a caller also ignores for its own purpose is named here beside
them (the words around a claim about who said something, the glue of a question), so no package keeps a list
of its own. Pure functions, no I/O.
"""

from __future__ import annotations

import re

CJK = "\u2e80-\u9fff\uac00-\ud7af"
_CJK_CHAR = re.compile(f"([{CJK}])")
_TOKEN = re.compile(r"\w[\w'.+#/\-]*[\w+#]|\w")
_EDGES = "./-#'_"

# English function words (Lucene's list and the usual ones), as people type them too ("dont", "im").
STOP_WORDS = frozenset(
    """a about above after again against all also am an and any are aren't as at be because been before being
    below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't dont down
    during each few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here here's
    hers herself him himself his how how's i i'd i'll i'm im i've if in into is isn't it it's its itself just
    let let's lets me more most mustn't my myself no nor not now of off on once only onto or other ought our ours
    ourselves out over own per same shan't she she'd she'll she's should shouldn't so some such than that that's
    the their theirs them themselves then there there's these they they'd they'll they're they've this those
    through to too under until up upon very via was wasn't we we'd we'll we're we've were weren't what what's
    when when's where where's which while who who's whom why why's will with won't would wouldn't yes ok okay
    please you you'd you'll you're you've your yours yourself yourselves""".split()  # noqa: SIM905 - a word list reads better as text
)
# The stop words that open a noun phrase ("the theme", "all TUI test files"): after a verb they mark its object,
# so "Set the theme to 1" is about the theme, not about setting.
DETERMINERS = frozenset(
    "a an the this that these those my your our their its his her all each every some any no".split()  # noqa: SIM905
)
# The words that stand for something said before them ("They hang because Redis is not running").
POINTING = frozenset("it its they them this that these those he she".split())  # noqa: SIM905
# The persons a sentence may be about without naming them ("I prefer tabs", "we use pnpm", "they hang").
PRONOUNS = frozenset("i we you he she it they".split())  # noqa: SIM905
# The words around a claim about who said what ("the user said they want …"): they say nothing of the subject.
SPEECH_WORDS = frozenset(
    """user users said says say stated states state asked asks ask wants want wanted requested requests told
    agent assistant model turn session sessions future remember should must needs need used use using one two
    new get got make made""".split()  # noqa: SIM905
)
# The glue of a question ("can you remind me what we said about …"): what a search leaves out besides stop words.
QUESTION_WORDS = frozenset(
    """remind tell know ever still currently nowadays anyway actually supposed meant going get got use using used
    one ones thing things something anything stuff way whats us came come happened happen ask asked say said two
    three four five six couple""".split()  # noqa: SIM905
)

# Words a sentence cannot end on: it was cut before what they open ("…help you with tasks like.", "…run the.").
ENDS_OPEN = frozenset(
    """a an the to of and or but nor with for in on at by from into onto than that is are be if as because although
    unless whether while like including such e.g i.e via per my your our their""".split()  # noqa: SIM905
)
# After one of these, a last "that" or "this" is the thing pointed at, and the sentence is whole ("don't read env
# vars for that."), not a clause left open ("…so that.").
CLOSES_POINTER = frozenset("to of with for in on at by from into onto than like about after before without".split())  # noqa: SIM905

# A person's words about themselves, said of them for a reader who is not them ("I work for" -> "The person works
# for"): the openings of a first-person statement and what they become; the rest of the sentence is kept.
THIRD_PERSON = (
    (r"^my name is\b", "The person's name is"),
    (r"^(?:call me|i go by)\b", "The person goes by"),
    (r"^(?:i'?m|i am)\b", "The person is"),
    (r"^i'?ve\b", "The person has"),
    (r"^i (?:have|own)\b", "The person has"),
    (r"^i (work|live|drink|eat|run|use|prefer|like|love|hate|need|want|keep|go|study|teach)\b", "The person \\1s"),
    (r"^i don'?t\b", "The person does not"),
    (r"^my\b", "The person's"),
    (r"^our\b", "Their"),
)

# The words composition frames a claim with, beside `THIRD_PERSON`'s ("The cause was …", "Values set: …"): never what
# the claim is about (`summarize.faithful.invented_subject`).
CAUSE_FRAME = "The cause was"
VALUES_FRAME = "Values set"


def tokens(text: str) -> list[str]:
    """The words of `text` as written (case kept), in order."""
    return _TOKEN.findall(_CJK_CHAR.sub(r" \1 ", text))


def words(text: str) -> list[str]:
    """The words of `text`, lower-cased, without the marks that only end them (`app.py.` -> `app.py`)."""
    found = (token.lower().strip(_EDGES) for token in tokens(text))
    return [word for word in found if word]


def stem(word: str) -> str:
    """Crude and symmetric (both sides of a comparison go through it): `fixed`, `fixes`, `fixing` -> `fix`."""
    for suffix in ("ing", "ed", "es", "s", "ly"):
        if len(word) - len(suffix) >= 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def content_words(text: str, ignored: frozenset[str] = SPEECH_WORDS) -> set[str]:
    """The stems of the words that carry meaning: no stop words (nor `ignored`), no one- or two-letter words
    bar numbers and other scripts."""
    return {
        stem(word)
        for word in words(text)
        if word not in STOP_WORDS and word not in ignored and (len(word) > 2 or word.isdigit() or not word.isascii())
    }
