"""The needs corpus: three projects of 100 pi sessions each over six months of 2023, where later sessions need, step
by step, what earlier ones learned (bench/corpus/needs/ and its labels bench/labels/needs.json).

    uv run python -m testkit.corpora.make_needs_corpus

Each project (a Python API, a TypeScript web app, a Go ops tool; words in needs_vocabulary.py) has 26
components and, for each, seven pieces of knowledge: the port its service listens on, the command that
resets its data, the queue its jobs go through, the client helper a rule makes mandatory, a second rule,
a decision with the choice it was preferred to, and a root cause its tests fail on (with the fix). Twelve
decisions a project are replaced months later by another choice: 194 pieces a project, far more than a
session's budget (the perfect statements of one project hold about 6,000 tokens).

Knowledge is planted in ordinary turns in the words a person uses (a rule said, a fact looked up with a
tool, a failing test whose cause the assistant finds), never as the labels' statements. From the 9th
session on, each session is a sequence of steps (its first prompt, files the agent reads, a test command
that fails, follow-up prompts), and each step carries the needs that arise there: the pieces, as they stand
when the session starts (a replaced decision's newer choice, never the old one), that an earlier session
holds. What happens after a step is written as it would go: sometimes the agent just uses the knowledge,
sometimes the person has to restate it, sometimes the assistant finds it again.

A need is met by an injected line that names it (`match`: any keyword set, every word in the line,
case-insensitive); a replaced decision shown as current is a line matching its `stale` set and not its
successor's `match`; a port fact shown with another port is a statement no evidence supports.

Split: the held-out third is one whole project (the one whose folder's sha1 is smallest); the labels were
written and committed before any harness code (bench/needs.py) existed.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from testkit.corpora.make_reflect_corpus import Session
from testkit.corpora.needs_vocabulary import FILLER, GOTCHAS, NOUNS, PROJECTS, RULES, VERBS, Project
from testkit.paths import CORPUS, LABELS

OUT = CORPUS / "needs"
LABELS_FILE = LABELS / "needs.json"
START = datetime(2023, 1, 9, 9, 0, tzinfo=UTC)  # a year no other corpus uses: its days are its own in the indices
SESSIONS = 100
GAP_DAYS = 2  # a session of each project every other day: January to early July
FIRST_NUMBER = 46001
FIRST_LATER = 8  # sessions before this one only plant knowledge
REPLACED = 12  # decisions of a project replaced later
SEED = 46


@dataclass
class Piece:
    key: str
    kind: str  # rule | decision | gotcha | fact
    component: str
    statement: str  # what a perfect memory says
    user: str  # what the person says when it is planted
    assistant: str  # what the assistant answers
    match: list[list[str]]
    files: list[str] = field(default_factory=list)  # files (relative to the project) it concerns
    tool: tuple[str, dict, str, bool] | None = None
    stale: list[list[str]] = field(default_factory=list)
    replaces: str | None = None
    port: int | None = None  # a port fact's value (a line naming its service with another port is unsupported)
    restate: str = ""  # how the person says it again when the agent got it wrong


def _fill(text: str, **words: object) -> str:
    return text.format(**words)


def pieces_of(project: Project, rng: random.Random, ports: set[int]) -> dict[str, Piece]:
    """The project's pieces of knowledge (seven a component, then the replacing decisions)."""
    lang = project.language
    found: dict[str, Piece] = {}
    decisions: list[tuple[str, int, str, str]] = []
    for c, comp in enumerate(project.components):
        cap = comp.capitalize()
        up = comp.upper()
        words = {"comp": comp, "Comp": cap, "COMP": up}
        source = _fill(lang.source, **words)
        config = _fill(lang.config, **words)
        test = _fill(lang.test, **words)
        helper = _fill(lang.helper, **words)
        id_helper = _fill(lang.id_helper, **words)
        port = rng.choice([p for p in range(3100, 9900) if p not in ports and p % 100 not in (0, 80)])
        ports.add(port)
        key = f"{project.name}-{comp}"
        found[f"{key}-port"] = Piece(
            f"{key}-port", "fact", comp,
            f"The {comp} service listens on port {port} in development (set in `{config}`).",
            f"what port does the {comp} service listen on locally?",
            f"The {comp} service listens on port {port} locally; it is set in `{config}`.",
            [[str(port)]], [config],
            tool=("read", {"path": config}, f"{up}_PORT={port}\n{up}_LOG_LEVEL=info\n", False),
            port=port, restate=f"the {comp} service is on {port}, not the default port",
        )  # fmt: skip
        verb = VERBS[c % len(VERBS)]
        command = f"make {verb}-{comp}"
        found[f"{key}-command"] = Piece(
            f"{key}-command", "fact", comp,
            f"`{command}` resets the {comp} data of the dev database ({verb}).",
            f"the {comp} data in my dev database is garbage, how do I {verb} it?",
            f"Use `{command}`: it drops the {comp} tables' rows and loads them again. I ran it and the {comp} "
            "rows look right now.",
            [[f"{verb}-{comp}"]], ["Makefile"],
            tool=("bash", {"command": f"grep -n {comp} Makefile"},
                  f"41:{verb}-{comp}:\n42:\t./scripts/{verb}.sh {comp}", False),
            restate=f"use {command} for that, we went through this",
        )  # fmt: skip
        noun = NOUNS[c % len(NOUNS)]
        queue = f"{project.name}.{comp}.{noun}"
        found[f"{key}-queue"] = Piece(
            f"{key}-queue", "fact", comp,
            f"{cap} {noun} go through the queue `{queue}`.",
            f"where do the {comp} {noun} go? i can't find them in the broker",
            f"They are published on the queue `{queue}` (see `{config}`).",
            [[queue]], [config],
            tool=("bash", {"command": f"grep -rn {noun} {config}"}, f"{up}_QUEUE={queue}", False),
            restate=f"the queue is {queue}",
        )  # fmt: skip
        found[f"{key}-helper"] = Piece(
            f"{key}-helper", "rule", comp,
            f"Calls to the {comp} API go through `{helper}()` in `{source}` (auth and retries), never a raw client.",
            f"don't call the {comp} api with a raw client. always use {helper}() from {source}, it adds the auth "
            "header and the retries",
            f"Understood: I switched the two raw calls to `{helper}()`.",
            [[helper.lower()]], [source], restate=f"again, go through {helper}() for the {comp} api",
        )  # fmt: skip
        said, statement, token = RULES[c % len(RULES)]
        rule_words = {**words, "id_helper": id_helper}
        found[f"{key}-rule"] = Piece(
            f"{key}-rule", "rule", comp, _fill(statement, **rule_words), _fill(said, **rule_words),
            "Noted; I fixed the two places that did not.", [[_fill(token, **rule_words).lower()]], [source],
            restate=_fill(said, **rule_words),
        )  # fmt: skip
        purpose = lang.purposes[c % len(lang.purposes)]
        old, alt, new = rng.sample(purpose.options, 3)
        reason = rng.choice(purpose.reasons)
        found[f"{key}-decision"] = Piece(
            f"{key}-decision", "decision", comp,
            f"{cap} uses {old} for {purpose.name}, not {alt} ({reason}).",
            f"for {purpose.name} in {comp} let's use {old}, not {alt}, {reason}",
            f"Set up {old} for {purpose.name} in `{source}`.",
            [[comp, old]], [source], restate=f"no, {comp} uses {old} for {purpose.name}",
        )  # fmt: skip
        decisions.append((comp, c, new, reason))
        error, cause, fix, token = GOTCHAS[c % len(GOTCHAS)]
        stub = 18000 + c * 7 + len(project.name)
        gwords = {**words, "port": stub}
        found[f"{key}-gotcha"] = Piece(
            f"{key}-gotcha", "gotcha", comp,
            f"`{test}` fails with \"{_fill(error, **gwords)}\" because {_fill(cause, **gwords)}: "
            f"{_fill(fix, **gwords)}.",
            f"the {comp} tests fail, can you look?",
            f"Found it: {_fill(cause, **gwords)}. The fix: {_fill(fix, **gwords)}; the suite passes now.",
            [[_fill(token, **gwords).lower()]], [f"tests/{comp}"],
            tool=("bash", {"command": test}, f"FAILED: {_fill(error, **gwords)}", True),
            restate=f"that's the {comp} thing again, {_fill(fix, **gwords)}",
        )  # fmt: skip
    for comp, c, new, _reason in rng.sample(decisions, REPLACED):
        purpose = lang.purposes[c % len(lang.purposes)]
        before = found[f"{project.name}-{comp}-decision"]
        old = before.match[0][1]
        source = before.files[0]
        key = f"{project.name}-{comp}-decision-2"
        found[key] = Piece(
            key, "decision", comp,
            f"{comp.capitalize()} now uses {new} for {purpose.name} (it replaced {old}).",
            f"we're moving {purpose.name} in {comp} from {old} to {new}, {old} got in the way",
            f"Replaced {old} with {new} in `{source}`; the tests pass.",
            [[comp, new]], [source], stale=[[comp, old]], replaces=before.key,
            restate=f"{comp} is on {new} now, not {old}",
        )  # fmt: skip
    return found


