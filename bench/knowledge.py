"""Knowledge you can trust (`python -m bench knowledge`): extraction on turns nobody tuned for.

bench/labels/knowledge_turns.json holds 120+ turns of five kinds of real public history (pi coding sessions,
personal-assistant sessions, Claude Code, Codex, a conversational one; provenance in KNOWLEDGE_SOURCES.md),
each with the memories a person would keep, written blind and frozen before the code it scores changed, split
into a tuning half and a held-out half. The product's own extraction runs on each turn, the chat model's path
(prompt, schema, composition, trust review, faithfulness) and the path without the model (the person's pieces,
the assistant's findings, facts by shape, the same checks), and `summarize.gate` decides what is kept. Each
turn's candidates are cached in bench/.work/knowledge (by model and code), so the gate is trained on the tuning
halves (`python -m bench keep --gate`, which writes memory_pipeline/summarize/gate.json) and reported on the
held-out half from one run of the model.

A memory is *correct* when it holds a labelled piece of its turn: its embedding (the embedding server's) is at
least `SAME_AT` close to the labelled statement, or it holds at least `WORDS_AT` of its content words and every
particular (number, path, command) the label names. Reported per split: memorable turns with a correct memory,
other turns with any memory, precision (memories that hold a labelled piece), facts and the assistant's findings
recalled, memories the faithfulness check flags against their evidence, memories cut mid-sentence, memories on
trap turns (system, greeting, persona, scheduled-task, self-description). The held-out memories are printed
beside their labels, to be read.

The model's answers themselves are kept by request (bench/.work/answers, `bench.answers.CachedChat`): a change of
the code after the model is measured on the same answers without the model's hour. `--labels=b --fill-answers`
asks about every turn through that cache, whatever the candidates' cache holds.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.answers import CachedChat, kept_file, pack
from bench.baseline import code_at
from bench.results_file import table, write_section
from memory_pipeline.language.words import content_words
from memory_pipeline.sessions.sources.claude_code import said_by_person
from memory_pipeline.sessions.sources.codex import INJECTED as CODEX_INJECTED
from memory_pipeline.settings import load_settings
from memory_pipeline.stores.embeddings import embeddings_client
from memory_pipeline.stores.llm import chat_client
from memory_pipeline.summarize import gate, turn_gate
from memory_pipeline.summarize.compose import disclosed, distinct, facts_of, make_idea, without_orders
from memory_pipeline.summarize.extract import (
    TurnJob,
    TurnOutcome,
    candidates_without_model,
    check_faithful,
    gate_with_own_words,
    summarise_turns,
)
from memory_pipeline.summarize.faithful import invented, unfaithful
from memory_pipeline.summarize.ideas import Idea
from memory_pipeline.summarize.knowledge import edited_files, findings_of, pieces_of, values_of
from memory_pipeline.summarize.prompt import TurnMessage, turn_text

ROOT = Path(__file__).resolve().parents[1]
LABELS = Path(__file__).with_name("labels") / "knowledge_turns.json"
# Set B (`--labels=b`): 166 more real turns, labelled blind after set A's held-out half had been read while the
# code changed, with a person's preferences in many forms; a clean held-out half. Its messages name a tool
# result's role "tool" and its tool "name". Set C (`--labels=c`): 154 real turns of three people neither set holds,
# labelled blind, never trained on (`bench.keep.TRAINING_SETS`): both its halves are histories nobody tuned for.
LABEL_SETS = {
    "a": LABELS,
    "b": LABELS.with_name("knowledge_turns_b.json"),
    "c": LABELS.with_name("knowledge_turns_c.json"),
}
WORK = ROOT / "bench" / ".work" / "knowledge"
ANSWERS = ROOT / "bench" / ".work" / "answers"  # bench.answers.CachedChat's, shared with bench faithful
MAX_OUTPUT_TOKENS = 512
SAME_AT = 0.7  # cosine of MiniLM vectors: a paraphrase of the same piece, not a neighbour on the same topic
WORDS_AT = 0.6
# Set B names its traps in words ("heartbeat prompt in the user role", "skill text injected in the user role"):
# the kinds set A names "system-prompt", "greeting-prompt", "persona", "scheduled-task", "self-description", read
# by the words that name them (on set A the same 20 turns as those names).
TRAP_WORDS = ("system", "greeting", "persona", "scheduled", "self-description", "heartbeat", "notification",
              "compaction", "skill", "/init", "startup", "caveat")  # fmt: skip


def on_trap(turn: dict) -> bool:
    """A turn of no knowledge whose text is not the person's: a system, greeting, persona, scheduled-task,
    heartbeat or injected prompt, the assistant describing itself."""
    return not turn["memorable"] and any(word in trap.lower() for trap in turn["traps"] for word in TRAP_WORDS)


def load_turns(labels: Path = LABELS) -> list[dict[str, Any]]:
    turns = json.loads(labels.read_text())["turns"]
    for turn in turns:
        turn["messages"] = [_as_set_a(m) for m in turn["messages"]]
    return turns


def _as_set_a(message: dict[str, Any]) -> dict[str, Any]:
    """A message in set A's shape: set B calls a tool result's role "tool" and its tool "name"."""
    if "name" in message and "tool_name" not in message:
        message = {**{k: v for k, v in message.items() if k != "name"}, "tool_name": message["name"]}
    return {**message, "role": "tool_result"} if message["role"] == "tool" else message


# The labels keep each message's role and text, not the flag Claude Code sets on a compaction summary it sends in
# the user role (`isCompactSummary`, which its reader turns into a compaction): its fixed opening stands for it.
_COMPACTION_OPENING = "This session is being continued from a previous conversation"


def _read_as_the_pipeline_does(history: str, text: str) -> str:
    """The role the agent's reader gives a message labelled "user": "user" when a person typed it, "system" for
    what the agent itself sent in the user role (Codex's context blocks, Claude Code's notes and compaction
    summaries), as `sessions/sources` decide for real files."""
    if history == "codex" and text.lstrip().startswith(CODEX_INJECTED):
        return "system"
    if history == "claude-code" and (said_by_person(text) is None or text.startswith(_COMPACTION_OPENING)):
        return "system"
    return "user"


def _role_read(turn: dict[str, Any], message: dict[str, Any]) -> str:
    role = message["role"]
    return _read_as_the_pipeline_does(turn["history"], message["text"]) if role == "user" else role


def job_of(turn: dict[str, Any]) -> TurnJob:
    """A labelled turn as the summarise stage sees one: the person's message, the assistant's text, its tool
    calls and their results, each message read as the agent's reader reads it."""
    messages: list[TurnMessage] = []
    for m in turn["messages"]:
        role = _role_read(turn, m)
        if role == "tool_call":
            call = {"name": m.get("tool_name"), "arguments": m["text"]}
            messages.append(TurnMessage("assistant", "", tool_calls=[call]))
        elif role == "tool_result":
            messages.append(TurnMessage("toolResult", m["text"], tool_name=m.get("tool_name")))
        else:
            messages.append(TurnMessage(role, m["text"]))
    return TurnJob(session_id=turn["id"], turn_id=turn["id"], project=turn.get("project") or "", messages=messages)


