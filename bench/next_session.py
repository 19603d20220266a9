"""Next-session benefit: does a later session get, in its briefing, what it needs from the earlier ones?

    uv run python -m bench next_session              # LLM-free, the local model, and the plain baseline
    uv run python -m bench next_session --no-llm     # LLM-free and the baseline only (minutes, no chat server)
    uv run python -m bench next_session --dump=/tmp/briefings.json   # and every briefing beside its needs

On the next-session corpus (bench/corpus/next_session, made by testkit/corpora/make_next_session_corpus.py: 45 sessions
of three projects over five months, 39 later sessions with labelled needs), the pipeline's own assets run day
by day in time order. Before a day is ingested, every later session starting that day gets the briefing the
pi extension would get (`build_briefing` with its first prompt, its project, 800 tokens: what
`/api/v1/briefing` answers), built from the sessions before it only. Measured per later session:

- coverage: its needs named by some briefing line (a need's keyword sets, `match` in labels.json);
- noise: briefing lines that name none of its needs;
- staleness: lines showing a replaced decision as current (its old choice, not the new one);
- cut lines: lines cut mid-text ("…" outside a marked " […]" sentence cut);
- recall@5: its first question through search finds a session holding the answer in the top 5.

Variants: `llm-free` (ingest, observations, embeddings: no chat model), `local-model` (the whole daily job:
memories from the chat server, reflections with their supersession marks, ages counted from each day), and
`baseline` (the project's most recent user messages, newest first, whole, within the same 800 tokens), and
`ceiling` (each labelled piece of knowledge written out by hand as a perfect memory, `statements.json`, known
from the day a session before held it, picked for the prompt by the embedding model and the task's tools, or
by the chat model shown the prompt and every note: how far the selection alone goes when extraction makes no
mistake).
Each pipeline variant is briefed under every policy of `POLICIES` at the same moment (what earns a line:
the newest high memories, of which kinds, guesses below the relevance floor, observations); `default` is
the one the extension gets, chosen on the tune split.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from dagster import materialize

from bench.results_file import table, write_section
from memory_pipeline.assets import reflect
from memory_pipeline.language.topics import task_topics, topics_of
from memory_pipeline.partitions import instance_with_days
from memory_pipeline.resources import build_resources
from memory_pipeline.search.briefing import DEFAULT_POLICY, BriefingPolicy, build_briefing, tokens
from memory_pipeline.search.models import Filters
from memory_pipeline.search.open import open_search
from memory_pipeline.sessions.discovery import scan_sessions
from memory_pipeline.settings import Settings, isolated_settings, load_settings
from memory_pipeline.stores.elasticsearch import delete_days, make_client
from memory_pipeline.stores.indices import PIPELINE_INDICES
from memory_pipeline.stores.llm import ChatClient, chat_client
from testkit.corpora.make_next_session_corpus import OUT as CORPUS
from testkit.ingest_helpers import MEMORY_ASSETS, RECALL_ASSETS

BUDGET = 800
LLM_FREE = RECALL_ASSETS
LOCAL_MODEL = [*MEMORY_ASSETS, reflect.daily_log, reflect.reflections]
_CUT = re.compile(r"…(?!\])")


@dataclass
class Scored:
    session: dict
    lines: list[str]
    covered: list[str]
    noise: int
    stale: int
    cut: int
    found: bool


@dataclass
class Variant:
    name: str
    scored: list[Scored] = field(default_factory=list)
    seconds: float = 0.0


def labels() -> dict:
    return json.loads((CORPUS / "labels.json").read_text())


def _names(line: str, sets: list[list[str]]) -> bool:
    low = line.lower()
    return any(all(word.lower() in low for word in words) for words in sets)


def score(session: dict, markdown: str, knowledge: dict, replaced: set[str], found: bool) -> Scored:
    """One later session's briefing against its needs (see the module's doc)."""
    lines = [line for line in markdown.splitlines() if line.startswith("- ")]
    needs = {key: knowledge[key] for key in session["needs"]}
    covered = [key for key, k in needs.items() if any(_names(line, k["match"]) for line in lines)]
    noise = sum(not any(_names(line, k["match"]) for k in needs.values()) for line in lines)
    stale = sum(
        1
        for key in replaced
        for line in lines
        if _names(line, knowledge[key]["stale"]) and not _names(line, knowledge[key]["match"])
    )
    cut = sum(bool(_CUT.search(line)) for line in lines)
    return Scored(session, lines, covered, noise, stale, cut, found)


def _replaced_before(session: dict, knowledge: dict, planted: dict[str, str]) -> set[str]:
    """The replacing decisions of this project already made when the session starts."""
    return {key for key, k in knowledge.items() if k["replaces"] and planted.get(key, "9999") < session["day"]}


def _planted_days(truth: dict) -> dict[str, str]:
    """The day each piece of knowledge was first planted: the first answer session naming it, else the day
    of the first later session that needs it (every need is planted before its session)."""
    first: dict[str, str] = {}
    for session in sorted(truth["sessions"], key=lambda s: s["day"]):
        for key in session["needs"]:
            first.setdefault(key, session["day"])
    return first


def baseline_briefing(user_messages: list[str]) -> str:
    """The project's most recent user messages, newest first, whole, within the budget."""
    text = "## Recent messages in this project\n"
    for message in user_messages:
        line = f"- {' '.join(message.split())}\n"
        if tokens(text + line) <= BUDGET:
            text += line
    return text