@dataclass
class Step:
    event: str  # prompt | file | error
    text: str  # the prompt, the file's path (relative to the project), or the command and its error
    needs: list[str]
    said_after: list[tuple[str, str]]  # (role, text) written after the step in the session


TASKS = (
    "Clean up the {comp} module, it has grown messy.",
    "Add an endpoint that returns the {comp} summary.",
    "There's a bug report about {comp}, the totals look off.",
    "Extend the {comp} code to handle the new partner.",
)


def later_steps(project: Project, rng: random.Random, known: dict[str, Piece], current: dict[str, str]) -> list[Step]:
    """A later session's steps around one or two components whose knowledge is known, with their needs."""
    comps = sorted({p.component for p in known.values()})
    focus = rng.sample(comps, min(len(comps), rng.choice((1, 1, 2))))
    lang = project.language
    steps: list[Step] = []

    def have(comp: str, what: str) -> Piece | None:
        key = current.get(f"{project.name}-{comp}-{what}")
        return known.get(key) if key else None

    def after(piece: Piece) -> list[tuple[str, str]]:
        roll = rng.random()
        if roll < 0.4:
            return [("assistant", "Done; the tests pass.")]
        if roll < 0.7:
            return [("assistant", "Done, I think."), ("user", piece.restate), ("assistant", "Right, fixed that.")]
        return [("assistant", f"Done. {piece.assistant}")]

    for n, comp in enumerate(focus):
        words = {"comp": comp, "Comp": comp.capitalize()}
        decision = have(comp, "decision")
        purpose = lang.purposes[project.components.index(comp) % len(lang.purposes)]
        if decision and rng.random() < 0.7:
            text = rng.choice(purpose.tasks).format(**words)
            steps.append(Step("prompt", text, [decision.key], after(decision)))
        elif n == 0:
            text = rng.choice(TASKS).format(**words)
            steps.append(Step("prompt", text, [], [("assistant", "Looking at it.")]))
        else:
            steps.append(Step("prompt", f"Now the same for {comp}.", [], [("assistant", "On it.")]))
        rules = [p for p in (have(comp, "helper"), have(comp, "rule")) if p]
        if rng.random() < 0.8:
            needs = rules + ([decision] if decision and not steps[-1].needs else [])
            said = after(needs[0]) if needs else [("assistant", "Read it.")]
            steps.append(Step("file", lang.source.format(**words), [p.key for p in needs], said))
        gotcha = have(comp, "gotcha")
        if gotcha and rng.random() < 0.6:
            assert gotcha.tool
            error = f"{gotcha.tool[1]['command']}\n{gotcha.tool[2]}"
            steps.append(Step("error", error, [gotcha.key], after(gotcha)))
        facts = [p for p in (have(comp, "port"), have(comp, "command"), have(comp, "queue")) if p]
        if facts and rng.random() < 0.7:
            fact = rng.choice(facts)
            ask = {
                "port": f"I want to curl the {comp} service locally, how do I reach it?",
                "command": f"The {comp} rows in my dev database are broken again, reset them.",
                "queue": f"Some {comp} messages seem stuck, check the broker for them.",
            }[fact.key.rsplit("-", 1)[1]]
            steps.append(Step("prompt", ask, [fact.key], after(fact)))
    return steps


