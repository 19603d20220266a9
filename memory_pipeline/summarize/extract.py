"""Reading turns with the LLM: one request per turn, validated, retried once, never silently empty.

- Invalid output (not JSON, cut off by the token limit, not a valid list of
  ideas) gets one retry; after that the turn is `failed` with the reason, and
  the run goes on. A failed turn (this way or any other) keeps what its own words
  give without the model (a person's stated rule or decision), until a later run
  reads it again.
- A request the server refuses (HTTP 400: over its context, an input it
  rejects) is retried once with half the prompt budget, then that turn is
  `failed` with the reason: one turn never fails a day.
- A request the server takes but does not answer in time (the timeout follows the prompt's size and the
  server's measured pace) fails that turn at once, `TIMED_OUT` in its reason: the next run reads it again
  with half the prompt (`SMALLER_AFTER_TIMEOUT`), and the day's other turns go on.
- Transport failures are retried by the client with backoff; if the server
  stays unreachable the error (naming the URL) ends the run. Turns finished by
  then were handed to `on_done` (the journal) and are not read again.
- Every prompt is measured with the server's tokenizer (`count_tokens`).
- Every answer is composed into memories (`compose`): a draft whose evidence is not in the turn is
  dropped, every statement is cleaned (never a quote, never cut), typed and reworded from the turn's own words
  where it only repeats the person's (`compose.reworded`); a memory citing a person's sentence that composes to a
  statement of its own takes that statement, which no model pass restates; then reviewed against the turn
  (`trust.review`): ungrounded memories and claims about the user that the user did not make are dropped,
  priorities are earned. The rules, decisions and gotchas the person stated, and the causes the assistant
  found, that the model missed are added from their own sentences. Last, each memory must say what its evidence
  says (`faithful`: polarity, the direction of a replacement, names and numbers), else it is composed again
  from its evidence alone or dropped, and the reason is counted.
- Turns go out one at a time by default (a local server has one slot); with
  `concurrency` > 1 a server started with several slots is kept busy.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime

from memory_pipeline.language.kinds import Kind
from memory_pipeline.stores.llm import ChatClient, InvalidAnswer, Timings, Usage
from memory_pipeline.stores.openai_compat import RejectedRequest, TimedOut
from memory_pipeline.summarize import gate, turn_gate
from memory_pipeline.summarize.compose import (
    covered,
    disclosed,
    distinct,
    facts_of,
    from_draft,
    make_idea,
    missed_pieces,
    quotes_its_evidence,
    reworded,
    says_enough,
    typed_by_the_person,
    without_orders,
)
from memory_pipeline.summarize.faithful import strays, unfaithful
from memory_pipeline.summarize.ideas import (
    MAX_IDEAS_PER_TURN,
    MEMORIES_SCHEMA,
    RESTATE_SCHEMA,
    Idea,
    InvalidIdeas,
    parse_memories,
)
from memory_pipeline.summarize.knowledge import about_itself, with_subject
from memory_pipeline.summarize.prompt import TurnMessage, build_messages, restate_messages, turn_text
from memory_pipeline.summarize.trust import GROUNDED_AT, TurnText, claims_user, grounding, review

ATTEMPTS = 2  # the first answer and one retry
TIMED_OUT = "timed out"
SMALLER_AFTER_TIMEOUT = 0.5  # share of the prompt budget a turn gets when it timed out last time


@dataclass(frozen=True)
class TurnJob:
    session_id: str
    turn_id: str
    project: str
    messages: Sequence[TurnMessage]
    prompt_share: float = 1.0  # of the context left for the prompt: less after a timeout


def timed_out(reason: str | None) -> bool:
    """Whether a failed turn's reason says the server did not answer in time."""
    return bool(reason) and TIMED_OUT in str(reason)


