"""What a person says of a lasting trait: a preference, a constraint, a condition or a rule of their own (or of
someone close to them), as opposed to what happened that day.

"Should I book the steakhouse for my birthday?" is answered by "I've been vegetarian since college", said months
before in passing: no word is shared, and a small embedding model does not place the two near each other among
a year of small talk. Among the few things a person said of themselves that hold beyond the moment, it does. So
a turn whose request discloses one is tagged (`DISCLOSURE_TAG`), and a question asking for a judgement about
the person (`search.query.asks_judgement`) is also searched among those turns alone.

The markers (`language.lexicon.DISCLOSURE`) are the grammar of lasting statements, not any topic: a negated
ability ("can't stand", "can't even look down"), being of a kind ("I'm vegetarian", "hopeless with crowds"),
getting a condition ("I get seasick"), liking and avoiding, always and never, what someone is into or passionate
about, a duration ("ever since", "for a few months"), what a doctor said, money put aside, a habit changed
("switched to", "gave up"). In coding sessions the same markers find the person's rules ("never run terraform
apply", "always use pnpm"). Written after reading the conversational benchmark's inference sentences
(bench/results.md, `hard`, says so): its held-out figure for them is an optimistic one; the markers of taste and
passion ("I'm into", "my favourite", "passionate about") were added from what people commonly say of themselves,
and tag nothing more in either benchmark's corpus. Pure functions, no I/O."""

from __future__ import annotations

from memory_pipeline.language.lexicon import DISCLOSURE

DISCLOSURE_TAG = "disclosure"


def discloses(text: str) -> bool:
    """Whether `text` (a person's own words) states a lasting trait, preference, constraint or rule."""
    return bool(DISCLOSURE.search(text))