def _code_version() -> str:
    """The extraction's code as it is (the gates after it aside, `gate` and `keep`: candidates are taken before
    them)."""
    digest = hashlib.sha1()
    package = ROOT / "memory_pipeline"
    code = [*(package / "summarize").rglob("*.py"), *(package / "language").rglob("*.py")]
    for path in sorted(p for p in code if p.name not in ("gate.py", "keep.py")):
        digest.update(path.read_bytes())
    if turn_gate.WEIGHTS.exists():  # which turns the model reads
        digest.update(turn_gate.WEIGHTS.read_bytes())
    return digest.hexdigest()[:12]


def candidates(turns: Sequence[dict], with_model: bool) -> tuple[list[list[Idea]], dict[str, Any]]:
    """Every turn's candidate memories before the gate, from the cache when this code and model made them (one
    cache file per turn, so a run cut short, or one half run first, is not read again)."""
    settings = load_settings()
    jobs = [job_of(t) for t in turns]
    if not with_model:
        begin = time.perf_counter()
        found = [candidates_without_model(turn_text(job.messages)) for job in jobs]
        return found, {"model": "none", "seconds": time.perf_counter() - begin}
    with chat_client(settings, timeout=600) as raw:
        model = raw.model_id()
        context = raw.context_size() or 4096
        # The server's answers kept by request: code that changes what follows the model (not the prompt) is run
        # again on the same answers in seconds, not in an hour of the model.
        client = CachedChat(raw, ANSWERS / model)
        version = hashlib.sha1(f"{model}|{_code_version()}".encode()).hexdigest()[:12]
        found: list[list[Idea]] = []
        run: dict[str, Any] = {"model": model, "seconds": 0.0, "failed": 0, "recomposed": {}, "dropped_unfaithful": 0}
        for turn, job in zip(turns, jobs, strict=True):
            cache = WORK / version / f"{turn['id']}.json"
            if not cache.exists():
                begin = time.perf_counter()
                [outcome] = summarise_turns(
                    client,  # type: ignore[arg-type]  # a ChatClient by its methods
                    [job],
                    context_tokens=context,
                    max_output_tokens=MAX_OUTPUT_TOKENS,
                    keep=lambda *_: True,
                )
                cache.parent.mkdir(parents=True, exist_ok=True)
                cache.write_text(
                    json.dumps(
                        {
                            "seconds": time.perf_counter() - begin,
                            "failed": outcome.status == "failed",
                            "recomposed": [why.split(" (")[0] for why, _ in outcome.recomposed],
                            "dropped_unfaithful": sum(why.startswith("unfaithful") for why, _ in outcome.dropped),
                            "ideas": [i.model_dump(mode="json") for i in outcome.ideas],
                        }
                    )
                )
                print(f"{turn['id']}: {len(outcome.ideas)} candidates", flush=True)
            data = json.loads(cache.read_text())
            found.append([Idea.model_validate(i) for i in data["ideas"]])
            run["seconds"] += data["seconds"]
            run["failed"] += data["failed"]
            run["dropped_unfaithful"] += data["dropped_unfaithful"]
            for why in data["recomposed"]:
                run["recomposed"][why] = run["recomposed"].get(why, 0) + 1
        run["model calls asked"], run["model calls replayed"] = client.asked, client.replayed
    run["seconds"] = round(run["seconds"], 1)
    return found, run