@dataclass
class TurnOutcome:
    session_id: str
    turn_id: str
    status: str  # summarised | empty | failed
    ideas: list[Idea] = field(default_factory=list)
    reason: str | None = None
    attempts: int = 0
    seconds: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    generation_seconds: float = 0.0
    server_seconds: float = 0.0  # what the server says it spent (prompt + generation), all attempts
    summarized_at: str = ""
    dropped: list[tuple[str, str]] = field(default_factory=list)  # (why, summary): ideas the turn does not support
    demoted: int = 0  # ideas whose priority was lowered (no durable signal, tool output only, acknowledgement)
    added: int = 0  # memories composed from the person's or the assistant's own sentences the model missed
    restated: int = 0  # memories that only repeated their evidence, restated to stand alone
    recomposed: list[tuple[str, str]] = field(default_factory=list)  # (why, summary): said what the evidence does not

    def count_cost(self, usage: Usage, timings: Timings | None) -> None:
        """Count what the server says one call cost (an answer, a retry's unusable one, a restating pass)."""
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        if timings:
            self.generation_seconds += (timings.predicted_ms or 0) / 1000
            self.server_seconds += ((timings.prompt_ms or 0) + (timings.predicted_ms or 0)) / 1000


Keep = Callable[[Idea, TurnText], bool]
Read = Callable[[TurnText], bool]  # whether the chat model reads a turn
# The reason on a turn the gate before the model kept from it (`turn_gate`): counted, never retried.
UNREAD = "not read by the chat model: the turn gate finds no knowledge in it"


def summarise_turn(
    client: ChatClient,
    job: TurnJob,
    context_tokens: int,
    max_output_tokens: int,
    keep: Keep = gate.keeps,
    read: Read = turn_gate.may_hold_knowledge,
) -> TurnOutcome:
    outcome = TurnOutcome(job.session_id, job.turn_id, status="failed")
    text = turn_text(job.messages)
    begin = time.perf_counter()
    if not read(text):
        # Not worth the model's half minute (a heartbeat, an acknowledgement, a tool loop): its own words only.
        _own_words_only(text, keep, outcome)
        outcome.reason = UNREAD
        outcome.status = "summarised" if outcome.ideas else "empty"
        outcome.seconds = time.perf_counter() - begin
        outcome.summarized_at = datetime.now(UTC).isoformat(timespec="seconds")
        return outcome
    budget = max_output_tokens + int((context_tokens - max_output_tokens) * job.prompt_share)
    for attempt in range(1, ATTEMPTS + 1):
        outcome.attempts = attempt
        messages = build_messages(
            job.messages, budget, max_output_tokens, project=job.project, count_tokens=client.count_tokens
        )
        try:
            answer = client.complete_json(
                messages,
                MEMORIES_SCHEMA,
                name="memories",
                max_tokens=max_output_tokens,
                temperature=0.0 if attempt == 1 else 0.3,
            )
            outcome.count_cost(answer.usage, answer.timings)
            drafts = parse_memories(answer.data)
        except (InvalidAnswer, InvalidIdeas) as exc:
            if isinstance(exc, InvalidAnswer) and exc.spent is not None:
                outcome.count_cost(exc.spent.usage, exc.spent.timings)
            outcome.reason = f"attempt {attempt}: {exc}"
            continue
        except RejectedRequest as exc:
            outcome.reason = f"attempt {attempt}: rejected: {exc}"
            budget = max_output_tokens + (budget - max_output_tokens) // 2
            continue
        except TimedOut as exc:
            outcome.reason = f"attempt {attempt}: {TIMED_OUT}: {exc}; read again next run with a smaller prompt"
            break
        ideas: list[Idea] = []
        for draft in drafts:
            idea, why = from_draft(draft, text)
            if idea is None:
                outcome.dropped.append((why, draft.statement))
            elif idea.summary not in {i.summary for i in ideas}:
                ideas.append(idea)
        checked = review(ideas, text)
        outcome.dropped += checked.dropped
        outcome.demoted = checked.demoted
        added = own_words(text, checked.kept)
        kept = distinct([*typed_by_the_person(text, checked.kept), *added])[:MAX_IDEAS_PER_TURN]
        outcome.added = max(0, len(kept) - len(checked.kept))
        # What the turn's own sentences compose to is not restated by the model: "Use Vitest instead of Jest,
        # because Jest kept breaking on our ESM imports." came back from it as "… because it provides a more
        # robust testing framework", a reason the person never gave, taken from the reply.
        composed = {idea.summary for idea in missed_pieces(text, []) if says_enough(idea.summary)}
        kept = distinct(
            [
                idea if idea.summary in composed else _restated(client, reworded(idea, text), text, outcome)
                for idea in kept
            ]
        )
        kept, orders = without_orders(kept)
        outcome.dropped += [("a request, not knowledge", idea.summary) for idea in orders]
        kept = distinct(check_faithful(kept, text, outcome))
        kept, gated = gate_with_own_words(kept, text, keep)
        outcome.dropped += [("not knowledge, by the learned gate", idea.summary) for idea in gated]
        outcome.ideas, outcome.reason = kept, None
        outcome.status = "summarised" if kept else "empty"
        break
    if outcome.status == "failed":
        # The model gave nothing usable (a 0.5B rambling past the token cap twice, a timeout): the person's own
        # rules and decisions are not lost with its answer. The turn stays failed, is read again next run, and
        # its memories then replace these.
        _own_words_only(text, keep, outcome)
    outcome.seconds = time.perf_counter() - begin
    outcome.summarized_at = datetime.now(UTC).isoformat(timespec="seconds")
    return outcome


