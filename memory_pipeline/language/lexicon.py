"""The lexicon of lasting statements: the words that mark a rule, a decision, a cause, a replacement, a negation
or a trait a person discloses, once, as data. Each entry is a pattern (English, as people type it: "dont",
"u"); `summarize` types a person's sentences with it, `trust` checks a model's priorities with it, `recall` tags
what a person says of themselves with it, `summarize.faithful` checks a memory's polarity and direction with
it. What the markers cannot decide (whether a sentence holds knowledge at all) is learned from labelled turns
(`summarize.gate`), not written here as one more pattern.
"""

from __future__ import annotations

import re

# A rule or preference: how work is to be done. "I don't think it works" is the speaker about themselves;
# "I don't want X" is still a preference; "should be good" is no rule.
RULE = re.compile(
    r"(?i)\b(?:always|never|must(?:n't)?|(?<!\bi )don'?t|(?<!\bi )do not|i (?:don'?t|do not) (?:want|like)"
    r"|no need|make sure|needs? to|has to|have to|should(?!\s+be\s+"
    r"(?:good|fine|ok|okay|done|able|possible|enough)\b)|prefer|from now on|only use|avoid|not allowed|required?"
    r"|(?<!\bi )\bneeds?\b(?! (?:you|u|help)\b)|^use\b.*,\s*(?:no|not)\s"
    r"|(?:^|[,;]\s*)no (?:[a-z0-9]+ ){0,2}[a-z0-9]+s\b(?=[!.]|$))"
)
# A rule said without what it is about ("should be dimmer", "needs to be set to 1"): it opens on its modal.
MODAL_FIRST = re.compile(r"^(?:should|must|needs? to|has to|have to)\b", re.I)
# A choice made, or one thing put in another's place.
DECISION = re.compile(
    r"(?i)\b(?:decided|decision|we'?ll use|let'?s use|let'?s go with|go(?:ing)? with|switch(?:ed|ing)? to"
    r"|instead of|rather than|\w+ over \w+ because|chose|picked|settled on|replac(?:e|ed|ing) \w+ with"
    # "we're moving the HTTP client in invoices from urllib3 to aiohttp", "let's move the tests from Jest to Vitest":
    # said by "we", a move is a choice; "move the helper from utils.py to helpers.py" is an order for the moment.
    r"|(?:we|we're|we've|we are|we have|let's|let us)\s+(?:\w+\s+){0,2}?(?:mov|migrat|switch)(?:e|ed|es|ing)?"
    r"(?: (?!from\b)[\w`@./+#-]+){0,5}? from [\w`@./+#-]+ to)\b"
)
# A cause, or what breaks and how to avoid it.
CAUSE = re.compile(
    r"(?i)\b(?:otherwise|or (?:it|else) (?:will|breaks?|crash\w*|render\w*|fails?)|root cause|caused by"
    r"|it was actually|the (?:problem|issue|bug|cause) (?:was|is)|turned out|because of|breaks? when|gotcha"
    r"|needs? to be set|must be set|has to be set)\b"
)
# What the assistant found: a cause, and the fix that removed it.
FINDING = re.compile(
    r"(?i)\b(?:root cause|the (?:real )?(?:problem|issue|bug|cause|culprit) (?:was|is)|was caused by|caused by"
    r"|turned out|it was actually|because the|the fix (?:was|is)|fixed by|the reason (?:was|is))\b"
)
# Words of trouble: a turn about something broken is about a cause, whatever words its claim uses.
TROUBLE = re.compile(
    r"(?i)\b(?:rule|because|instead|decid(?:e|ed|ing)|broke|broken|wrong|fucked|not working|doesn't work"
    r"|fails?|failed|error)\b"
)
# A negation: what flips the polarity of a statement.
NEGATION = re.compile(
    r"(?i)\b(?:no longer|no|not|never|don'?t|do not|doesn'?t|does not|won'?t|will not|without|avoid|nothing|none"
    r"|nobody|neither|nor|cannot|can'?t|isn'?t|aren'?t|wasn'?t|shouldn'?t|mustn'?t|stop(?:ped)? using)\b"
    r"|n't\b"
)
# Particulars: a code span, a URL, a path or file, a number (a port, a version, a size, with the unit it is joined
# to: "2-space" is one particular, not "2"), a version ("v2" of an API), a name with code marks.
PARTICULAR = re.compile(
    r"`[^`]+`|https?://\S+|(?<![\w.])(?:[\w.-]+/)+[\w.-]+|\b\d[\d.,:]*(?:[\w-]*\w)?|\b\w+[._-]\w[\w.-]*"
    r"|\b[a-z]+[A-Z]\w*|\bv\d+\b"
)