def fill_answers(turns: Sequence[dict]) -> None:
    """Ask the model about every turn again through the answers' cache (`ANSWERS`), whatever the ideas' cache
    holds, so that code after the model can later be run on the same answers in seconds, in this checkout and,
    through the file `answers.pack` writes, in the next; and say how many turns give the very candidates this
    code's cached run gave (the server's determinism, seen from here)."""
    settings = load_settings()
    same = differ = new = 0
    with chat_client(settings, timeout=600) as raw:
        model, context = raw.model_id(), raw.context_size() or 4096
        client = CachedChat(raw, ANSWERS / model)
        version = hashlib.sha1(f"{model}|{_code_version()}".encode()).hexdigest()[:12]
        for turn in turns:
            [outcome] = summarise_turns(
                client,  # type: ignore[arg-type]  # a ChatClient by its methods
                [job_of(turn)],
                context_tokens=context,
                max_output_tokens=MAX_OUTPUT_TOKENS,
                keep=lambda *_: True,
            )
            cache = WORK / version / f"{turn['id']}.json"
            ideas = [i.model_dump(mode="json") for i in outcome.ideas]
            if not cache.exists():
                new += 1
            elif json.loads(cache.read_text())["ideas"] == ideas:
                same += 1
            else:
                differ += 1
            print(f"{turn['id']}: {len(ideas)} candidates", flush=True)
    print(
        f"{len(turns)} turns: model calls asked {client.asked}, replayed {client.replayed}; against cache {version}: "
        f"the same candidates {same}, other candidates {differ}, not cached {new}; "
        f"{pack(ANSWERS / model)} answers kept in {kept_file(ANSWERS / model).relative_to(ROOT)}"
    )


def _caches() -> list[Path]:
    """Every folder of the model's cached answers (a folder linked to another is read once)."""
    found = {p.resolve(): p for p in WORK.iterdir()} if WORK.exists() else {}
    return sorted((p for p in found.values() if p.is_dir() and not p.name.startswith("code-")), key=lambda p: p.name)