def read_without_model(job: TurnJob, keep: Keep = gate.keeps) -> TurnOutcome:
    """A turn no chat model has read yet, from its own words alone (what a run without the model stores until
    one reads it): the person's rules, the findings and facts its sentences state, through the same checks and
    gate as the model's memories. A decision among them that names what it replaced marks the earlier choice
    replaced at once (`reflect.replacing`), without waiting for the model's reflection. `own_word_outcomes`
    dates it by its turn."""
    outcome = TurnOutcome(job.session_id, job.turn_id, status="empty")
    _own_words_only(turn_text(job.messages), keep, outcome)
    outcome.status = "summarised" if outcome.ideas else "empty"
    return outcome


def _own_words_only(turn: TurnText, keep: Keep, outcome: TurnOutcome) -> None:
    """The turn's memories from its own words alone (`candidates_without_model`), through the gate."""
    kept, gated = _split(candidates_without_model(turn), lambda idea: keep(idea, turn))
    outcome.dropped += [("not knowledge, by the learned gate", idea.summary) for idea in gated]
    outcome.ideas = kept


def gate_with_own_words(ideas: Sequence[Idea], turn: TurnText, keep: Keep) -> tuple[list[Idea], list[Idea]]:
    """(kept, dropped) by the gate, and what the turn's own words give that no kept memory holds any more. A
    memory the model worded badly ("pnpm only.") gives way to what the turn's own words make of the same
    evidence ("Always use pnpm, never npm."), when that passes the gate; and a person's decision a draft covered
    (so it was not added from their words) stays when a check drops that draft ("Vitest is a good alternative
    for ESM imports …", unfaithful to the person's "We decided to use Vitest instead of Jest, because …")."""
    kept, dropped = _split(ideas, lambda idea: keep(idea, turn))
    have = {idea.summary for idea in kept}
    for own in candidates_without_model(turn):
        if len(kept) >= MAX_IDEAS_PER_TURN or own.summary in have or covered(own, kept):
            continue
        if keep(own, turn):
            kept.append(own)
            have.add(own.summary)
    return kept, dropped


def own_words(turn: TurnText, ideas: Sequence[Idea]) -> list[Idea]:
    """What the turn's own words give that `ideas` do not hold yet: the person's pieces, the assistant's findings,
    the values a person set, the facts stated by shape and what the person says of themselves."""
    added = missed_pieces(turn, ideas)
    added += facts_of(turn, [*ideas, *added])
    return added + disclosed(turn, [*ideas, *added])


def _split(ideas: Sequence[Idea], test: Callable[[Idea], bool]) -> tuple[list[Idea], list[Idea]]:
    """(passing, failing), each test made once."""
    verdicts = [(idea, test(idea)) for idea in ideas]
    return [i for i, ok in verdicts if ok], [i for i, ok in verdicts if not ok]


