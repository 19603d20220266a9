"""A memory is one piece of knowledge, readable alone: pure code that makes and cleans such statements.

A future session reads a memory with nothing else at hand, so its text must name its subject and say what
holds ("Use pnpm, never npm."), never quote a person ("The user said: …"). The person's words stay with the
memory as its evidence. This module holds what a small local model does badly and plain code does well:

- `clean_statement`: the statement without chat envelopes, media markers, fillers, swearing, "The user
  said" wrappers and surrounding quotes; imperative where the person spoke of "we" or "you"; capitalised and
  ended. It never cuts: the whole statement, or nothing.
- `pieces_of`: a person's message split into the pieces of knowledge it states (a rule and a decision in one
  message are two memories), each with its kind and the exact words it came from; questions, requests and
  acknowledgements give nothing.
- `findings_of`: what the assistant found (a root cause, a value chosen, a setting that matters), from its
  own sentences, for turns whose knowledge is in the answer rather than the question.

The categories of tools a statement or a task names (`topics_of`, `task_topics`) and the files it names
(`files_of`) are in `memory_pipeline.language.topics`; the kind of a person's sentence (`kind_of`) is in
`memory_pipeline.language.kinds`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory_pipeline.language.kinds import Kind, kind_of
from memory_pipeline.language.lexicon import FINDING, MODAL_FIRST, PLAN, is_question
from memory_pipeline.language.words import CAUSE_FRAME, VALUES_FRAME
from memory_pipeline.sentences import sentences, unwrapped_lines
from memory_pipeline.sessions.envelope import strip_envelope

# Media and attachment markers a chat bridge leaves in a message's text.
_MEDIA = re.compile(
    r"\[(?:user sent (?:a|an) [a-z ]+|image|photo|video|audio|voice(?: message)?|sticker|file|document|attachment"
    r"|media attached[^\]\n]*|image #?\d+[^\]\n]*)\]",
    re.I,
)
_SAID = re.compile(
    r"^(?:the )?user(?:'s)?\s*(?:rule|preference|decision)?\s*(?:said|says|stated|states|wrote|writes|noted"
    r"|mentioned|explained|insists?|requires?|required|wants?|wanted|prefers?|preferred|asked|asks|told \w+)"
    r"(?:\s+(?:that|to))?\s*[:,]?\s*",
    re.I,
)
# Openers that carry no knowledge: interjections, hedges, address.
_FILLER = re.compile(
    r"^(?:(?:ok(?:ay)?|o+k|hm+|hmm+|uh+|um+|so|well|yeah|yes|yep|yup|right|alright|oh|ah|wait|also|and|but|btw"
    r"|omfg|omg|wtf|lol|ugh|dude|my dude|man|bro|hey|please|pls|plz|now|then|great|nice|cool|perfect"
    r"|from now on|going forward|in future|in the future|understood|got it|noted|agreed|done|found it"
    r"|(?:you'?re|you are) (?:absolutely |totally |completely |quite )?right|good (?:catch|point|call)|exactly"
    r"|no(?=[,!.]))[\s,.!:;\u2013\u2014-]+)+",
    re.I,
)
_HEDGE = re.compile(
    r"^(?:i think|i guess|i believe|i'd say|i feel like|imo|imho|honestly|actually|basically)\b[\s,]*", re.I
)
_LABEL = re.compile(
    r"^(?:a |the )?(?:rule|note|reminder|fyi|important|decision|heads up)(?: for [\w ]{1,30})?\s*:\s*", re.I
)
_SWEAR = re.compile(
    r"\b(?:fu+c?k\w*(?:[ -]up\b)?|shit\w*|damn\w*|goddamn\w*|crap(?:py)?|bloody|effing|frigging)\b\s*", re.I
)
_WE = re.compile(
    r"^(?:we|you|u|the user|users?|the agent|the assistant)\s+(?:should|must|needs? to|has to|have to|gotta"
    r"|ought to|will|'ll)\s+(?=\w)"
    r"|^(?:we|you)'(?:ll)\s+|^(?:let's|lets|let us|let me|i'll|i will)\s+|^make sure (?:that )?(?:to|you|we)\b\s*"
    r"|^(?:remember to|don't forget to|be sure to)\s+",
    re.I,
)
_WE_KEEP = re.compile(r"^(?:we|you|u)\s+(always|never)\s+", re.I)
_DECIDED = re.compile(
    r"^(?P<scope>(?:for|in|on) [\w .-]{1,40}?),?\s+(?:let's|lets|we'll|we will|we)\s+(?:go with|use)\s+"
    r"|^(?:we|i)\s+(?:have\s+)?(?:decided|agreed|chose|picked|went)\s+(?:to\s+(?:go\s+with|use)|on|with|for)\s+"
    r"|^(?:we(?:'re| are)?|i(?:'m| am)?)\s+(?:going|go|will go|gonna go)\s+with\s+"
    r"|^(?:we|i)\s+(?:use|will use|'ll use)\s+",
    re.I,
)


# A clause that only vents ("so the user sees shit is about to get fucked") goes whole: without its swear words
# it no longer makes sense. The clause starts at its connective; what comes before it must be left to say.
_VENTING = re.compile(r"(?:,\s*|\s+)(?:so|because|cause|cuz|otherwise|or else|and then|since)\s+[^.!?;]*$", re.I)


def _without_swearing(text: str) -> str:
    kept = []
    for sentence in sentences(text) or [text]:
        found = _SWEAR.search(sentence)
        clause = _VENTING.search(sentence[: found.start()]) if found else None
        if found and clause and clause.start() >= 12:
            end = sentence[found.end() :]
            tail = re.search(r"[.!?;]", end)  # the vented clause ends where its sentence does
            sentence = sentence[: clause.start()] + (end[tail.start() :] if tail else "")
        kept.append(_SWEAR.sub("", sentence))
    return " ".join(kept)


# A quote character only when it is not an apostrophe inside a word ("let's", "it's").
_QUOTE_CHAR = re.compile(r"[\"“”«»`]|(?<!\w)'|'(?!\w)")


def _paired_inside(inner: str, opening: str, closing: str) -> bool:
    """Whether the quotes inside a quoted text ('warning' and 'error') open and close in turn, so the outer
    ones are a pair; in `"a" and "b"` the first one inside closes, so the outer ones are not."""
    expect_open = True
    for found in _QUOTE_CHAR.finditer(inner):
        if found[0] not in (opening, closing):
            continue
        at = found.start()
        opens = at == 0 or inner[at - 1].isspace() or inner[at - 1] in "([{"
        if opens != expect_open:
            return False
        expect_open = not expect_open
    return expect_open


def _strip_quotes(text: str) -> str:
    stripped = text.strip()
    if len(stripped) > 2 and stripped[-1] in ".!" and stripped[-2] in "\"'”»`" and stripped[0] in "\"'“«`":
        stripped = stripped[:-1]  # 'a quoted remark'. : the stop outside the quote
    pairs = {'"': '"', "“": "”", "'": "'", "`": "`", "«": "»"}
    while len(stripped) >= 2 and stripped[0] in pairs and stripped.endswith(pairs[stripped[0]]):
        inner = stripped[1:-1].strip()
        if not _paired_inside(inner, stripped[0], pairs[stripped[0]]):
            break
        stripped = inner
    return stripped


def unwrapped(evidence: str) -> str:
    """A model's evidence without the wrapper it put around the transcript's words ("The user said 'Let me …'"):
    only the words, as the transcript has them."""
    text = evidence.strip()
    for _ in range(3):
        before = text
        text = _strip_quotes(_SAID.sub("", text).strip())
        if text == before:
            break
    return text or evidence.strip()


def _capitalise(text: str) -> str:
    first = text.split(" ", 1)[0]
    # An identifier (`dimGray`, `setTheme`, `npm`) keeps its case; a plain word is capitalised.
    # "make sure …" is the verb, not the `make` tool.
    # A contraction ("we're") is a plain word too.
    plain = first.replace("'", "").replace("’", "").isalpha() and first.islower()
    if plain and (first not in _LOWER_NAMES or text.startswith("make sure ")):
        return text[:1].upper() + text[1:]
    return text


_LOWER_NAMES = frozenset(
    re.findall(
        r"\S+",
        """npm pnpm yarn bun npx uv pip pipx poetry cargo go git gh make cmake node deno pytest vitest jest mocha
        ruff mypy eslint prettier biome tsc vite webpack docker kubectl helm terraform psql redis mysql sqlite curl
        wget ls cat sed grep awk rg fd jq tmux vim nvim""",
    )
)


# The speaker's opinion or doubt ("I don't think the invalidate works"): what they suspect, not yet known.
_OPINION = re.compile(
    r"(?i)^(?:i|we)(?: (?:really|just|still))? (?:(?:don'?t|do not|didn'?t) )?(?:think|tink|thinks|guess|suppose|"
    r"believe|feel|wonder|suspect|doubt|understand)\b"
)
# An order for the moment ("Read the README", "Copy the dark theme over"): the turn's request, done by its end.
_ONE_OFF = re.compile(
    r"(?i)^(?:please )?(?:read|copy|create|delete|remove|open|run|write|show|list|fix|add|try|undo|check|look"
    r"|investigate|sleep|continue|port|update|change|adjust|modify|move|rename|install|implement|build|commit"
    r"|push|release|revert|explain|summari[sz]e|tell|find|search|go|do|let me|give|print|debug|test)\b"
)


def is_opinion(statement: str) -> bool:
    """A statement of what the speaker thinks or doubts ("I don't think the invalidate works")."""
    return bool(_OPINION.match(statement.strip()))


def is_request(statement: str) -> bool:
    """A statement that is an order for the moment ("Read the README.md file"), not a standing rule: it opens
    on an action and carries no sign of lasting (always, never, must, a choice, a cause)."""
    return bool(_ONE_OFF.match(statement.strip())) and kind_of(statement) is None


# Openers before a plan that are no filler elsewhere ("First, let me…"; "Good names matter" keeps its "Good").
_PLAN_OPENER = re.compile(r"(?i)^(?:(?:first|next|good|done)[,!.:]\s*)+")


def announces_plan(sentence: str) -> bool:
    """A sentence in which the speaker announces what they will do next ("Let me add a watcher"), after
    whatever opens it ("Perfect! Now let's fix the footer")."""
    opened = sentence
    for _ in range(3):  # openers of both kinds alternate: "Done! First, let me…"
        opened = _PLAN_OPENER.sub("", _FILLER.sub("", opened))
    return bool(PLAN.match(sentence) or PLAN.match(opened))


def _knowledge_sentences(text: str) -> str:
    """`text` without its questions and announced plans, unless nothing else is left to say."""
    parts = sentences(text)
    kept = [p for p in parts if not is_question(p) and not PLAN.match(p)]
    return " ".join(kept) if kept else ""


def clean_statement(text: str) -> str:
    """A statement fit to be read alone (see the module's doc); "" when nothing is left. Never cuts."""
    text = _MEDIA.sub(" ", strip_envelope(text))
    text = " ".join(text.split())
    first = sentences(text)[:1]
    if first and PLAN.match(first[0]) and len(sentences(text)) == 1:
        text = _WE.sub("", text)  # "Let me add a watcher" said alone: the action, as an order
    text = _knowledge_sentences(text)
    for _ in range(4):  # wrappers nest: 'The user said: "ok, so we should …"'
        before = text
        text = _SAID.sub("", text)
        text = _strip_quotes(text).rstrip(".").strip() if text != before else _strip_quotes(text)
        text = _FILLER.sub("", text)
        text = _HEDGE.sub("", text)
        text = _LABEL.sub("", text)
        if text == before:
            break
    text = _without_swearing(text)
    keep = _WE_KEEP.match(text)
    text = f"{keep[1]} {text[keep.end() :]}" if keep else _WE.sub("", text)
    decided = _DECIDED.match(text)
    if decided:
        # The scope is part of the decision: "for logging in volumes let's use logrus" is not "Use logrus".
        scope = decided["scope"]
        text = (f"{scope}, use " if scope else "Use ") + text[decided.end() :]
    # A statement that ended where a markdown block began ("… color scheme: **"): the remnant reads as noise.
    text = re.sub(r"(?:^|[\s:])(?:\*+|_+|~~)[\s.]*$", "", text)
    text = re.sub(r"\s+([,.;:!?])", r"\1", " ".join(text.split())).strip(" ,;:-")
    text = re.sub(r"!+$", ".", text)
    if not re.search(r"[A-Za-z0-9\u00c0-\uffff]", text):
        return ""
    text = _capitalise(text)
    return text if text[-1] in ".!?)。！？）" or text.endswith("`") else text + "."


# --- a person's message, split into the pieces of knowledge it states ---

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=\S)|(?<=[。！？])\s*(?=[^\s\"'”’)）」』】》。！？])|\n+")
# Two statements in one sentence: "always use pnpm, never npm; and we go with Vitest over Jest".
_CLAUSE = re.compile(r"\s*;\s*|,?\s+and also\s+|,\s+and\s+(?=(?:we|you|i|let's|always|never|use)\b)", re.I)
_QUESTION_START = re.compile(
    r"(?i)^(?:what|why|how|where|when|which|who|can|could|would|will|is|are|do|does|did|should we|shall)\b"
)
_SLASH = re.compile(r"^/[a-z][\w-]*")


def said_sentences(text: str) -> list[str]:
    """A person's text in its sentences, a new one at every stop or line, capitalised or not ("…shit. how can we…")."""
    return [part.strip() for part in _SENTENCE.split(unwrapped_lines(text)) if part and part.strip()]


@dataclass(frozen=True)
class Piece:
    kind: Kind
    statement: str
    evidence: str  # the exact words it came from
    role: str  # who said them: user | assistant


def is_quote(statement: str, evidence: str) -> bool:
    """A statement that only repeats the words it rests on (bar case, fillers and end marks): a quote."""

    def norm(text: str) -> str:
        return " ".join(re.findall(r"[\w#%./-]+", clean_statement(text).lower()))

    return bool(evidence) and norm(statement) == norm(evidence)


# A restatement about the prompt's own words ("The context is about …", "This remark says …"): the small model
# describing its input instead of stating the knowledge.
_ABOUT_ITSELF = re.compile(r"(?i)^(?:the|this|that) (?:context|remark|note|statement|message|text|input)\b")


def about_itself(statement: str) -> bool:
    return bool(_ABOUT_ITSELF.match(statement.strip()))


def _clauses(sentence: str) -> list[str]:
    parts = [p.strip() for p in _CLAUSE.split(sentence) if p and p.strip()]
    # Split only where every part states something; else the sentence is one piece.
    return parts if len(parts) > 1 and all(kind_of(p) for p in parts) else [sentence.strip()]


# A "sentence" longer than this is a run-on holding several requests ("Dont need to show orice just marketcap and
# shouod be to the right … what do u think", 65 words): no one piece of knowledge to state. The longest rule of
# the labelled set is 30 words.
MAX_PIECE_WORDS = 40


def _meaningful(text: str) -> bool:
    return len(re.findall(r"[A-Za-z\u00c0-\uffff]{3,}", text)) >= 2 and len(text.split()) <= MAX_PIECE_WORDS


# A decision that names its choice only by pointing back at the sentence before it ("Let's move the tests to
# Vitest. We decided this because Jest broke on ESM."): what follows the pointer is the reason.
_POINTS_BACK = re.compile(
    r"^(?:(?:we|i)\s+(?:have\s+)?(?:decided|agreed(?:\s+on)?|chose|picked|went\s+with)\s+(?:this|that|it)"
    r"|(?:that|this)(?:'s|\s+is|\s+was)\s+(?:what\s+we\s+decided|our\s+decision|the\s+decision))\b[\s,]*",
    re.I,
)


def _with_what_it_points_to(sentence: str, before: str, earlier: list[Piece]) -> Piece | None:
    """The piece of a decision pointing back (`_POINTS_BACK`) at `before`: that sentence's choice with this one's
    reason, both sentences its evidence, the kind of `before`'s own piece if it had one (a rule stays a rule)."""
    pointer = _POINTS_BACK.match(sentence)
    choice = clean_statement(before).rstrip(".!") if pointer and before and not is_question(before) else ""
    if not choice or not _meaningful(choice):
        return None
    reason = sentence[pointer.end() :].strip() if pointer else ""
    own = next((p for p in earlier if p.evidence in before), None)
    statement = clean_statement(f"{choice}, {reason}" if reason else choice)
    return Piece(own.kind if own else Kind.DECISION, statement, f"{before} {sentence}", "user")


def pieces_of(user_text: str) -> list[Piece]:
    """The rules, decisions and gotchas a person's message states, one piece each, in order."""
    said = unwrapped_lines(_MEDIA.sub(" ", strip_envelope(user_text)).strip())
    if not said or _SLASH.match(said):
        return []
    pieces: list[Piece] = []
    before = ""
    for sentence in _SENTENCE.split(said):
        sentence = sentence.strip()
        if not sentence:
            continue
        pointing = _with_what_it_points_to(sentence, before, pieces)
        before = sentence
        if pointing:
            # The sentence pointed to, stated alone, is the same knowledge without its reason.
            pieces = [p for p in pieces if p.evidence not in pointing.evidence]
            pieces.append(pointing)
            continue
        question = is_question(sentence) and bool(_QUESTION_START.match(_FILLER.sub("", sentence)))
        for clause in _clauses(sentence):
            kind = kind_of(clause)
            if kind is None or (question and kind is not Kind.GOTCHA):
                continue
            statement = clean_statement(clause)
            if kind is Kind.GOTCHA:
                statement = stated_cause(statement) or statement
            if statement and _meaningful(statement):
                pieces.append(Piece(kind, statement, clause, "user"))
    return pieces


# --- the assistant's findings ---


def findings_of(assistant_text: str) -> list[Piece]:
    """Sentences of the assistant's that state a cause it found (not a plan, not a question)."""
    found = []
    for sentence in _SENTENCE.split(unwrapped_lines(strip_envelope(assistant_text))):
        sentence = " ".join(sentence.split()).lstrip("-*# ").strip()
        if not FINDING.search(sentence) or is_question(sentence) or len(sentence) > 400:
            continue
        statement = clean_statement(sentence)
        if statement and _meaningful(statement):
            found.append(Piece(Kind.GOTCHA, statement, sentence, "assistant"))
    return found


# --- a rule in the imperative ---

# "The theme selector needs to push the update …", "link text should be same as accent", "invalid themes must
# NEVER explode": a subject of a few words, a modal, what it must do. Subordinate clauses stay out of the subject.
_NORMATIVE = re.compile(
    r"^(?P<subject>(?!(?:i|we|you|u|it|this|that|there|they|he|she|dont|don't|do|no|not|never|please|just)\b)"
    r"[\w`'./#-]+(?: (?!(?:that|which|who|if|when"
    r"|because|and|or|but)\b)[\w`'./#-]+){0,5}?)\s+(?:should|must|needs to|need to|has to|have to|is to|are to)"
    r"\s+(?P<adverb>never |not |always |only )?(?P<rest>[a-z].*)$",
    re.I,
)


_POINTING = frozenset(["that", "this", "it", "those", "these", "so", "there"])
# "you can undo that, it was actually the console.logs in theme.ts that did that": a cause named by pointing back.
_CAUSE = re.compile(
    r"^(?:.*?[,;:]\s*)?it was (?:actually |really |in fact |just )?(?P<cause>.+?) (?:that|which) "
    r"(?:did|caused|broke|made) (?:that|it|this|them)\b.*$",
    re.I,
)


def stated_cause(statement: str) -> str:
    """A cause a person names by pointing back ("…, it was actually X that did that") said as one: "The cause was
    X."; "" when the statement is not of that form."""
    found = _CAUSE.match(statement.strip().rstrip(".!"))
    return f"{CAUSE_FRAME} {found['cause'].strip()}." if found else ""


_OPENS_ON = re.compile(
    r"^(?P<subject>the [\w`'.-]+(?: [\w`'.-]+){0,2}?) (?:is|are|was|were|uses|has|does|doesn't|isn't|renders|shows)\b",
    re.I,
)


def with_subject(statement: str, reply: str) -> str:
    """A rule said without its subject ("should be dimmer, don't modify the theme": the person answering about what
    the turn is about) with the subject the assistant's reply opens on ("The footer is using …"): "The footer
    should be dimmer, …"; "" when the statement has its subject or the reply opens on none."""
    if not MODAL_FIRST.match(statement.strip()):
        return ""
    first = next((s for line in reply.splitlines() for s in sentences(line.strip())), "")
    found = _OPENS_ON.match(first)
    if not found:
        return ""
    subject = found["subject"]
    return f"{subject[:1].upper()}{subject[1:]} {statement.strip()[:1].lower()}{statement.strip()[1:]}"


def imperative(statement: str) -> str:
    """A person's rule said as what something should do ("the theme selector needs to push the update to the next
    tick") in the imperative a rule is read in ("Make the theme selector push the update to the next tick."),
    "" when it is not of that form. The words are the person's; only the mood changes."""
    found = _NORMATIVE.match(statement.strip().rstrip(".!"))
    if not found:
        return ""
    subject, adverb, rest = found["subject"], (found["adverb"] or "").strip().lower(), found["rest"]
    subject = subject[:1].lower() + subject[1:] if subject[:1].isupper() and subject[1:2].islower() else subject
    if adverb in ("never", "not"):
        return _capitalise(f"never let {subject} {rest}") + "."
    verb = rest[3:] if rest.lower().startswith("be ") else rest
    if verb.split(" ", 1)[0].lower().strip(",.;:") in _POINTING:
        return ""  # "dimGray should be that": what it points at is in the conversation, not in the words
    if adverb == "always":
        return f"Always make {subject} {verb}."
    return f"Make {subject} {'only ' if adverb == 'only' else ''}{verb}."


# --- what the turn's own words give: typos mended, values a person set ---

_WORD_OF_FIVE = re.compile(r"(?<![\w`/.-])[A-Za-z]{5,}(?![\w`/-])")


def mend_typos(text: str, vocabulary: str) -> str:
    """`text` with each word that `vocabulary` (the rest of the turn) never uses, but uses with two neighbouring
    letters swapped, written as the turn writes it: "no conosle logs" -> "no console logs", "the context suage"
    -> "the context usage". Only swaps, only words of five letters or more, only when exactly one such word is
    in the turn: a slip of the fingers the turn itself corrects, never a guess from a dictionary."""
    known = {w.lower() for w in re.findall(r"[A-Za-z]{5,}", vocabulary)}
    if not known:
        return text

    def mended(found: re.Match[str]) -> str:
        word = found[0]
        low = word.lower()
        if low in known:
            return word
        swaps = {low[:i] + low[i + 1] + low[i] + low[i + 2 :] for i in range(len(low) - 1)} & known
        if len(swaps) != 1:
            return word
        fixed = swaps.pop()
        return fixed[:1].upper() + fixed[1:] if word[:1].isupper() else fixed

    return _WORD_OF_FIVE.sub(mended, text)


# One line of a person's message that sets one value: "green diff is #b5bd68", "accent: #8abeb7", "timeout 30s".
_SETTING = re.compile(
    r"^\s*(?:[-*]\s+)?(?P<name>[A-Za-z][\w .-]{0,40}?)\s*(?:\bis\b|=|:|->)?\s*"
    r"(?P<value>#?[0-9a-fA-F]{6}|#[0-9a-fA-F]{3}|\d+(?:\.\d+)?(?:px|ms|s|m|h|%|em|rem|mb|gb|kb)?)\s*[.,;]?\s*$",
    re.I,
)
# A value list is a message of such lines (at least this many, and nearly every line one).
SETTINGS_AT = 3
# A tool call that writes a file, as a turn's text shows it: "(used the edit tool: {"path": "src/x.ts", …".
_EDIT_CALL = re.compile(
    r"\(used the (?:\w*(?:edit|write|patch|replace)\w*) tool: \{[^\n]*?"
    r"[\"'](?:path|file_path|filePath)[\"']: [\"'](?P<path>[^\"']+)[\"']",
    re.I,
)


def edited_files(text: str) -> list[str]:
    """The files a turn's tool calls edited or wrote, in order (from `prompt.turn_text`'s rendering of calls)."""
    found: list[str] = []
    for match in _EDIT_CALL.finditer(text):
        if match["path"] not in found:
            found.append(match["path"])
    return found


def values_of(user_text: str, files: list[str]) -> Piece | None:
    """The values a person's message sets, when it is a list of them ("green diff is #b5bd68 / accent #8abeb7 /
    error cc6666"), as one decision that names where they went (`files`, the files the turn edited): a small
    model reads such a list as a request and keeps nothing, yet next week's session needs exactly these values."""
    lines = [line for line in strip_envelope(user_text).splitlines() if line.strip()]
    found = [m for m in (_SETTING.match(line) for line in lines) if m]
    if len(found) < SETTINGS_AT or len(found) < len(lines) - 1:
        return None
    pairs = ", ".join(f"{' '.join(m['name'].split())} {m['value']}" for m in found)
    where = f" in `{files[0].rsplit('/', 1)[-1]}`" if len(files) == 1 else ""
    return Piece(Kind.DECISION, f"{VALUES_FRAME}{where}: {pairs}.", " ".join(" ".join(lines).split()), "user")