def held_out_project() -> str:
    return min((p.cwd for p in PROJECTS), key=lambda cwd: hashlib.sha1(cwd.encode()).hexdigest())


def build(out: Path = OUT, labels_file: Path = LABELS_FILE) -> dict:
    rng = random.Random(SEED)
    if out.exists():
        shutil.rmtree(out)
    held = held_out_project()
    labels: dict = {"budget_tokens": 1500, "held_out_project": held, "projects": {}, "sessions": []}
    ports: set[int] = set()
    number = FIRST_NUMBER
    for p, project in enumerate(PROJECTS):
        pieces = pieces_of(project, rng, ports)
        originals = [k for k, piece in pieces.items() if not piece.replaces]
        rng.shuffle(originals)
        # A decision replaced later is made in the first half of the history, so its successor comes months on.
        early = 100
        for key in [p.replaces for p in pieces.values() if p.replaces]:
            at = originals.index(key)
            if at >= early:
                swap = rng.choice(
                    [i for i in range(early) if not any(q.replaces == originals[i] for q in pieces.values())]
                )
                originals[at], originals[swap] = originals[swap], originals[at]
        # Six pieces in each of the first twelve sessions, then one or two a session.
        plan: list[list[str]] = [[] for _ in range(SESSIONS)]
        for i, key in enumerate(originals[:72]):
            plan[i // 6].append(key)
        for i, key in enumerate(originals[72:]):
            plan[12 + (i * (SESSIONS - 13)) // len(originals[72:])].append(key)
        where = {key: i for i, keys in enumerate(plan) for key in keys}
        for key, piece in pieces.items():
            if piece.replaces:
                plan[rng.randint(max(where[piece.replaces] + 15, 25), SESSIONS - 5)].append(key)
        planted: dict[str, str] = {}  # key -> session id that planted it
        planted_day: dict[str, str] = {}
        current: dict[str, str] = {}  # a piece's first key -> the key that holds now
        for i in range(SESSIONS):
            started = START + timedelta(days=i * GAP_DAYS, hours=p * 3 + rng.randint(0, 2))
            session = Session(rng, number, started, cwd=project.cwd)
            number += 1
            known = {k: pieces[k] for k in planted}
            steps = later_steps(project, rng, known, current) if i >= FIRST_LATER else []
            for step in steps:
                if step.event == "prompt":
                    session.user(step.text)
                elif step.event == "file":
                    session.tool("read", {"path": step.text}, _source_text(step.text), False)
                else:
                    command, error = step.text.split("\n", 1)
                    session.tool("bash", {"command": command}, error, True)
                for role, text in step.said_after:
                    (session.user if role == "user" else session.assistant)(text)
            for key in plan[i]:
                piece = pieces[key]
                session.user(piece.user)
                if piece.tool:
                    session.tool(*piece.tool)
                session.assistant(piece.assistant)
            task, reply = FILLER[i % len(FILLER)]
            session.user(task.format(comp=rng.choice(project.components)))
            session.assistant(reply)
            session.write(out / "sessions")
            if steps:
                labels["sessions"].append(
                    {
                        "session_id": session.id,
                        "project": project.cwd,
                        "day": session.day,
                        "split": "held_out" if project.cwd == held else "tune",
                        "steps": [{"event": s.event, "text": s.text, "needs": s.needs} for s in steps],
                    }
                )
            for key in plan[i]:
                planted[key] = session.id
                planted_day[key] = session.day
                replaced = pieces[key].replaces
                current[replaced or key] = key
        labels["projects"][project.cwd] = {
            key: {k: v for k, v in asdict(piece).items() if k not in ("user", "assistant", "tool", "restate")}
            | {"planted_in": planted[key], "planted_day": planted_day[key]}
            for key, piece in pieces.items()
        }
    _check(labels)
    labels_file.parent.mkdir(parents=True, exist_ok=True)
    labels_file.write_text(json.dumps(labels, indent=1) + "\n")
    return labels


def _source_text(path: str) -> str:
    """A file's content as the read tool returns it: ordinary code that does not state the knowledge."""
    stem = Path(path).stem
    if path.endswith(".py"):
        return f'"""Handlers for {stem}."""\n\n\ndef list_items(params):\n    return fetch_all(params)\n'
    if path.endswith(".go"):
        body = "func List(p Params) ([]Item, error) {\n\treturn fetchAll(p)\n}\n"
        return f"// Package {stem} handles {stem}.\npackage {stem}\n\n{body}"
    return f"// {path}\nexport function {stem}(props: Props) {{\n  return <Table rows={{props.rows}} />;\n}}\n"


def _check(labels: dict) -> None:
    """Every need is planted before its session; no piece's match names another piece's statement."""
    for session in labels["sessions"]:
        pieces = labels["projects"][session["project"]]
        for step in session["steps"]:
            for key in step["needs"]:
                assert pieces[key]["planted_day"] < session["day"], f"{session['session_id']}: {key} not yet known"
                replacing = [k for k, p in pieces.items() if p["replaces"] == key]
                assert not replacing or pieces[replacing[0]]["planted_day"] >= session["day"], f"{key} is replaced"
    for project, pieces in labels["projects"].items():
        for key, piece in pieces.items():
            for other, o in pieces.items():
                if other == key or key == o["replaces"] or other == piece["replaces"]:
                    continue
                low = o["statement"].lower()
                hit = any(all(w.lower() in low for w in words) for words in piece["match"])
                assert not hit, f"{project}: {key}'s match names {other}: {o['statement']}"


if __name__ == "__main__":
    made = build()
    needs = sum(len(s["needs"]) for later in made["sessions"] for s in later["steps"])
    held = [s for s in made["sessions"] if s["split"] == "held_out"]
    print(
        f"{OUT}: {len(PROJECTS) * SESSIONS} sessions, {sum(len(p) for p in made['projects'].values())} pieces, "
        f"{len(made['sessions'])} later sessions with {needs} needs ({len(held)} held out: {made['held_out_project']})"
    )