def candidates_without_model(turn: TurnText) -> list[Idea]:
    """What the turn's own words give without the chat model (`own_words`), through the same checks as the
    model's drafts."""
    outcome = TurnOutcome("", "", status="summarised")
    kept, _ = without_orders(distinct(own_words(turn, []))[:MAX_IDEAS_PER_TURN])
    return distinct(check_faithful(kept, turn, outcome))


def check_faithful(ideas: Sequence[Idea], turn: TurnText, outcome: TurnOutcome) -> list[Idea]:
    """The last word on a turn's memories: each says what its evidence says (`faithful.unfaithful`). One that does
    not is composed again from its evidence alone, without the model, when that still says something
    (`says_enough`), else dropped; either way the reason is counted (`recomposed`, `dropped`)."""
    kept = []
    for idea in ideas:
        if strays(idea.summary, idea.evidence):
            outcome.dropped.append(("unfaithful: says what its evidence does not hold", idea.summary))
            continue
        # A person's words that leave their subject to the reply ("should be dimmer" answered by "The footer is
        # using …") name it as composition does (`knowledge.with_subject`): that subject is theirs too.
        said = (idea.evidence_role == "user" and with_subject(idea.evidence, turn.assistant)) or idea.evidence
        why = unfaithful(idea.summary, said, turn.everything)
        if not why:
            kept.append(idea)
            continue
        again = make_idea(idea.kind, said, idea.evidence, idea.evidence_role, idea.subject)
        if again is not None and not unfaithful(again.summary, said, turn.everything) and says_enough(again.summary):
            outcome.recomposed.append((why, idea.summary))
            kept.append(again.model_copy(update={"priority": idea.priority}))
        else:
            outcome.dropped.append((f"unfaithful: {why}", idea.summary))
    return kept


def _restated(client: ChatClient, idea: Idea, turn: TurnText, outcome: TurnOutcome) -> Idea:
    """A memory whose text only repeats its evidence (and that the turn's own words could not reword), restated by
    a short focused pass so it stands alone (subject named, typos fixed); kept as it was when the answer is not
    usable or not grounded."""
    if idea.kind is Kind.FACT or not quotes_its_evidence(idea, turn):
        return idea  # a fact stated plainly stands alone as said: rewording it could only lose a name or a number
    context = turn.assistant if idea.evidence_role == "user" else turn.user
    try:
        answer = client.complete_json(
            restate_messages(idea.evidence, f"{turn.user}\n\n{context}" if idea.evidence_role == "user" else context),
            RESTATE_SCHEMA,
            name="statement",
            max_tokens=160,
        )
    except (InvalidAnswer, RejectedRequest, TimedOut) as exc:
        outcome.attempts += 1
        if isinstance(exc, InvalidAnswer) and exc.spent is not None:
            outcome.count_cost(exc.spent.usage, exc.spent.timings)  # an unusable answer cost the server all the same
        return idea
    outcome.attempts += 1
    outcome.count_cost(answer.usage, answer.timings)
    statement = answer.data.get("statement", "") if isinstance(answer.data, dict) else ""
    better = make_idea(idea.kind, statement, idea.evidence, idea.evidence_role, idea.subject)
    if (
        better is None
        or quotes_its_evidence(better, turn)
        or about_itself(better.summary)
        or claims_user(statement)
        or grounding(better.summary, turn.everything) < GROUNDED_AT
        or strays(better.summary, idea.evidence)
    ):
        return idea
    outcome.restated += 1
    return better.model_copy(update={"priority": idea.priority})


def summarise_turns(
    client: ChatClient,
    jobs: Sequence[TurnJob],
    *,
    context_tokens: int,
    max_output_tokens: int,
    concurrency: int = 1,
    on_done: Callable[[TurnOutcome], None] | None = None,
    keep: Keep = gate.keeps,
    read: Read = turn_gate.may_hold_knowledge,
) -> list[TurnOutcome]:
    """Every job's outcome, in job order. A transport failure propagates (the server is gone)."""

    def run(job: TurnJob) -> TurnOutcome:
        outcome = summarise_turn(client, job, context_tokens, max_output_tokens, keep, read)
        if on_done:
            on_done(outcome)
        return outcome

    if concurrency <= 1:
        return [run(job) for job in jobs]
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        return list(pool.map(run, jobs))