def particulars(text: str) -> list[str]:
    """The particulars `text` names (`PARTICULAR`), without the marks around them (`` `pnpm` `` -> pnpm)."""
    return [p.strip("`.,;:") for p in PARTICULAR.findall(text) if p.strip("`.,;:")]


# The words a negation reaches: up to the end of its clause.
# A mark ends a clause only before a space or the end: "02:30", "1.82.0" and "app.py" are each one name.
CLAUSE_END = re.compile(r"[,;:.!?](?=\s|$)|[()]|\b(?:but|and|instead|because|so)\b", re.I)
# A person correcting what was said or done: the openings and words of "no, that's wrong, we moved to …".
CORRECTION = re.compile(
    r"(?i)(?:^|[.!?]\s+)(?:no|nope|nah|wait|stop)\b|\b(?:wrong|incorrect|actually|not anymore|no longer|any ?more"
    r"|outdated|out of date|stale|not true|isn'?t true|not right|changed|we (?:moved|switched|migrated|went|dropped)"
    r"|(?:moved|switched|migrated) (?:away )?(?:from|off|back|to)|dropped|got rid of"
    r"|not (?:using|use) \w+ (?:any ?more)"
    r"|don'?t use|do not use|stop using|never use|i said|i told you|told you|how many times|again\?)\b"
)
# What says a thing was left behind ("Cypress was removed", "v1 is deprecated", "we dropped styled-components"):
# the names beside it are rejected, as a negation's are.
LEFT_BEHIND = re.compile(
    r"(?i)\b(?:removed|dropped|deprecated|abandoned|retired|replaced|legacy|obsolete|gone|old|stale"
    r"|cancell?ed|discontinued|decommissioned|shut down|sunset"
    r"|instead of|rather than|got rid of|moved (?:away )?from|migrated (?:away )?from|switched (?:away )?from"
    r"|went from|moving from|renamed from)\b"
)
# The other side of a move ("from SQLite to Postgres", "in favour of Tailwind"): the names after it are chosen.
CHOSEN_AFTER = re.compile(r"(?i)\b(?:in favou?r of|for|to|with|by)\b")
# What says that something remembered no longer holds, or never did: a change ("no longer", "we moved to",
# "rolling back"), a refutation ("was wrong", "a red herring", "had nothing to do with"), a thing found gone
# ("doesn't exist", "there is no"), in the languages people write to their agents.
NO_LONGER = re.compile(
    r"(?i)\b(?:no longer|not any ?more|any ?more|anymore|was(?:n'?t| not)|were(?:n'?t| not)|was never"
    r"|were never|never was|(?:is|was|were) wrong|(?:is|was) outdated|out of date|red herring|nothing to do with"
    r"|not the (?:cause|reason|problem)|roll(?:ing|ed)? back|bring(?:ing)? \S+(?: \S+)? back|(?:moved|migrated|switched"
    r"|upgraded|bumped|went|changed) (?:\S+ ){0,2}(?:from|to|off)|replaced|dropped|got rid of|does(?:n'?t| not) exist"
    r"|no such"
    r"|there(?:'s| is) no|is gone|are gone|now(?=\s*[.!]|\s*$))\b"
)
# The same in the other languages people write to their agents (German, Spanish, French, Russian, Chinese,
# Japanese): apart, because the English stance of such a sentence cannot be read (its names only can).
NO_LONGER_ABROAD = re.compile(
    r"(?i)nicht mehr|gibt es nicht|\bkein(?:e|en)?\b|ersetzt|umgestellt|umgestiegen|gewechselt|abgeschafft|stattdessen"
    r"|\bjetzt\b|\bya no\b|\bno era\b|reemplaz|cambiamos|migramos|dejamos de|abandonamos|\bahora\b|\bplus de\b"
    r"|n'est plus|ne \w+ plus|remplac|pass[ée]s? (?:à|a)\b|abandonn|d[ée]sormais|maintenant|больше не|уже не|отказались"
    r"|не был|замени|перешли|теперь|не используем|不再|不用|已经|升级到|换成|改用|弃用|废弃|现在用|不是"
    r"|やめ|もう|ではなく|じゃなく|移行|変更|変え|古い|今は|使わない|廃止"
    # Italian, Portuguese, Dutch, Polish, Korean; Russian "we brought back".
    r"|\bnon \w+ più\b|\badesso\b|sostitu|\bpassati a\b|\bnon era\b|\bnão \w+ mais\b|\bagora\b|trocamos|mudamos"
    r"|substitu"
    r"|deixamos de|\bnão era\b|niet meer|\bgeen\b.*\bmeer\b|overgestapt|vervangen|\bnu\b|helemaal niet|\bjuż\b"
    r"|przenie|zamiast|\bteraz\b|zastąpi|nie był|더 이상|이제|바꿨|вернули"
)
# Said by a person only (an agent narrates its own edits in these words): something was taken away or undone.
TAKEN_AWAY = re.compile(
    r"(?i)\b(?:removed|deleted|ditched|killed|retired|scrapped|deprecated|reverted|going back|back to|it'?s \S+ now"
    r"|we(?:'re| are) on|we use \S+ now|changed|different now|not true)\b"
)
# The speaker announcing what they do next ("Let me add a watcher", "Now let's fix the footer"): a plan.
_PLAN_OPENERS = r"let me|let's|i'll|i will|i'm going to|now i|now let's|next,? i"
PLAN = re.compile(rf"(?i)^(?:{_PLAN_OPENERS})\b")
# What the speaker means to do, not what is known: a plan, or a need of the same kind ("We need to add …", "To
# determine if …"), with the apostrophes typed or not.
INTENTION = re.compile(
    rf"(?i)^(?:{_PLAN_OPENERS}|i'?ll|i'?m going to|we'?ll|we will|i need to|we need to)\b"
    r"|^to (?:determine|investigate|understand|find out|check|see|verify|figure out|debug|analy[sz]e)\b"
)
# The state of the work as reported ("X is now 885 lines", "Added …"), not knowledge that lasts.
WORK_STATUS = re.compile(
    r"(?i)\b(?:is|are|was|were) now\b|\b\d+ (?:lines|files|tests)\b|\bstill (?:needs|compiling|running|failing)\b"
    r"|^(?:i'?ve |we'?ve )?(?:added|removed|fixed|updated|created|implemented|moved|reverted|renamed|refactored)\b"
)
# A statement that is not sure of itself: "Maybe …", "It might be …", "I think …", "Perhaps …".
HEDGE = re.compile(
    r"(?i)^(?:maybe|perhaps|possibly|probably|might|could|it seems|seems|i think|i guess|i wonder|not sure)\b"
    r"|\b(?:maybe|perhaps|possibly|might be|not sure|i guess|i wonder)\b"
)
# A line that makes a message a document (a heading, a list item, a tag), as pasted prompts and files have.
DOCUMENT_LINE = re.compile(r"(?m)^\s*(?:#{1,6} |[-*] |\d+\. |<\w+>)")
# A cause refuted: what said why something broke was wrong.
REFUTED = re.compile(
    r"(?i)\b(?:was wrong|were wrong|diagnosis|red herring|nothing to do with|not the (?:cause|reason|problem)|never the"
    r"|(?:wasn|isn)'?t (?:the|it|about)|(?:was|is) not (?:the|it)|no era la causa|war nicht|n'était pas|non era"
    r"|não era|helemaal niet|was niet|nie był)\b"
)
# An agent saying it leaves out what it was asked to do ("I'll skip clippy this time", "skipping gofmt").
SKIPPING = re.compile(
    r"(?i)\b(?:skip|skips|skipping|skipped|won'?t (?:run|bother|add|use)|without (?:running|adding|using)"
    r"|not (?:bother|run)ning|leave out|leaving out)\b"
)
# A person letting a rule go once, which neither changes nor breaks it ("skip it this time", "just for now").
EXEMPTION = re.compile(r"(?i)\b(?:this time|just this once|for now|this once|for this one|one-?off|today only)\b")
# One thing put in another's place, in the forms people write it: (chosen, replaced). Checked in this order.
# A code span is one name on the side a pattern reads lazily ("instead of `cargo test`" replaces `cargo test`,
# not `cargo`).
_SPAN = r"`[^`]+`(?=$|[\s,.;:!?)(])|"
REPLACEMENTS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern, re.I)
    for pattern in (
        r"(?P<chosen>[\w`@./+#-]+(?: [\w`@./+#-]+){0,3}) (?:instead of|rather than|in place of) "
        rf"(?P<replaced>{_SPAN}[\w`@./+#-]+(?: [\w`@./+#-]+){{0,3}}?)(?=$|[\s,.;:!?)(])",
        rf"\breplac(?:e|ed|es|ing) (?P<replaced>{_SPAN}[\w`@./+#-]+(?: [\w`@./+#-]+){{0,3}}?) (?:with|by) "
        rf"(?P<chosen>{_SPAN}[\w`@./+#-]+(?: [\w`@./+#-]+){{0,3}}?)(?=$|[\s,.;:!?)(])",
        # "moving the HTTP client in invoices from urllib3 to aiohttp": what moves may stand between (a few words);
        # not after "go" ("going through the logs from Monday to Friday" replaces nothing).
        r"\b(?:(?:switch|switched|switching|move|moved|moving|migrate|migrated|migrating|rename|renamed|renaming)"
        r"(?: (?!from\b)[\w`@./+#-]+){0,5}?|went|go|going) from "
        rf"(?P<replaced>{_SPAN}[\w`@./+#-]+(?: [\w`@./+#-]+){{0,3}}?) to "
        rf"(?P<chosen>{_SPAN}[\w`@./+#-]+(?: [\w`@./+#-]+){{0,3}}?)"
        r"(?=$|[\s,.;:!?)(])",
        # "Tailwind over styled-components"; not a preposition's "over" after a pronoun ("talk to each other over
        # gRPC", "send it over SSH").
        r"\b(?!(?:other|it|them|this|that|these|those|one|everything|anything)\b)"
        r"(?P<chosen>[\w`@./+#-]+) over (?P<replaced>[\w`@./+#-]+)\b",
    )
)
# The words of choosing and replacing, as `words.stem` leaves them ("moving" -> "mov"): not what a choice is about.
CHOICE_WORDS = frozenset(
    """mov move migrat migrate switch instead rather place replac replace went go going goe use run pick chose
    choose prefer take decid decide stick stay start""".split()  # noqa: SIM905
)
# What a person says of a lasting trait of their own (or of someone close): a preference, a constraint, a
# condition, a rule (see `recall.disclosures`). The grammar of lasting statements, not any topic.
_SUBJECT = r"(?:i|we|he|she|they|you|[A-Z][a-z]+)"
DISCLOSURE = re.compile(
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

# Who someone is, where, for whom: a person's name, an agent's persona, a place, an organisation, a role.
IDENTITY = re.compile(
    r"(?i)\b(?:my name is|my name's|call me|i go by|i'?m called|your name is|you are called|i live in|i'?m from"
    r"|i am from|i'?m based in|i work (?:at|for|as)|i'?m the \w+ (?:at|of|for)|our company|my company|we are a"
    r"|my (?:wife|husband|partner|son|daughter|boss|manager|colleague|friend|brother|sister|mother|father)\b)"
)


def kind_marked(text: str) -> str | None:
    """The kind of knowledge the lexicon marks in a sentence ("gotcha", "decision", "rule"), or None."""
    if CAUSE.search(text):
        return "gotcha"
    if DECISION.search(text):
        return "decision"
    if RULE.search(text):
        return "rule"
    return None


def lasting(text: str) -> bool:
    """Whether a text holds a marker of a lasting statement (a rule, a decision, a cause) or of trouble."""
    return bool(kind_marked(text) or TROUBLE.search(text))


# The verbs and articles before a choice ("local development uses Postgres"): the choice is what follows them.
_BEFORE_CHOICE = re.compile(
    r"(?i)^.*\b(?:use|uses|used|using|run|runs|go|goes|went|with|pick|picks|picked|choose|chooses|chose|prefer"
    r"|prefers|want|wants|take|takes|is|are|be|the|a|an|to)\s+"
)


def _bare(name: str) -> str:
    return name.strip("` ").rstrip(".,;:!?`")


def replacement(text: str) -> tuple[str, str] | None:
    """(chosen, replaced) when a text puts one thing in another's place ("Postgres instead of SQLite",
    "replace moment with date-fns", "switch from Jest to Vitest"); None when it does not."""
    for pattern in REPLACEMENTS:
        found = pattern.search(text)
        if found:
            chosen = _BEFORE_CHOICE.sub("", found["chosen"]) or found["chosen"]
            return _bare(chosen), _bare(found["replaced"])
    return None


# What a command's output says about how it went, by its shape: it failed, it passed, or this line reports trouble
# (the keep filter's confirmed finding, the prompt's error lines of a long output, friction's error line).
COMMAND_FAILED = re.compile(
    r"(?i)\b(?:\d+ failed|failed|error:|errors? occurred|traceback \(most recent call last\)|exit code [1-9]\d*"
    r"|exited with (?:code )?[1-9]|command failed|panicked at|segmentation fault|assertionerror)"
)
COMMAND_PASSED = re.compile(
    r"(?i)\b(?:\d+ passed(?!,? \d+ (?:failed|errors?))|all \d+ tests? passed|tests? passed|exit code 0\b"
    r"|build succeeded|compiled successfully|ok \(\d+ tests?\))"
)
# A line that looks like it reports something going wrong (looser than a failed command: a missing file, a
# refusal, an exception's name).
ERROR_LINE = re.compile(r"error|fail|cannot|can't|not found|no such|refused|denied|exception|invalid", re.I)

# A question, as people type one: a question mark (ASCII or full-width), or the Chinese sentence-final question
# particle 吗, which often ends a question typed without a mark ("你还有什么可以优化模版的吗"); a full stop may follow
# either, as a memory's cleaned text adds one. Not 呢: it also ends statements ("还没好呢", "not done yet").
QUESTION_END = re.compile(r"[?？吗][。.]?[\s\"'”’)）]*$")


def is_question(text: str) -> bool:
    """Whether `text` ends as a question does."""
    return QUESTION_END.search(text) is not None