def model_candidates(
    turn: dict[str, Any], caches: Sequence[Path], current: str | None = None
) -> tuple[list[Idea], bool]:
    """The embedded model's candidates of `turn` from every cache that holds it (the faithfulness check run
    anew on earlier code's answers), as the pipeline reads a turn (the turn gate spares some: their own words
    only); and whether any was."""
    text = turn_text(job_of(turn).messages)
    if not turn_gate.may_hold_knowledge(text):
        return candidates_without_model(text), True
    ideas, seen = [], False
    for cache in caches:
        path = cache / f"{turn['id']}.json"
        if path.exists():
            seen = True
            cached = [Idea.model_validate(i) for i in json.loads(path.read_text())["ideas"]]
            if cache.name == current:  # this code's own answers, checked already: as `bench knowledge` reads them
                ideas += cached
            else:
                ideas += distinct(check_faithful(cached, text, TurnOutcome("", "", status="summarised")))
    return list({i.summary: i for i in ideas}.values()), seen


# The code before this work (the last commit before the labels were frozen), run on the same turns in a process of
# its own so that the same run measures the baseline: its extraction with the model, and its pieces without it.
BASELINE = "26d47ad"
_BASELINE_RUN = """
import json, sys
sys.path.insert(0, sys.argv[1])
from memory_pipeline.settings import load_settings
from memory_pipeline.stores.llm import chat_client
from memory_pipeline.summarize.compose import missed_pieces
from memory_pipeline.summarize.extract import TurnJob, summarise_turns
from memory_pipeline.summarize.prompt import TurnMessage, turn_text
assert sys.modules["memory_pipeline"].__file__.startswith(sys.argv[1])
turns, out, with_model = json.load(open(sys.argv[2])), sys.argv[3], sys.argv[4] == "model"
done = json.load(open(out)) if __import__("os").path.exists(out) else {}
with chat_client(load_settings(), timeout=600) as client:
    context = client.context_size() or 4096
    for t in turns:
        if t["id"] in done:
            continue
        msgs = []
        for m in t["messages"]:
            if m["role"] == "tool_call":
                call = {"name": m.get("tool_name"), "arguments": m["text"]}
                msgs.append(TurnMessage("assistant", "", tool_calls=[call]))
            elif m["role"] == "tool_result":
                msgs.append(TurnMessage("toolResult", m["text"], tool_name=m.get("tool_name")))
            else:
                msgs.append(TurnMessage(m["role"], m["text"]))
        job = TurnJob(session_id=t["id"], turn_id=t["id"], project=t.get("project") or "", messages=msgs)
        ideas = []
        if with_model:
            [o] = summarise_turns(client, [job], context_tokens=context, max_output_tokens=512)
            ideas = [i.model_dump(mode="json") for i in o.ideas]
        free = missed_pieces(turn_text(msgs), [])
        done[t["id"]] = {"model": ideas, "free": [i.model_dump(mode="json") for i in free]}
        json.dump(done, open(out, "w"))
        print(t["id"], flush=True)
"""


def baseline(turns: Sequence[dict], with_model: bool) -> dict[str, list[list[Idea]]]:
    """The baseline's memories per turn, without the model and (`with_model`) with it (cached in
    bench/.work/knowledge)."""
    code = code_at(BASELINE, WORK)
    mode = "model" if with_model else "free"
    # The same input as the code under test: each message read as the agent's reader reads it.
    given = json.dumps([{**t, "messages": [{**m, "role": _role_read(t, m)} for m in t["messages"]]} for t in turns])
    digest = hashlib.sha1(given.encode()).hexdigest()[:8]
    wanted, out = WORK / "baseline-turns.json", WORK / f"baseline-{BASELINE}-{mode}-{digest}.json"
    wanted.write_text(given)
    argv = [sys.executable, "-W", "ignore", "-c", _BASELINE_RUN, str(code), str(wanted), str(out), mode]
    subprocess.run(argv, check=True)
    done = json.loads(out.read_text())
    pick = lambda path: [[Idea.model_validate(i) for i in done[t["id"]][path]] for t in turns]  # noqa: E731
    found = {"baseline (26d47ad, before this work), without the model": pick("free")}
    if with_model:
        found["baseline (26d47ad), embedded model"] = pick("model")
    return found


def as_stored(turns: Sequence[dict], found: Sequence[Sequence[Idea]]) -> list[list[Idea]]:
    """Each turn's candidates as the pipeline stores them: through the learned gate, the turn's own words in the
    place of what it drops."""
    return [
        gate_with_own_words(ideas, turn_text(job_of(t).messages), gate.keeps)[0]
        for t, ideas in zip(turns, found, strict=True)
    ]


