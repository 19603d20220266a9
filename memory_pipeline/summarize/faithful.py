"""Whether a memory says what its evidence says: pure checks, run on every statement before it is stored.

A small model rewords well and reasons badly: from "From now on local development uses Postgres instead of
SQLite" it wrote "Postgres is no longer used for dev.". A memory that says what its evidence does not is worse
than none, so each statement is checked against the words it rests on (its evidence, and the turn around it
for the names it may take from there):

- **Polarity.** A negation the evidence does not make is not added ("no longer", "never", "not"), unless what
  it negates is what the evidence replaced ("Use Postgres, not SQLite" of "Postgres instead of SQLite"); a
  negation the evidence makes is not lost where the statement keeps what it negates ("Never push to main" is
  not "Push to main").
- **Direction.** When both put one thing in another's place, the chosen and the replaced are the same, never
  swapped; a statement never negates what its evidence chooses, and one that names the choice names what it
  replaced too ("Postgres on 55432 for local dev." of "…uses Postgres instead of SQLite" reads as a new choice).
- **Particulars.** Every number, port, path, file, command, URL and code name the statement holds is in the
  evidence or its turn: none invented, none swapped.
- **Its subject.** What a statement is about is what its evidence is about: the words of each sentence's subject
  (`subject_of`: its first noun phrase, or the object of a verb that opens it, "Set the theme to 1") are in the
  evidence itself, not only somewhere in the turn. A small model restating "needs to be set to 1 for true colors"
  named the turn's topic as its subject ("Set the theme to 1 for true colors."; the person meant COLORTERM), and
  "The `AgentSession` class is now 885 lines" came back as three memories about other classes.
- **Its own evidence.** A statement rests on the words it cites: at least `RESTS_ON` of its content words are
  in its evidence (`strays`). One made of the turn's other words (the assistant's tool call written as text
  stored as the person's rule, a plan stored as a gotcha of one line it quotes) says what its evidence does
  not, however grounded in the turn it is.

`unfaithful` returns the reason a statement fails (counted by the caller), or "" when it passes; `strays` says
whether one is about something else than its evidence (no recomposing mends that: it is dropped).
"""

from __future__ import annotations

import re

from memory_pipeline.language.lexicon import CLAUSE_END, NEGATION, RULE, particulars, replacement
from memory_pipeline.language.words import (
    CAUSE_FRAME,
    DETERMINERS,
    POINTING,
    PRONOUNS,
    STOP_WORDS,
    THIRD_PERSON,
    VALUES_FRAME,
    content_words,
    stem,
    tokens,
    words,
)
from memory_pipeline.sentences import sentences
from memory_pipeline.summarize.knowledge import mend_typos
from memory_pipeline.summarize.trust import grounding, latin_share

# The share of a memory's content words its evidence must hold. Chosen on the tuning half of the frozen labels
# (`bench knowledge`, embedded model's gated memories): 0.3 to 0.5 drop the same 8 of the 32 wrong memories there
# and one right one; the lowest was taken. Held out: 13 to 6 memories from trap turns, precision 17% to 22%,
# memorable turns with a correct memory unchanged (7/24).
RESTS_ON = 0.3


def _negated(text: str) -> set[str]:
    """The content words each negation of `text` reaches, to the end of its clause."""
    reached: set[str] = set()
    for found in NEGATION.finditer(text):
        rest = text[found.end() :]
        end = CLAUSE_END.search(rest)
        reached |= content_words(rest[: end.start()] if end else rest)
    return reached


def _same(a: str, b: str) -> bool:
    """Two names of one thing: they share a content word ("Postgres" and "postgres db"), or one holds the other
    whole (the `requests` library is no content word: "requests" is a word of speech)."""
    if content_words(a) & content_words(b):
        return True
    short, long = sorted((a.strip(), b.strip()), key=len)
    return bool(short) and re.search(rf"(?<![\w-]){re.escape(short)}(?![\w-])", long, re.I) is not None


def _folded(text: str) -> str:
    return " ".join(words(text))