def _user_messages_by_session(folder: Path, answers: bool = False) -> dict[str, tuple[str, str, list[str]]]:
    """session id -> (project, day, its user messages (with `answers`, the assistant's too)), from the files."""
    found = {}
    for path in sorted(folder.rglob("*.jsonl")):
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        header = lines[0]
        said = [
            block["text"]
            for entry in lines[1:]
            if entry.get("type") == "message"
            and entry["message"]["role"] in (("user", "assistant") if answers else ("user",))
            for block in entry["message"]["content"]
            if block.get("type") == "text"
        ]
        found[header["id"]] = (header["cwd"], header["timestamp"][:10], said)
    return found


def run_baseline(truth: dict) -> Variant:
    variant = Variant("baseline (last user messages)")
    sessions = _user_messages_by_session(CORPUS / "sessions")
    for session in truth["sessions"]:
        before = sorted(
            (day, msgs) for sid, (project, day, msgs) in sessions.items()
            if project == session["project"] and day < session["day"]
        )  # fmt: skip
        newest_first = [m for _, msgs in reversed(before) for m in reversed(msgs)]
        knowledge = truth["projects"][session["project"]]
        replaced = _replaced_before(session, knowledge, _planted_days(truth))
        variant.scored.append(score(session, baseline_briefing(newest_first), knowledge, replaced, False))
    return variant


def perfect_memories() -> dict[str, str]:
    """Each labelled piece of knowledge written out by hand as a perfect memory would say it (statements.json)."""
    written = json.loads((CORPUS / "statements.json").read_text())
    return {key: text for key, text in written.items() if not key.startswith("_")}


def known_before(truth: dict) -> Iterator[tuple[dict, dict, list[str], set[str]]]:
    """Each later session with its project's knowledge, the pieces an earlier session of its project held (a
    replaced decision gone: what a perfect memory would offer it), and the replaced decisions it must not be
    shown as current."""
    planted = _planted_days(truth)
    history = [
        (project, day, " ".join(said).lower())
        for project, day, said in _user_messages_by_session(CORPUS / "sessions", True).values()
    ]
    for session in truth["sessions"]:
        knowledge = truth["projects"][session["project"]]
        before = [text for project, day, text in history if project == session["project"] and day < session["day"]]
        known = [k for k in knowledge if any(_names(text, knowledge[k]["match"]) for text in before)]
        replaced = {knowledge[k]["replaces"] for k in known if knowledge[k]["replaces"]}
        yield session, knowledge, [k for k in known if k not in replaced], _replaced_before(session, knowledge, planted)