def _holds(memory: str, label: dict, similarity: float) -> bool:
    if similarity >= SAME_AT:
        return True
    wanted = content_words(label["statement"])
    if not wanted:
        return False
    share = len(wanted & content_words(memory)) / len(wanted)
    return share >= WORDS_AT and not invented(label["statement"], memory)


def judge(turns: Sequence[dict], found: Sequence[Sequence[Idea]]) -> list[list[int | None]]:
    """For each turn, for each memory, the index of the labelled piece it holds (None: none)."""
    texts = [i.summary for ideas in found for i in ideas]
    labels = [k["statement"] for t in turns for k in t["knowledge"]]
    if not texts or not labels:
        return [[None] * len(ideas) for ideas in found]
    with embeddings_client(load_settings()) as embedder:
        memory_vectors = np.array(embedder.embed(texts))
        label_vectors = np.array(embedder.embed(labels))
    similarity = memory_vectors @ label_vectors.T
    verdicts, row, offset = [], 0, 0
    for turn, ideas in zip(turns, found, strict=True):
        mine = []
        for idea in ideas:
            best = None
            for j, label in enumerate(turn["knowledge"]):
                if _holds(idea.summary, label, float(similarity[row, offset + j])):
                    best = j
                    break
            mine.append(best)
            row += 1
        verdicts.append(mine)
        offset += len(turn["knowledge"])
    return verdicts


def _share(n: int, total: int) -> str:
    return f"{n} / {total} ({n / total:.0%})" if total else "0 / 0"


def figures(turns: Sequence[dict], found: Sequence[Sequence[Idea]], verdicts: Sequence[Sequence[int | None]]) -> dict:
    memorable = [t for t in turns if t["memorable"]]
    correct = sum(any(v is not None for v in vs) for t, vs in zip(turns, verdicts, strict=True) if t["memorable"])
    others = sum(bool(ideas) for t, ideas in zip(turns, found, strict=True) if not t["memorable"])
    memories = sum(len(ideas) for ideas in found)
    precise = sum(v is not None for vs in verdicts for v in vs)

    def recalled(kind_test) -> tuple[int, int]:
        hit = total = 0
        for t, vs in zip(turns, verdicts, strict=True):
            for j, label in enumerate(t["knowledge"]):
                if kind_test(label):
                    total += 1
                    hit += j in vs
        return hit, total

    facts = recalled(lambda k: k["kind"] == "fact")
    findings = recalled(lambda k: k["side"] == "assistant" and k["kind"] in ("gotcha", "decision"))
    flagged = sum(
        bool(unfaithful(i.summary, i.evidence, turn_text(job_of(t).messages).everything))
        for t, ideas in zip(turns, found, strict=True)
        for i in ideas
    )
    cut = sum(i.summary.rstrip()[-1:] not in ".!?)`\"'" for ideas in found for i in ideas)
    on_traps = sum(len(ideas) for t, ideas in zip(turns, found, strict=True) if on_trap(t))
    return {
        "memorable turns with a correct memory": _share(correct, len(memorable)),
        "other turns with any memory (lower is better)": _share(others, len(turns) - len(memorable)),
        "memories holding a labelled piece (precision)": _share(precise, memories),
        "facts recalled": _share(*facts),
        "the assistant's findings recalled": _share(*findings),
        "memories the faithfulness check flags": str(flagged),
        "memories cut mid-sentence": str(cut),
        "memories from trap turns (system, greeting, persona, scheduled task, self-description)": str(on_traps),
    }


def reading(turns: Sequence[dict], found: Sequence[Sequence[Idea]], verdicts) -> list[list[str]]:
    rows = []
    for t, ideas, vs in zip(turns, found, verdicts, strict=True):
        labelled = " / ".join(f"{k['kind']} ({k['side']}): {k['statement']}" for k in t["knowledge"]) or "(nothing)"
        kept = " / ".join(
            f"{'✓' if v is not None else '✗'} {i.kind.value}: {i.summary}" for i, v in zip(ideas, vs, strict=True)
        )
        rows.append([t["id"], labelled.replace("|", "\\|"), (kept or "(none)").replace("|", "\\|")])
    return rows