def invented(statement: str, source: str) -> list[str]:
    """The particulars of `statement` that `source` does not hold (case and spacing aside)."""
    folded = _folded(source)
    # A file is named by its path's last part as often as by the path ("`dark.json`" of ".../theme/dark.json").
    have = f" {folded} {' '.join(word.rsplit('/', 1)[-1] for word in folded.split() if '/' in word)} "
    return [p for p in particulars(statement) if f" {_folded(p)} " not in have]


def unfaithful(statement: str, evidence: str, turn: str = "") -> str:
    """Why `statement` says what `evidence` (and its turn, `turn`) does not; "" when it is faithful."""
    if not evidence.strip():
        return ""
    said, stated = replacement(evidence), replacement(statement)
    added = _negated(statement) - _negated(evidence)
    if said:
        chosen, replaced = said
        if added & content_words(chosen):
            return f"negates what the evidence chooses ({chosen})"
        added -= content_words(replaced)
        if stated and _same(stated[0], replaced) and _same(stated[1], chosen):
            return f"swaps what is chosen ({chosen}) and what it replaces ({replaced})"
    if added and not NEGATION.search(evidence):
        return "adds a negation the evidence does not make"
    if said and _same(statement, said[0]) and not _same(statement, said[1]):
        return f"names the choice ({said[0]}) but not what it replaced ({said[1]})"
    lost = (_negated(evidence) - _negated(statement)) & content_words(statement)
    if lost and not NEGATION.search(statement):
        return "loses the evidence's negation"
    missing = invented(statement, f"{evidence}\n{turn}")
    if missing:
        return f"names what the turn does not ({', '.join(missing[:3])})"
    # Evidence whose subject points back ("They hang because …") leaves it to the turn: the statement names it from
    # there. Evidence that says no subject at all ("needs to be set to 1 …") leaves it to no one.
    elsewhere = invented_subject(statement, f"{evidence}\n{turn}" if _points_back(evidence) else evidence)
    if elsewhere:
        return f"names a subject its evidence does not ({', '.join(elsewhere[:3])})"
    return ""


# The most words a subject is read to: past them a noun phrase the stop words did not end is a clause.
SUBJECT_WORDS = 4
# The words composition frames a person's claim with ("The person's", "The cause was"): never the claim's subject.
_FRAMES = " ".join([CAUSE_FRAME, VALUES_FRAME, *(said.replace("\\1", "") for _, said in THIRD_PERSON)])
_FRAME_WORDS = frozenset(words(_FRAMES))


def _name_like(token: str) -> bool:
    """A name a text in any language spells as written: code marks, digits, or capitals inside (`setTheme`)."""
    return any(ch in token for ch in "._/-#`") or any(ch.isdigit() for ch in token) or token[1:] != token[1:].lower()


def _ends_phrase(token: str) -> bool:
    """A stop word, or a rule's marker ("always", "must", "never"): what opens or ends a noun phrase."""
    return token.lower() in STOP_WORDS or bool(RULE.fullmatch(token))


def _points_back(evidence: str) -> bool:
    said = tokens(_first_clause(evidence))
    return bool(said) and said[0].lower() in POINTING


def _first_clause(sentence: str) -> str:
    """The first clause of `sentence` that holds a word past the stop words (a mark inside a name, `theme.ts`,
    `spotter-a0y.2:`, ends none)."""
    start = 0
    for end in [m for m in CLAUSE_END.finditer(sentence) if not sentence[m.end() : m.end() + 1].isalnum()] + [None]:
        clause = sentence[start : end.start() if end else None]
        if any(t.lower() not in STOP_WORDS for t in tokens(clause)):
            return clause
        start = end.end() if end else start
    return ""