# How the ceiling picks among perfect memories: the whole project, or what the briefing's own rules would keep.
CEILING = {
    "every piece known by then": lambda cos, on_topic, rank: True,
    "close (0.3)": lambda cos, on_topic, rank: cos >= 0.3,
    "close (0.3) or on the task's tools": lambda cos, on_topic, rank: cos >= 0.3 or on_topic,
    "close (0.2) or on the task's tools": lambda cos, on_topic, rank: cos >= 0.2 or on_topic,
    "the 2 closest": lambda cos, on_topic, rank: rank < 2,
    "the closest, or on the task's tools": lambda cos, on_topic, rank: rank < 1 or on_topic,
}


PICKER = "picked by the chat model"


def chat_picks(client: ChatClient, prompt: str, notes: list[str]) -> list[int]:
    """Which of the numbered notes the chat model says the task needs (at most 3, constrained to the numbers
    shown): whether the local model can do the selection the embedding cannot."""
    numbered = "\n".join(f"{i + 1}. {note}" for i, note in enumerate(notes))
    ids = [str(i + 1) for i in range(len(notes))]
    schema = {
        "type": "object",
        "properties": {"needed": {"type": "array", "items": {"type": "string", "enum": ids}, "maxItems": 3}},
        "required": ["needed"],
        "additionalProperties": False,
    }
    messages = [
        {
            "role": "system",
            "content": "You pick which project notes a coding agent must know before doing a task. Pick only "
            "notes the task will actually touch; pick none if none apply.",
        },
        {"role": "user", "content": f"Project notes:\n{numbered}\n\nTask: {prompt}\n\nWhich notes does the "
         "agent need for this task? Answer with their numbers."},
    ]  # fmt: skip
    answer = client.complete_json(messages, schema, name="pick", max_tokens=64)
    return sorted({int(i) - 1 for i in answer.data["needed"]})


def run_ceiling(settings: Settings, truth: dict, llm: bool = True) -> list[Variant]:
    """Perfect memories (`statements.json`: each labelled piece written out by hand), as each later session
    could know them (planted before it, a replaced decision gone), picked for its prompt by the embedding model
    and the task's tools, and (with `llm`) by the chat model given the prompt and every note: how far
    selection alone goes when extraction makes no mistake."""
    from memory_pipeline.stores.embeddings import embeddings_client

    written = perfect_memories()
    variants = {name: Variant(f"ceiling (perfect memories), {name}") for name in [*CEILING, *[PICKER] * llm]}
    with embeddings_client(settings) as client, chat_client(settings) as chat:
        vectors = dict(zip(written, client.embed(list(written.values())), strict=True))
        for session, knowledge, known, stale in known_before(truth):
            [query] = client.embed([session["prompt"]], purpose="query")
            wanted = set(task_topics(session["prompt"]))
            # The client's vectors are unit vectors: the cosine is the dot product (as in reflect.similarity).
            close = {k: sum(x * y for x, y in zip(query, vectors[k], strict=True)) for k in known}
            on_topic = {k: bool(wanted & set(topics_of(written[k]))) for k in known}
            ranked = sorted(known, key=lambda k: -close[k])
            for name, keep in CEILING.items():
                lines = [f"- {written[k]}" for rank, k in enumerate(ranked) if keep(close[k], on_topic[k], rank)]
                variants[name].scored.append(score(session, "\n".join(lines), knowledge, stale, False))
            if llm and known:
                picked = [known[i] for i in chat_picks(chat, session["prompt"], [written[k] for k in known])]
                lines = [f"- {written[k]}" for k in picked]
                variants[PICKER].scored.append(score(session, "\n".join(lines), knowledge, stale, False))
            elif llm:
                variants[PICKER].scored.append(score(session, "", knowledge, stale, False))
    return list(variants.values())