def _sources(turn: dict) -> dict[str, list[Idea]]:
    """The path without the model, by the source of each candidate (for the ablation)."""
    text = turn_text(job_of(turn).messages)
    made = lambda pieces: [i for p in pieces if (i := make_idea(p.kind, p.statement, p.evidence, p.role))]  # noqa: E731
    values = values_of(text.user, edited_files(text.other))
    return {
        "the person's pieces (knowledge.pieces_of)": made(pieces_of(text.user)),
        "the assistant's findings (knowledge.findings_of)": made(findings_of(text.assistant)),
        "values a person set (knowledge.values_of)": made([values] if values else []),
        "facts by shape (compose.facts_of)": facts_of(text),
        "what a person says of themselves (compose.disclosed)": disclosed(text),
    }


def ablation(turns: Sequence[dict], split: str = "held_out") -> list[list[str]]:
    """Held-out figures of the path without the model, whole and with each source or check left out: each rule
    family's own held-out figure (a rule that does not move it has nothing to show for itself)."""
    held = [t for t in turns if t["split"] == split]
    by_turn = [_sources(t) for t in held]
    texts = [turn_text(job_of(t).messages) for t in held]
    checks = ("orders for the moment (compose.without_orders)", "faithfulness (faithful.unfaithful)", "the gate")

    def run(without: str) -> list[list[Idea]]:
        found = []
        for sources, text in zip(by_turn, texts, strict=True):
            ideas = distinct([i for name, items in sources.items() if name != without for i in items])
            if without != checks[0]:
                ideas, _ = without_orders(ideas)
            if without != checks[1]:
                ideas = [i for i in ideas if not unfaithful(i.summary, i.evidence, text.everything)]
            if without != checks[2]:
                ideas = gate_with_own_words(ideas, text, gate.keeps)[0]
            found.append(ideas[:5])
        return found

    rows = []
    for without in ("", *by_turn[0], *checks):
        found = run(without)
        got = figures(held, found, judge(held, found))
        rows.append(
            [f"without {without}" if without else "all of it", *(got[m] for m in list(got)[:3]), got[list(got)[3]]]
        )
    return rows


def replay(turns: Sequence[dict], cache: str, checked: TurnOutcome | None = None) -> list[list[Idea]]:
    """The memories the code as it is would store, from the model's answers cached by an earlier run (`cache`, a
    folder of bench/.work/knowledge): the gate before the model spares a turn (its own words only), and the
    checks after the model that do not ask it again (the faithfulness check, `extract.check_faithful`, whose
    recompositions and drops are counted on `checked`; the learned gate) run anew. An estimate in minutes where a
    model run takes an hour: the cached answers were given to the earlier code's prompt."""
    checked = checked if checked is not None else TurnOutcome("", "", status="summarised")
    found = []
    for t in turns:
        text = turn_text(job_of(t).messages)
        if not turn_gate.may_hold_knowledge(text):
            ideas = candidates_without_model(text)
        else:
            cached = json.loads((WORK / cache / f"{t['id']}.json").read_text())["ideas"]
            ideas = distinct(check_faithful([Idea.model_validate(i) for i in cached], text, checked))
        found.append(gate_with_own_words(ideas, text, gate.keeps)[0])
    return found


def main_replay(argv: list[str]) -> None:
    cache = next(a.split("=", 1)[1] for a in argv if a.startswith("--replay="))
    turns = load_turns()
    checked = TurnOutcome("", "", status="summarised")
    found = replay(turns, cache, checked)
    verdicts = judge(turns, found)
    columns = {}
    for split in ("tune", "held_out"):
        at = [n for n, t in enumerate(turns) if t["split"] == split]
        columns[split] = figures([turns[n] for n in at], [found[n] for n in at], [verdicts[n] for n in at])
    measures = list(columns["tune"])
    body = (
        f"The code as it is, replayed on the embedded model's cached answers of run `{cache}` (no model call; "
        "the gate before the model and the checks after it run anew), labels frozen in "
        f"{_labels_commit()}.\n\n"
        + table(["", "tune half", "held-out half"], [[m, columns["tune"][m], columns["held_out"][m]] for m in measures])
        + "\n\nChanged by the faithfulness check, both halves, before the gate: "
        + json.dumps(dict(Counter(why.split(" (")[0] for why, _ in [*checked.recomposed, *checked.dropped])))
    )
    write_section("knowledge (replay)", f"uv run python -m bench knowledge --replay={cache}", body)
    print(body)