def subject_of(statement: str) -> list[str]:
    """The words that say what each sentence of `statement` is about, as written: the first noun phrase of its
    first clause, past the openers of a rule ("Always", "Never", "Make sure") and stop words; after a word that
    opens the clause on a determiner, that word's object ("Set the theme to 1" is about the theme); of a phrase
    that opens the sentence bare, the words after its first, which may be an imperative's verb ("Add CSS"). Ends
    at a stop word, a rule's marker or after `SUBJECT_WORDS` words. In a sentence of another language (letters past
    ASCII, no English stop word) only its names are read: its ordinary words cannot be told apart here."""
    found: list[str] = []
    for sentence in sentences(statement) or [statement]:
        said = tokens(_first_clause(sentence))
        if len(tokens(sentence)) < 2 or _pronoun_first(said):
            continue  # "Investigate.", "This will help …": no subject of its own to hold to the evidence
        at = 0
        while at < len(said) and _ends_phrase(said[at]):
            at += 1
        if at + 1 < len(said) and said[at + 1].lower() in DETERMINERS:  # a verb and its object
            at += 2
            while at < len(said) and said[at].lower() in STOP_WORDS:
                at += 1
        phrase = _phrase(said, at)
        if phrase and said[at + len(phrase) : at + len(phrase) + 1] == ["of"]:
            phrase = _phrase(said, at + len(phrase) + 1) or phrase  # "the color of `dimGray`" is about dimGray
        if (at == 0 or said[at - 1].lower() not in DETERMINERS) and len(phrase) > 1:
            phrase = phrase[1:]  # no determiner before it: its first word may be a verb ("Add CSS for …")
        if not sentence.isascii() and not any(t.lower() in STOP_WORDS for t in tokens(sentence)):
            phrase = [t for t in phrase if _name_like(t)]  # another language: its names only
        found += phrase
    return found


def _pronoun_first(said: list[str]) -> bool:
    """A clause whose subject is a pronoun ("I prefer …", "This will help …", "It was …")."""
    first, second = (said + ["", ""])[:2]
    return first.lower() in PRONOUNS or (first.lower() in POINTING and _ends_phrase(second or "."))


def _phrase(said: list[str], at: int) -> list[str]:
    """The words of a noun phrase from `at`, past its stop words, to the next stop word or rule marker."""
    while at < len(said) and said[at].lower() in STOP_WORDS and said[at].lower() not in PRONOUNS:
        at += 1
    phrase: list[str] = []
    while at < len(said) and not _ends_phrase(said[at]) and len(phrase) < SUBJECT_WORDS:
        phrase.append(said[at])
        at += 1
    return phrase


def _squashed(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.lower())


def invented_subject(statement: str, evidence: str) -> list[str]:
    """The words of `statement`'s subject (`subject_of`) its `evidence` does not hold: neither as a word (case and a
    plural or -ing ending aside, `_forms`; or its first five letters), nor written together or apart
    ("dropdown" of "drop down"). The words composition frames a claim with are not its subject. A statement in
    another script than its evidence is held to the names its subject spells."""
    subject = [t for t in subject_of(statement) if t.lower() not in _FRAME_WORDS]
    if latin_share(statement) >= 0.5 > latin_share(evidence):
        subject = [t for t in subject if _name_like(t)]
    evidence = mend_typos(evidence, statement)  # a slip the statement spells right: "console" of "no conosle logs"
    have = {form for word in words(evidence) for form in _forms(word)}
    prefixes = {word[:5] for word in have if len(word) >= 5}
    together = _squashed(evidence)
    missing = []
    for token in subject:
        if not content_words(token):
            continue  # a stop word, a word about who said it ("user"), a word of two letters
        held = all(_forms(w) & have or (len(w) >= 5 and w[:5] in prefixes) for w in words(token))
        if not held and not (len(_squashed(token)) >= 5 and _squashed(token) in together):
            missing.append(token.strip("`'\""))
    return missing


def _forms(word: str) -> set[str]:
    """A word, its stem and its singular: "themes" is "theme" ("them" to the crude stem), "caching" is "cach"."""
    return {word, stem(word), word[:-1] if word.endswith("s") else word}


def strays(statement: str, evidence: str) -> bool:
    """Whether `statement` is mostly words its `evidence` does not hold (in another script than the statement's,
    it must share a name with it: `trust.grounding`)."""
    return bool(evidence.strip()) and grounding(statement, evidence) < RESTS_ON
