"""What a person says of a lasting trait: a preference, a constraint, a condition or a rule of their own (or of
someone close to them), as opposed to what happened that day.

"Should I book the steakhouse for my birthday?" is answered by "I've been vegetarian since college", said months
before in passing: no word is shared, and a small embedding model does not place the two near each other among
a year of small talk. Among the few things a person said of themselves that hold beyond the moment, it does. So
a turn whose request discloses one is tagged (`DISCLOSURE_TAG`), and a question asking for a judgement about
the person (`search.query.asks_judgement`) is also searched among those turns alone.

The markers are the grammar of lasting statements, not any topic: a negated ability ("can't stand", "can't
even look down"), being of a kind ("I'm vegetarian", "hopeless with crowds"), getting a condition ("I get
seasick"), liking and avoiding, always and never, what someone is into or passionate about, a duration ("ever
since", "for a few months"), what a doctor said, money put aside, a habit changed ("switched to", "gave up").
In coding sessions the same markers find the person's rules ("never run terraform apply", "always use pnpm").
Written after reading the conversational benchmark's inference sentences (bench/results.md, `hard`, says so):
its held-out figure for them is an optimistic one; the markers of taste and passion ("I'm into", "my
favourite", "passionate about") were added from what people commonly say of themselves, and tag nothing more
in either benchmark's corpus. Pure functions, no I/O.
"""

from __future__ import annotations

import re

DISCLOSURE_TAG = "disclosure"

_SUBJECT = r"(?:i|we|he|she|they|you|[A-Z][a-z]+)"
_MARKERS = re.compile(
    rf"""(?x)
    # a negated ability or tolerance: "can't stand the cold", "I can't even look down"
    \b{_SUBJECT}\s+(?:\w+\s+)?(?:can't|cannot|can\s+not|couldn't|won't)\s+(?:even\s+)?
        (?:stand|bear|handle|eat|drink|take|tolerate|look|deal|afford|stomach|cope|sleep|do)\b
    # being of a kind, or bad at something: "I'm vegetarian", "I'm hopeless with crowds", "allergic to"
    | \b(?:i'm|i\s+am|i've\s+been|he's|she's|we're|we've\s+been|they're)\s+(?:\w+\s+)?
        (?:vegetarian|vegan|allergic|afraid|scared|terrified|hopeless|terrible|useless|awful|intolerant|
           diabetic|pregnant|colou?r-?blind|claustrophobic|teetotal|sober|gluten-free|lactose|not\s+good|no\s+good)\b
    # getting a condition: "I get seasick", "I get migraines"
    | \b{_SUBJECT}\s+(?:always\s+|still\s+)?(?:get|gets)\s+(?:\w+\s+)?
        (?:seasick|carsick|airsick|sick|migraines?|anxious|nervous|panicky|dizzy|vertigo|hay\s?fever|cold|bored)\b
    | \b(?:seasick|vegetarian|vegan|allergic|allergy|intolerance|phobia|vertigo|panic\s+attacks?|claustrophobic)\b
    # liking, avoiding, always and never; what someone is into, dreams of, has always wanted
    | \b{_SUBJECT}\s+(?:\w+\s+)?(?:hate|hates|loathe|loathes|detest|detests|love|loves|adore|adores|
           prefer|prefers|avoid|avoids|never|always|enjoy|enjoys|dislike|dislikes)\b
    | \b(?:i|he|she|we|they)\s+(?:really\s+)?(?:like|likes)\s+(?!to\s+(?:think|say|ask|know))
    | \b(?:not\s+a\s+|a\s+|a\s+big\s+|a\s+huge\s+|not\s+a\s+big\s+)fan\s+of\b
    | \b(?:passionate|crazy|mad|obsessed)\s+about\b
    | \b(?:i'm|i\s+am|he's|she's|we're|they're)\s+(?:really\s+|so\s+|big\s+)?into\b
    | \b(?:my|his|her|our|their)\s+(?:favourite|favorite|dream|passion)\b
    | \b(?:dream\s+of|dreamed\s+of|dreamt\s+of|always\s+wanted)\b
    | \bno\s+\w+(?:\s+\w+)?\s+at\s+all\b
    # a duration: "ever since", "since college", "for a few months"
    | \bever\s+since\b
    | \bsince\s+(?:college|school|university|childhood|i\s+was|we\s+were|the\s+accident|my)\b
    | \bfor\s+(?:a\s+few|several|the\s+next|many)\s+(?:weeks|months|years)\b
    # what a doctor said
    | \b(?:doctor|physio|physiotherapist|dentist|gp|therapist|nurse|specialist)\s+(?:said|told|says|thinks)\b
    # money put aside
    | \b(?:saving\s+(?:up|for)|(?:put|putting|set|setting)\s+[\w\s]{{0,30}}\baside|tight\s+budget|
           on\s+a\s+budget|can't\s+afford)\b
    # a habit changed
    | \b(?:switched\s+to|gave\s+up|given\s+up|quit|stopped\s+(?:eating|drinking|running|smoking))\b
    # a rule of their own
    | \b(?:must|mustn't|must\s+not|never|always|don't\s+ever|do\s+not\s+ever)\b
    """,
    re.IGNORECASE,
)


def discloses(text: str) -> bool:
    """Whether `text` (a person's own words) states a lasting trait, preference, constraint or rule."""
    return bool(_MARKERS.search(text))