# The briefing policies measured at every step (DEFAULT is what the pi extension gets).
POLICIES = {
    "default": DEFAULT_POLICY,
    "with guesses": BriefingPolicy(guesses=True),
    "no important section": BriefingPolicy(important=0),
    "no low line beside memories": BriefingPolicy(filler_alone=True),
    "low lines beside memories, 3 at most": BriefingPolicy(filler=3),
    "important only when close (0.2)": BriefingPolicy(important_floor=0.2),
    "important only when close (0.3)": BriefingPolicy(important_floor=0.3),
    "important only when close (0.4)": BriefingPolicy(important_floor=0.4),
    "important when close (0.3), related at 0.45": BriefingPolicy(important_floor=0.3, related_floor=0.45),
    "important when close (0.3), 2 low lines": BriefingPolicy(important_floor=0.3, filler=2),
    "important when close (0.3), 2 low lines, no top-3": BriefingPolicy(important_floor=0.3, filler=2, top_memories=0),
    "important when close (0.3) or on the task's tools": BriefingPolicy(important_floor=0.3, topics=True),
    "important when close (0.4) or on the task's tools": BriefingPolicy(important_floor=0.4, topics=True),
    "important when close (0.3) or on the task's tools, 2 low lines": BriefingPolicy(
        important_floor=0.3, topics=True, filler=2
    ),
    "important when close (0.3) or on the task's tools, related at 0.45": BriefingPolicy(
        important_floor=0.3, topics=True, related_floor=0.45
    ),
}


def run_pipeline(settings: Settings, truth: dict, assets: list, name: str) -> list[Variant]:
    """The assets day by day over the corpus; each later session briefed (once per policy) before its own
    day is ingested."""
    variants = {policy: Variant(f"{name}, {policy}") for policy in POLICIES}
    days = sorted({found.partition for found in scan_sessions(settings.sessions_dir)[0]})
    by_day = defaultdict(list)
    for session in truth["sessions"]:
        by_day[session["day"]].append(session)
    planted = _planted_days(truth)
    with make_client(settings) as es:
        delete_days(es, PIPELINE_INDICES, days)
    begin = time.perf_counter()
    done: list[str] = []
    for day in days:
        with open_search(settings) as search:
            for session in by_day.get(day, []):
                project = session["project"]
                rows = search.index(session["question"], k=5, filters=Filters(project=project)) if done else []
                found = any(r.session_id in session["answer_sessions"] for r in rows[:5])
                knowledge = truth["projects"][project]
                replaced = _replaced_before(session, knowledge, planted)
                for policy, variant in variants.items():
                    made = build_briefing(
                        search,
                        session["prompt"],
                        BUDGET,
                        project,
                        workspace=settings.memory_workspace,
                        policy=POLICIES[policy],
                    )
                    variant.scored.append(score(session, made.markdown, knowledge, replaced, found))
        done.append(day)
        run_day(name, assets, settings, day, done)
        print(f"  {name}: {day} done ({len(done)}/{len(days)})", flush=True)
    for variant in variants.values():
        variant.seconds = time.perf_counter() - begin
    return list(variants.values())


def _share(part: float, whole: float) -> str:
    return f"{part / whole:.3f}" if whole else "-"


def figures(variant: Variant, split: str | None) -> dict[str, str]:
    scored = [s for s in variant.scored if split is None or s.session["split"] == split]
    needs = sum(len(s.session["needs"]) for s in scored)
    lines = sum(len(s.lines) for s in scored)
    return {
        "coverage": _share(sum(len(s.covered) for s in scored), needs),
        "noise": _share(sum(s.noise for s in scored), lines),
        "stale": str(sum(s.stale for s in scored)),
        "cut": str(sum(s.cut for s in scored)),
        "recall@5": _share(sum(s.found for s in scored), len(scored)),
        "lines": f"{lines / len(scored):.1f}" if scored else "-",
    }


def by_kind(variant: Variant, truth: dict, split: str | None) -> dict[str, str]:
    wanted, met = Counter(), Counter()
    for s in variant.scored:
        if split is not None and s.session["split"] != split:
            continue
        kinds = truth["projects"][s.session["project"]]
        for key in s.session["needs"]:
            wanted[kinds[key]["kind"]] += 1
            met[kinds[key]["kind"]] += key in s.covered
    return {kind: _share(met[kind], wanted[kind]) for kind in ("rule", "decision", "gotcha", "fact")}