def main(argv: list[str]) -> None:
    if any(a.startswith("--replay=") for a in argv):
        main_replay(argv)
        return
    labels = LABEL_SETS[next((a.split("=", 1)[1] for a in argv if a.startswith("--labels=")), "a")]
    if labels != LABELS:
        main_other_set(labels, argv)
        return
    turns = load_turns()
    if "--tune-only" in argv:  # while the code changes: the held-out half is read once, at the end
        turns = [t for t in turns if t["split"] == "tune"]
    rows: dict[str, dict[str, dict]] = {}
    listing: list[list[str]] = []
    runs = {}
    for path, with_model in (("embedded model", True), ("without the model", False)):
        found, run = candidates(turns, with_model)
        runs[path] = run
        verdicts = judge(turns, found)
        kept = as_stored(turns, found)
        kept_verdicts = judge(turns, kept)  # the gate may put the turn's own words in a dropped memory's place
        # The gate over every candidate, as first trained and measured (not what `gate.keeps` does: see there).
        everywhere = [
            [
                (i, v)
                for i, v in zip(ideas, vs, strict=True)
                if gate.score(i, turn_text(job_of(t).messages)) >= gate.threshold()
            ]
            for t, ideas, vs in zip(turns, found, verdicts, strict=True)
        ]
        for split in sorted({t["split"] for t in turns}, reverse=True):
            at = [n for n, t in enumerate(turns) if t["split"] == split]
            part = [[seq[n] for n in at] for seq in (turns, found, verdicts, kept, kept_verdicts)]
            rows.setdefault(split, {})[f"{path}, before the gate"] = figures(part[0], part[1], part[2])
            rows[split][f"{path}, gate on every candidate"] = figures(
                part[0], [[i for i, _ in everywhere[n]] for n in at], [[v for _, v in everywhere[n]] for n in at]
            )
            rows[split][f"{path}, gate on facts (shipped)"] = figures(part[0], part[3], part[4])
            if split == "held_out" and with_model:
                listing = reading(part[0], part[3], part[4])
    # The code before this work on the held-out half, in the same run: without the model always, with it when
    # asked (`--baseline-model`: another half-hour of the model).
    turns_before = [t for t in turns if t["split"] == "held_out"]
    if turns_before:
        for path, found in baseline(turns_before, "--baseline-model" in argv).items():
            verdicts = judge(turns_before, found)
            rows["held_out"] = {path: figures(turns_before, found, verdicts), **rows["held_out"]}
    sections = split_tables(rows, turns)
    run_lines = "\n".join(f"- {path}: {json.dumps(run)}" for path, run in runs.items())
    body = (
        f"{len(turns)} labelled turns ({sum(t['memorable'] for t in turns)} memorable) of "
        f"{', '.join(f'{k} {n}' for k, n in Counter(t['history'] for t in turns).items())}; "
        f"labels frozen in {_labels_commit()}.\n\n" + "\n".join(sections) + f"\n\nRuns:\n{run_lines}\n\n"
        "Held-out memories (embedded model, gated) beside their labels, to be read (✓ holds a labelled piece):\n\n"
        + table(["turn", "labelled", "stored"], listing)
    )
    body += "\n\nThe path without the model, whole and with each source or check left out:\n\n"
    body += table(
        ["", "memorable turns correct", "other turns with any", "precision", "facts"],
        ablation(turns, "tune" if "--tune-only" in argv else "held_out"),
    )
    write_section("knowledge", "uv run python -m bench knowledge", body)
    print(body)


def split_tables(rows: dict[str, dict[str, dict]], turns: Sequence[dict]) -> list[str]:
    """Each half's heading and its table: a row per measure, a column per path."""
    sections = []
    for split, by_path in rows.items():
        names = list(by_path)
        measures = list(next(iter(by_path.values())))
        sections.append(f"### {split.replace('_', '-')} half ({sum(t['split'] == split for t in turns)} turns)\n")
        sections.append(table(["", *names], [[m, *(by_path[n][m] for n in names)] for m in measures]))
    return sections


