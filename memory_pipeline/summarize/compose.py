"""From drafts and pieces to memories: deterministic composition of what is stored for a turn.

Three sources, in this order of trust for the wording:
1. the LLM's drafts (`Drafted`: kind, subject, statement, evidence), each kept only when its evidence and its
   statement are found in the turn;
2. the pieces of knowledge the person's own message states (`knowledge.pieces_of`), for what the model
   missed: a rule and a decision in one message are two memories, whatever the model did;
3. the causes the assistant found (`knowledge.findings_of`), for turns whose knowledge is in the answer,
   and the values a person's message sets as a list (`knowledge.values_of`).

Every statement goes through `clean_statement` (never a quote, never an envelope, never cut), gets its
priority from its kind, and its tags from its kind, the categories of the tools it names, its subject and
its files, so search and review can find it by any of them. A statement that only repeats the person's words
is reworded from the turn itself where it can be (`reworded`): typos the rest of the turn spells right are
mended, and the assistant's own restatement of the remark ("You're right - invalid themes should never crash
the app") becomes the memory's text, the person's words its evidence; a rule said as what something should do is
put in the imperative ("Make the theme selector push the update to the next tick").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import ValidationError

from memory_pipeline.language.kinds import KIND_PRIORITY, Kind, kind_of
from memory_pipeline.language.lexicon import DISCLOSURE, IDENTITY, MODAL_FIRST, NEGATION, RULE, is_question
from memory_pipeline.language.topics import files_of, topics_of
from memory_pipeline.language.words import STOP_WORDS, THIRD_PERSON, content_words, words
from memory_pipeline.sentences import sentences, unwrapped_lines
from memory_pipeline.sessions.envelope import strip_envelope
from memory_pipeline.summarize.ideas import Drafted, Idea
from memory_pipeline.summarize.knowledge import (
    Piece,
    announces_plan,
    clean_statement,
    edited_files,
    findings_of,
    imperative,
    is_opinion,
    is_quote,
    is_request,
    mend_typos,
    pieces_of,
    said_sentences,
    stated_cause,
    unwrapped,
    values_of,
    with_subject,
)
from memory_pipeline.summarize.trust import (
    GROUNDED_AT,
    TurnText,
    claims_user,
    grounding,
    support,
)


def _slug(text: str) -> str:
    return re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9]+", "-", text.lower())).strip("-")[:40]


def tags_for(kind: Kind, subject: str, statement: str, files: Sequence[str]) -> list[str]:
    """3 to 8 tags: the kind first (review's sections read it), categories, subject, files, then the
    statement's longest words."""
    tags: list[str] = [kind.value, *topics_of(f"{subject} {statement}")]
    if subject:
        tags.append(_slug(subject))
    tags += [_slug(f.rsplit("/", 1)[-1]) for f in files]
    ordinary = [w for w in words(statement) if w.isascii() and len(w) > 3 and w not in STOP_WORDS and not RULE.match(w)]
    tags += sorted(dict.fromkeys(_slug(w) for w in ordinary), key=lambda w: -len(w))
    unique = [t for t in dict.fromkeys(tags) if 2 <= len(t) <= 40]
    while len(unique) < 3:
        unique.append(("memory", "knowledge", "note")[len(unique) % 3])
        unique = list(dict.fromkeys(unique))
    return unique[:8]


# Words that name no particular thing: a statement made of them alone ("Remove the dependency.", "Run the
# tests.") cannot be acted on next week; which dependency, which tests, is what it would have had to say.
_VAGUE = frozenset(
    content_words(
        "use remove add run fix change update keep make delete replace install move rename check try do get set put "
        "see dependency dependencies file files thing things test tests code function issue problem bug error "
        "project repo package module library version value command step part one way stuff approach option "
        "setting config it this that now again instead first later here there"
    )
)


_ENGLISH_PAIRS = frozenset(
    ["it", "is", "to", "do", "an", "in", "on", "of", "at", "by", "be", "we", "us", "me", "my", "no", "so", "or"]
    + ["up", "if", "as", "he", "am"]
)


def stands_alone(statement: str) -> bool:
    """Whether `statement` names something particular (a tool, a file, a value, a subject of its own)."""
    if content_words(statement) - _VAGUE:
        return True
    # A two-letter name is a tool often enough (`uv`, `go`, `jq`): content words leave them out.
    return any(len(w) == 2 and w.isalpha() and w not in _ENGLISH_PAIRS for w in words(statement.lower()))


# A subject that only points back ("This is a big change.", "It works now."): next week there is no "this".
_POINTING = re.compile(
    r"(?i)^(?:this|that|it|these|those|they)(?:'s| is| was| are| were| will| would)\b"
    r"(?! (?:\w+ ){1,2}(?:to|that|when|if|whether)\b)"  # "It is required to run …" points at what follows
)
_PARTICULAR = re.compile(r"`|\w[./_]\w|\d|\b[a-z]+[A-Z]\w*|(?<!^)(?<![.!?] )\b[A-Z][a-z]")
REPEATED_RUN = 4


def _repeats_itself(text: str) -> bool:
    """A statement that says one run of words twice ("The tool execution that doesn't change is the bg color of
    the tool execution that doesn't change"): the small model's tautology, never knowledge."""
    said_once = [" ".join(words(part.lower())) for part in sentences(text)]
    if len(set(said_once)) < len(said_once):
        return True  # "Files: index.ts, util.ts. Files: index.ts, util.ts."
    said = words(text.lower())
    runs = [tuple(said[i : i + REPEATED_RUN]) for i in range(len(said) - REPEATED_RUN + 1)]
    repeated = {run for run in runs if runs.count(run) > 1}
    return any(len(content_words(" ".join(run))) >= 2 for run in repeated)


def readable_alone(statement: str) -> bool:
    """Whether a next-week reader can act on `statement` with nothing else at hand: it names something
    particular (`stands_alone`), says what is known rather than what the speaker thinks, points at no "this"
    it does not name, and does not repeat itself."""
    if not stands_alone(statement) or is_opinion(statement) or _repeats_itself(statement):
        return False
    return not (_POINTING.match(statement) and not files_of(statement) and not _PARTICULAR.search(statement))


def make_idea(kind: Kind, statement: str, evidence: str, role: str, subject: str = "") -> Idea | None:
    """The stored memory for one piece of knowledge, or None when its statement cannot be read alone."""
    text = clean_statement(statement)
    if not text or not readable_alone(text):
        return None
    files = files_of(text)
    subject = " ".join(subject.split())[:80] or (topics_of(text)[:1] or [""])[0].replace("-", " ")
    try:
        return Idea(
            summary=text,
            tags=tags_for(kind, subject, text, files),
            priority=KIND_PRIORITY[kind],
            kind=kind,
            subject=subject,
            files=files,
            evidence=" ".join(evidence.split()),
            evidence_role=role,
        )
    except ValidationError:
        return None


def _folded(text: str) -> str:
    return " ".join(text.lower().split())


def role_of(evidence: str, turn: TurnText) -> str:
    """Who said the evidence: the one whose words hold it as written, else the user, the assistant, or neither
    (tool output, file content) by the share of its words each holds."""
    folded = _folded(evidence)
    if folded and folded in _folded(turn.user):
        return "user"
    if folded and folded in _folded(turn.assistant):
        return "assistant"
    if support(evidence, turn.user) >= GROUNDED_AT:
        return "user"
    if support(evidence, turn.assistant) >= GROUNDED_AT:
        return "assistant"
    return "other"


def sentence_of(evidence: str, said: str) -> str:
    """The sentence of `said` (one side of the turn) that holds `evidence` as written (case and spacing aside),
    else the one that holds most of its words (at least `GROUNDED_AT`); "" when none does."""
    folded = _folded(evidence)
    best, best_share = "", 0.0
    for sentence in said_sentences(said):
        if folded and folded in _folded(sentence):
            return sentence
        share = support(evidence, sentence)
        if share > best_share:
            best, best_share = sentence, share
    return best if best_share >= GROUNDED_AT else ""


def exact_words(evidence: str, said: str) -> str:
    """`evidence` as `said` (one side of the turn) has it: itself when it stands there as written (case and
    spacing aside), else the sentence of `said` that holds most of its words, else itself. A small model often
    writes its "evidence" in its own words ("The user manually removed …" for "i manually removed …"): a memory's
    evidence is the speaker's exact words, never the model's."""
    if _folded(evidence) in _folded(said):
        return evidence
    return sentence_of(evidence, said) or evidence


def orders_for_the_moment(kind: Kind, statement: str, evidence: str, role: str) -> bool:
    """A person's order for the moment as a decision ("Read the README.md file", "Copy the dark theme over"):
    it opens on an action, and neither it nor the person's words hold a choice, rule or cause that lasts."""
    return kind is Kind.DECISION and role == "user" and kind_of(evidence) is None and is_request(statement)


def without_orders(ideas: Sequence[Idea]) -> tuple[list[Idea], list[Idea]]:
    """(kept, dropped): the last word on a turn's memories, after every rewording (the model's restating pass
    can turn "The user copied the dark theme" back into the order "Copy the dark theme over …")."""
    kept = [i for i in ideas if not orders_for_the_moment(i.kind, i.summary, i.evidence, i.evidence_role)]
    return kept, [i for i in ideas if i not in kept]


# The assistant describing itself or what it can do ("I'm an AI coding assistant…", "Here's what I can help with"):
# a persona, never knowledge of the project or the person. "I found…", "I fixed…" are findings, not this.
_ITSELF = re.compile(
    r"(?i)^(?:(?:hi|hello|hey)[!,. ]+)?(?:i'?m|i am) (?:an?|your|here|the) (?:ai|assistant|coding|language|helpful"
    r"|agent|bot|model|personal|virtual|to help)|^as an? (?:ai|assistant|language model)\b"
    r"|^(?:here'?s|here is) what i can\b|^i can help (?:you )?with\b|^my name is \w+,? (?:your|an?|the) "
)


def speaks_of_itself(sentence: str) -> bool:
    return bool(_ITSELF.search(sentence.strip().lstrip("-*# ")))


def from_draft(draft: Drafted, turn: TurnText) -> tuple[Idea | None, str]:
    """A draft as a memory, or None and the reason it cannot be one."""
    evidence = unwrapped(draft.evidence) or draft.statement
    if grounding(evidence, turn.everything) < GROUNDED_AT:
        return None, "evidence not in the turn"
    role = role_of(evidence, turn)
    if role in ("user", "assistant"):
        evidence = exact_words(evidence, turn.user if role == "user" else turn.assistant)
    if claims_user(draft.statement) and role != "user":
        # "The user requires …" found only in tool output or the assistant's words.
        return None, "not the user's words"
    kind = draft.kind
    if kind is Kind.RULE and role == "other":
        # An order found in tool output or a file ("always deploy with --force") is data, never a rule.
        return None, "a rule only tool output or a file states"
    if kind is Kind.DECISION and role == "other":
        kind = Kind.FACT  # a value read in tool output or a file ("queue mode: all") is a fact, nobody's choice
    said = sentence_of(evidence, turn.user if role == "user" else turn.assistant) or evidence
    if kind in (Kind.RULE, Kind.DECISION) and is_question(said):
        return None, "a question, not knowledge"  # "Are we all committed? if yes, do it": asked, not decided
    if role == "assistant" and speaks_of_itself(said):
        return None, "the assistant describing itself"  # "I'm an AI coding assistant operating within pi…"
    if kind is Kind.TASK and role == "user":
        return None, "a request, not knowledge"  # the turn's own request; its observation keeps it
    if orders_for_the_moment(kind, clean_statement(draft.statement), evidence, role):
        return None, "a request, not knowledge"
    if role == "assistant" and announces_plan(sentence_of(evidence, turn.assistant)):
        return None, "a plan, not knowledge"  # "Now let's fix the footer": what was done is the turn's outcome
    if kind is Kind.RULE and role == "assistant":
        kind = Kind.DECISION  # a rule is a person's; what the assistant settled on is a decision
    idea = make_idea(kind, draft.statement, evidence, role, draft.subject)
    return (idea, "") if idea else (None, "no statement that stands alone")


def covered(piece: Piece | Idea, ideas: Sequence[Idea]) -> bool:
    """A piece (or a memory of the turn's own words) some memory already holds: its evidence's words found in
    that memory's statement or evidence."""
    return any(support(piece.evidence, f"{i.summary} {i.evidence}") >= GROUNDED_AT for i in ideas)


# What a rule or decision says before its reason: "Use Vitest instead of Jest" of "…, because Jest broke".
_REASON = re.compile(r",?\s+(?:because|since|as|so that)\s+|:\s+|\s+[-–—]\s+", re.IGNORECASE)
# The share of that head's words a memory must hold to name the choice.
NAMES_AT = 0.6


def names_the_choice(piece: Piece, summary: str) -> bool:
    """Whether `summary` names what `piece` settles (the choice, not only its reason): a small model once
    stored "Jest kept breaking on our ESM imports." for "We decided to use Vitest instead of Jest, because…"."""
    head = _REASON.split(piece.statement, maxsplit=1)[0]
    return support(head, summary) >= NAMES_AT


# The share of a memory's content words the person's message holds for the memory to be a copy of it.
COPIED_AT = 0.9


def _copies_more_than(idea: Idea, piece: Piece, turn: TurnText) -> bool:
    """A memory made of the person's words (nearly all of them theirs) that holds more of them than the piece."""
    if support(idea.summary, turn.user) < COPIED_AT:
        return False
    return bool(content_words(idea.summary) - content_words(piece.evidence))


def _borrows_the_reply(idea: Idea, turn: TurnText) -> bool:
    """A memory of the person's piece that holds words of the assistant's reply the person did not say: "I
    switched the two raw calls to `reminders_client()` from app/reminders/service.py, it adds the auth header and
    the retries." came back from the 0.5B as the person's rule, its first half the reply's report."""
    borrowed = content_words(idea.summary) & content_words(turn.assistant)
    return any(support(word, turn.user) == 0 for word in borrowed)  # not even a stem or prefix of theirs


def says_enough(statement: str) -> bool:
    """Whether a memory composed from its evidence alone is still knowledge: it names what it is about (not
    "Needs to be set to 1 for true colors.", whose subject the person left to the conversation) and is no order for
    the moment ("Fix the tui test sources.")."""
    return not MODAL_FIRST.match(statement) and not is_request(statement)


def cites(idea: Idea, piece: Piece) -> bool:
    """Whether `idea` rests on the person's sentence that `piece` was composed from: its evidence is theirs and
    holds that sentence's words."""
    return idea.evidence_role == "user" and support(piece.evidence, idea.evidence or "") >= GROUNDED_AT


def typed_by_the_person(turn: TurnText, ideas: Sequence[Idea]) -> list[Idea]:
    """`ideas`, each that holds a piece of the person's own message typed as that piece is: "always use pnpm,
    never npm" is a rule because the person said "always" and "never", whatever kind a small model gave it.
    A memory that cites the person's sentence a piece was composed from takes the piece's statement when that
    says enough on its own: the person's words, composed without the model, say what they said, where a 0.5B
    model's rewording of "We decided to use Vitest instead of Jest, because Jest kept breaking on our ESM
    imports." gave reasons they never gave ("… because it provides a more robust testing framework", "… for the
    sake of breaking our ESM imports").
    A memory of a piece that does not name its choice takes the piece's own statement, and so does one that only
    repeats more of the person's message than the piece ("The thinking level colors are too intense, adjust. and
    also, the context usage in the footer should be …": a request and a rule copied as one), or that holds words
    of the reply the person did not say (`_borrows_the_reply`)."""
    pieces = pieces_of(turn.user)
    typed = []
    for idea in ideas:
        piece = next((p for p in pieces if covered(p, [idea])), None)
        if piece and (
            (cites(idea, piece) and says_enough(piece.statement))
            or not names_the_choice(piece, idea.summary)
            or _copies_more_than(idea, piece, turn)
            or (_borrows_the_reply(idea, turn) and says_enough(piece.statement))
        ):
            idea = make_idea(piece.kind, piece.statement, piece.evidence, piece.role, idea.subject) or idea
        elif piece and piece.kind is not idea.kind:
            idea = make_idea(piece.kind, idea.summary, idea.evidence, idea.evidence_role, idea.subject) or idea
        typed.append(idea)
    return typed


def missed_pieces(turn: TurnText, ideas: Sequence[Idea]) -> list[Idea]:
    """Memories for the person's stated rules, decisions and gotchas, and for the causes the assistant found,
    that `ideas` do not hold yet."""
    added: list[Idea] = []
    values = values_of(turn.user, edited_files(turn.other))
    for piece in [*pieces_of(turn.user), *findings_of(turn.assistant), *([values] if values else [])]:
        if covered(piece, [*ideas, *added]):
            continue
        idea = make_idea(piece.kind, piece.statement, piece.evidence, piece.role)
        if idea and content_words(idea.summary):
            added.append(idea)
    return added


# What a fact looks like: a command or code in backticks, a URL, a port, a path, an email address, or a dotted
# name of three parts or more (a queue `ledger.audits.updates`, a host `slate.thisness.us`, a setting
# `channels.telegram.proxy`).
_FACT_SHAPE = re.compile(
    r"`[^`]{2,}`|https?://\S+|\bport\s+\d{2,5}\b|(?<=[a-z]):\d{2,5}\b|(?<![\w.])(?:[\w.-]+/)+[\w.-]+\.\w+|\b[\w.+-]+@[\w-]+\.\w+"
    r"|(?<![\w.])[a-z][\w-]*(?:\.[a-z][\w-]*){2,}\b"
)
FACTS_PER_SIDE = 3


def facts_of(turn: TurnText, ideas: Sequence[Idea] = ()) -> list[Idea]:
    """Facts stated plainly, by their shape (a command, a port, a path, a URL, an address), from either side of the
    turn: declarative sentences, never a question, a plan or an order for the moment, not held by `ideas` yet.
    Which of them a person would keep is for the learned gate (`gate`) to say."""
    found: list[Idea] = []
    for role, said in (("user", strip_envelope(turn.user)), ("assistant", turn.assistant)):
        mine = 0
        for line in unwrapped_lines(said).splitlines():
            for sentence in sentences(_BULLET.sub("", line).replace("**", "")):
                if mine >= FACTS_PER_SIDE or not _FACT_SHAPE.search(sentence) or len(sentence) > 300:
                    continue
                if is_question(sentence) or announces_plan(sentence) or is_request(clean_statement(sentence)):
                    continue
                piece = Piece(Kind.FACT, sentence, sentence, role)
                if role == "user" and kind_of(sentence):
                    continue  # a rule or decision the person stated is a piece of its own kind
                if covered(piece, [*ideas, *found]):
                    continue
                idea = make_idea(Kind.FACT, sentence, sentence, role)
                if idea:
                    found.append(idea)
                    mine += 1
    return found


def disclosed(turn: TurnText, ideas: Sequence[Idea] = ()) -> list[Idea]:
    """What the person says of themselves or the people and organisations around them that lasts ("My name is
    Reba", "My wife loves to cook", "I work for IIoT Solutions"), by the lexicon's markers of a trait or an
    identity, as facts: statements, never questions or orders, not held by `ideas` yet."""
    found: list[Idea] = []
    for sentence in said_sentences(strip_envelope(turn.user)):
        if not (IDENTITY.search(sentence) or DISCLOSURE.search(sentence)) or len(sentence) > 300:
            continue
        if is_question(sentence) or is_request(clean_statement(sentence)) or kind_of(sentence):
            continue
        piece = Piece(Kind.FACT, sentence, sentence, "user")
        if not covered(piece, [*ideas, *found]) and (
            idea := make_idea(Kind.FACT, of_the_person(sentence), sentence, "user")
        ):
            found.append(idea)
    return found


def of_the_person(sentence: str) -> str:
    """A person's sentence about themselves said of them (`language.words.THIRD_PERSON`): "My wife loves to cook"
    -> "The person's wife loves to cook"; unchanged when it opens otherwise."""
    text = sentence.strip()
    for pattern, said in THIRD_PERSON:
        changed = re.sub(pattern, said, text, count=1, flags=re.I)
        if changed != text:
            return changed
    return text


def distinct(ideas: Sequence[Idea]) -> list[Idea]:
    """`ideas` without repeats: several drafts typed as one piece of the person's message, or restated alike,
    become the same memory, which is kept once (the first; bar case, spacing and end marks). The same words of
    two kinds are two memories: a kind is never lost."""

    def key(idea: Idea) -> tuple[str, str]:
        return idea.kind, " ".join(idea.summary.lower().rstrip(" .!").split())

    seen: set[tuple[str, str]] = set()
    kept = []
    for idea in ideas:
        if key(idea) not in seen:
            seen.add(key(idea))
            kept.append(idea)
    return kept


# --- a person's remark, reworded from the turn's own words ---

_BULLET = re.compile(r"^\s*(?:[-+]\s+\d+\s+)?(?:[-*+]|\d+[.)])\s+")
# The share of a remark's content words the assistant's sentence must say again to be its echo.
ECHO_AT = 0.6


def echo_of(remark: str, reply: str) -> str:
    """The assistant's sentence that says again what a person's remark says, in its own words, and adds to it
    (a subject, a reason, a consequence): "Invalid themes must NEVER explode." is echoed by "You're absolutely
    right - invalid themes should never crash the app, especially on startup!"; "" when the reply has none.
    It must hold most of the remark's content words, and a remark that forbids is echoed only by a sentence that
    forbids (never "added console logs" for "no console logs"). Plans and questions are no echo."""
    wanted = content_words(remark)
    if len(wanted) < 2:
        return ""
    forbids = bool(NEGATION.search(remark))
    best, best_share = "", 0.0
    for line in reply.splitlines():
        line = _BULLET.sub("", line).replace("**", "").replace("__", "")
        for sentence in sentences(line):
            if is_question(sentence) or announces_plan(sentence) or len(sentence) > 300:
                continue
            statement = clean_statement(sentence)
            if not statement or bool(NEGATION.search(statement)) != forbids:
                continue
            share = support(remark, statement)
            if share >= ECHO_AT and share > best_share and content_words(statement) - wanted:
                best, best_share = statement, share
    return best


def quotes_its_evidence(idea: Idea, turn: TurnText) -> bool:
    """Whether `idea`'s text only repeats the words it rests on, typos the turn corrects aside."""
    vocabulary = f"{turn.assistant}\n{turn.other}"
    return is_quote(mend_typos(idea.summary, vocabulary), mend_typos(idea.evidence, vocabulary))


def reworded(idea: Idea, turn: TurnText) -> Idea:
    """`idea` in the better words its own turn gives, without the LLM: its typos mended where the rest of the turn
    spells the word right, and, when it only repeats what the person said, the assistant's echo of the remark as
    its text (`echo_of`), else a rule in the imperative (`knowledge.imperative`; its subject taken from what the
    reply opens on when the person left it out, `knowledge.with_subject`), a cause said as one. The evidence
    stays the person's exact words; the priority stays as earned."""
    text = mend_typos(idea.summary, f"{turn.assistant}\n{turn.other}")
    if idea.evidence_role == "user" and quotes_its_evidence(idea, turn):
        echo = echo_of(text, turn.assistant)
        if not echo and idea.kind is Kind.RULE:
            text = with_subject(text, turn.assistant) or text
        said_again = (idea.kind is Kind.RULE and imperative(text)) or (idea.kind is Kind.GOTCHA and stated_cause(text))
        text = echo or said_again or text
    if text == idea.summary:
        return idea
    better = make_idea(idea.kind, text, idea.evidence, idea.evidence_role, idea.subject)
    if better is None or grounding(better.summary, turn.everything) < GROUNDED_AT:
        return idea
    return better.model_copy(update={"priority": idea.priority})