def main(argv: list[str]) -> None:
    truth = labels()
    base = load_settings()
    variants = [run_baseline(truth), *run_ceiling(base, truth, llm="--no-llm" not in argv)]
    with tempfile.TemporaryDirectory(prefix="next-session-") as tmp:
        plans = [("llm-free (observations only)", LLM_FREE)]
        if "--no-llm" not in argv:
            plans.append(("local model", LOCAL_MODEL))
        for name, assets in plans:
            settings = isolated_settings(base, Path(tmp) / name.split()[0], sessions_dir=CORPUS / "sessions")
            variants += run_pipeline(settings, truth, assets, name)
    model = ""
    if "--no-llm" not in argv:
        with chat_client(base) as client:
            model = client.model_id()
    rows, kinds = [], []
    for variant in variants:
        for split in ("held_out", "tune", None):
            f = figures(variant, split)
            rows.append([variant.name, split or "all", *f.values()])
            kinds.append([variant.name, split or "all", *by_kind(variant, truth, split).values()])
    n_held = sum(s["split"] == "held_out" for s in truth["sessions"])
    listing = []
    for variant in variants:
        if not variant.name.endswith(", default"):
            continue
        for s in variant.scored:
            if s.session["split"] == "held_out":
                missed = [k for k in s.session["needs"] if k not in s.covered]
                listing.append([variant.name, s.session["prompt"], ", ".join(missed) or "-", str(s.noise)])
    body = "\n\n".join(
        [
            f"Corpus: `bench/corpus/next_session` ({len(truth['sessions'])} later sessions with "
            f"{sum(len(s['needs']) for s in truth['sessions'])} labelled needs, {n_held} sessions held out), "
            f"briefing budget {BUDGET} tokens, the chat model `{model or '(not run)'}`.",
            table(["variant", "split", "coverage", "noise", "stale", "cut", "recall@5", "lines a briefing"], rows),
            "Coverage by the kind of need:",
            table(["variant", "split", "rule", "decision", "gotcha", "fact"], kinds),
            "Held-out sessions, the needs their briefing missed and its lines that served none:",
            table(["variant", "first prompt", "needs missed", "noise lines"], listing),
            "Seconds for the whole history: "
            + ", ".join(f"{v.name} {v.seconds:.0f}" for v in variants if v.name.endswith(", default"))
            + ".",
        ]
    )
    dump = next((a.split("=", 1)[1] for a in argv if a.startswith("--dump=")), None)
    if dump:
        # Every briefing beside its session's needs, for a reader to judge (outside the results file).
        Path(dump).write_text(
            json.dumps(
                {
                    v.name: [
                        {"prompt": s.session["prompt"], "split": s.session["split"], "needs": s.session["needs"]}
                        | {"covered": s.covered, "lines": s.lines}
                        for s in v.scored
                    ]
                    for v in variants
                },
                indent=1,
            )
        )
        argv = [a for a in argv if not a.startswith("--dump=")]
    write_section("next_session", f"uv run python -m bench next_session {' '.join(argv)}".strip(), body)
    print(table(["variant", "split", "coverage", "noise", "stale", "cut", "recall@5", "lines a briefing"], rows))


def run_day(name: str, assets: list, settings: Settings, day: str, done: list[str]) -> None:
    """One day of a replayed history through `assets` (reflection as of that day), the days `done` registered;
    a failed run ends the benchmark, named."""
    config = {"ops": {"reflections": {"config": {"as_of": day}}}} if reflect.reflections in assets else None
    result = materialize(
        assets,
        resources=build_resources(settings),
        partition_key=day,
        instance=instance_with_days(done),
        run_config=config,
        raise_on_error=False,
    )
    if not result.success:
        raise SystemExit(f"{name}: the run of {day} failed")