def ceiling(turns: Sequence[dict]) -> str:
    """What any filter could reach with today's candidates: a labelled piece counts when any candidate holds it,
    from the path without the model or from any cached answer of the embedded model (every code version, the
    checks run anew), before the gates. A filter only removes; a memorable turn no candidate covers stays missed."""
    caches = _caches()
    rows = []
    for split in ("tune", "held_out"):
        have, total = Counter(), Counter()
        covered = memorable = 0
        for t in (t for t in turns if t["split"] == split):
            text = turn_text(job_of(t).messages)
            found = distinct(candidates_without_model(text) + model_candidates(t, caches)[0])
            [verdicts] = judge([t], [found])
            got = {v for v in verdicts if v is not None}
            for n, piece in enumerate(t["knowledge"]):
                kind = f"{piece['kind']} ({piece['side']})"
                total[kind] += 1
                have[kind] += n in got
            memorable += bool(t["memorable"])
            covered += bool(t["memorable"] and got)
        rows.append([split, "memorable turns with a candidate holding a piece", _share(covered, memorable)])
        rows += [[split, kind, _share(have[kind], total[kind])] for kind in sorted(total)]
    return (
        f"\n\nThe ceiling of today's candidates (every source, the model's answers of {len(caches)} cached runs, "
        "before the gates: no filter can keep what no candidate holds):\n\n"
        + table(["half", "labelled pieces", "held by a candidate"], rows)
    )


def main_other_set(labels: Path, argv: list[str]) -> None:
    """Another frozen set (`--labels=b`): each half, the path without the model and (unless `--no-model`) the
    embedded model's gated memories, as the pipeline stores them; the held-out memories listed to be read. The
    filters are never trained here (`bench keep`)."""
    turns = load_turns(labels)
    if "--fill-answers" in argv:
        fill_answers(turns)
        return
    if "--held-out-only" in argv:  # the figure to report, in half the model's time
        turns = [t for t in turns if t["split"] == "held_out"]
    paths = [("without the model", False)] + ([] if "--no-model" in argv else [("embedded model", True)])
    rows: dict[str, dict[str, dict]] = {}
    listings: dict[str, list[list[str]]] = {}
    runs = {}
    for path, with_model in paths:
        found, run = candidates(turns, with_model)
        runs[path] = run
        kept = as_stored(turns, found)
        verdicts = judge(turns, kept)
        for split in sorted({t["split"] for t in turns}, reverse=True):
            at = [n for n, t in enumerate(turns) if t["split"] == split]
            part = [[seq[n] for n in at] for seq in (turns, kept, verdicts)]
            rows.setdefault(split, {})[f"{path}, as stored"] = figures(*part)
            if split == "held_out":
                listings[path] = reading(*part)
    sections = split_tables(rows, turns)
    body = (
        f"Set `{labels.name}`: {len(turns)} labelled turns ({sum(t['memorable'] for t in turns)} memorable) of "
        f"{', '.join(f'{k} {n}' for k, n in Counter(t['history'] for t in turns).items())}; "
        f"labels frozen in {_labels_commit(labels)}, before any code was run on them.\n\n"
        + "\n".join(sections)
        + "\n\nRuns:\n"
        + "\n".join(f"- {path}: {json.dumps(run)}" for path, run in runs.items())
        + ("" if "--held-out-only" in argv else ceiling(turns))
        + "\n\nThe path without the model on the held-out half, whole and with each source or check left out (each "
        "rule family's held-out figure on this set):\n\n"
        + table(["", "memorable turns correct", "other turns with any", "precision", "facts"], ablation(turns))
    )
    for path, listing in listings.items():
        body += (
            f"\n\nHeld-out memories ({path}, as stored) beside their labels, to be read (✓ holds a labelled piece):\n\n"
        )
        body += table(["turn", "labelled", "stored"], [r for r in listing if r[1] != "(nothing)" or r[2] != "(none)"])
    flags = [a for a in ("--no-model", "--held-out-only") if a in argv]
    name = next(k for k, path in LABEL_SETS.items() if path == labels)
    command = " ".join([f"uv run python -m bench knowledge --labels={name}", *flags])
    write_section(f"knowledge ({labels.stem})", command, body)
    print(body)


def _labels_commit(labels: Path = LABELS) -> str:
    found = subprocess.run(
        ["git", "log", "-1", "--format=%h", "--", str(labels.relative_to(ROOT))],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    return found.stdout.strip() or "(not committed)"
