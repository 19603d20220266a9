"""What the faithfulness check changes on real turns (`python -m bench faithful`): every memory it recomposed or
dropped, beside its evidence, for a reader to judge.

Two sets the check was not written on: the real fixtures' turns (as `bench fixture_memories` reads them) and the 37
labelled turns of `bench summarize` (as that benchmark reads them). Each turn goes through the pipeline's own
extraction (`summarise_turns`, gate included); the model's answers are kept in bench/.work/answers
(`bench.answers.CachedChat`), so a second run replays them in seconds and measures only the code after the model.
Every outcome is written to bench/.work/faithful/<name>.json (`--save=<name>`, default `last`) to compare runs
(another checkout's, the code before a change, on the same cached answers).

    uv run python -m bench faithful [--save=NAME]
    uv run python -m bench faithful --from-tables   # no model: the memories bench/results.md prints, checked again
    uv run python -m bench faithful --from-tables --against=NAME   # only the turns whose memories differ from NAME's
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench import fixture_memories, summarize
from bench.answers import CachedChat
from bench.results_file import RESULTS, table, write_section
from memory_pipeline.language.kinds import Kind
from memory_pipeline.sessions.envelope import strip_envelope
from memory_pipeline.settings import load_settings
from memory_pipeline.stores.llm import chat_client
from memory_pipeline.summarize.compose import make_idea, sentence_of
from memory_pipeline.summarize.extract import TurnOutcome, check_faithful, summarise_turns
from memory_pipeline.summarize.prompt import turn_text

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / ".work"
MAX_OUTPUT_TOKENS = 512


def _jobs() -> list[tuple[str, str, Any]]:
    """(set, file, job) for the fixtures' turns and the 37 labelled turns."""
    jobs, labels = summarize.labelled_jobs()
    found = [("labelled-37", label["file"], job) for label, job in zip(labels, jobs, strict=True)]
    fixtures = [("fixtures", name, job) for name, job in fixture_memories.jobs()]
    # The 88-turn session last: the other fixtures are read first when a run is cut short.
    return found + sorted(fixtures, key=lambda f: f[1] == fixture_memories.LARGE)


def _record(kind: str, name: str, job: Any, outcome: TurnOutcome) -> dict[str, Any]:
    text = turn_text(job.messages)
    return {
        "set": kind,
        "file": name,
        "turn": job.turn_id,
        "user": strip_envelope(text.user)[:600],
        "status": outcome.status,
        "ideas": [i.model_dump(mode="json") for i in outcome.ideas],
        "dropped": outcome.dropped,
        "recomposed": outcome.recomposed,
    }


def run() -> dict[str, Any]:
    settings = load_settings()
    work = _jobs()
    begin = time.perf_counter()
    with chat_client(settings, timeout=900) as raw:
        client = CachedChat(raw, WORK / "answers" / raw.model_id())
        records = []
        for kind, name, job in work:
            [outcome] = summarise_turns(
                client,  # type: ignore[arg-type]  # a ChatClient by its methods
                [job],
                context_tokens=raw.context_size() or 4096,
                max_output_tokens=MAX_OUTPUT_TOKENS,
            )
            records.append(_record(kind, name, job, outcome))
            print(f"{kind} {name[:30]}/{job.turn_id}: {outcome.status}, {len(outcome.ideas)}", flush=True)
        model, asked, replayed = raw.model_id(), client.asked, client.replayed
    result = {
        "model": model,
        "seconds": round(time.perf_counter() - begin, 1),
        "asked": asked,
        "replayed": replayed,
        "turns": records,
    }
    return result


def _cell(text: str) -> str:
    return text.replace("|", "/").replace("\n", " ")


# A memory as bench/results.md prints it: "**rule**, high: … _(words of the user)_" (fixture_memories) or
# "rule, high: … _(a bare quote)_" (summarize).
_PRINTED = re.compile(
    r"^\**(?P<kind>\w+)\**, (?P<priority>\w+): (?P<summary>.+?)(?: _\((?:words of the (?P<role>\w+)|[^)]*)\)_)?$"
)


def _printed(section: str, columns: int, memories: int) -> list[tuple[str, str, list[re.Match[str]]]]:
    """(file, turn, memories) of each row of a table of `section` in bench/results.md with `columns` cells, whose
    memories are in cell `memories`."""
    text = RESULTS.read_text()
    body = text[text.index(f"<!-- {section} -->") : text.index(f"<!-- /{section} -->")]
    rows = []
    for line in body.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == columns and cells[0] not in ("file", "turn", "---"):
            found = [_PRINTED.match(m.strip()) for m in re.split(r"<br>| / (?=\**\w+\**, \w+: )", cells[memories])]
            rows.append((cells[0] if columns == 4 else fixture_memories.LARGE, cells[1 if columns == 4 else 0], found))
    return rows


def from_tables() -> dict[str, Any]:
    """The memories the fixtures table and the 37 turns' table of bench/results.md print (made by the code of their
    date), each through the faithfulness check as the code is now: its evidence found again in its turn (the
    sentence of the side the table names, else of either side, that holds it: `compose.sentence_of`), so no model
    is asked. An estimate: the evidence the model cited is not printed."""
    turns = {(name[:40], job.turn_id): turn_text(job.messages) for name, job in fixture_memories.jobs()}
    records = []
    for kind, rows in (("fixtures", _printed("fixture_memories", 4, 3)), ("labelled-37", _printed("summarize", 3, 2))):
        for name, turn_id, printed in rows:
            text = turns.get((name[:40], turn_id))
            if text is None:
                continue
            ideas, outcome = [], TurnOutcome(name, turn_id, status="summarised")
            for found in filter(None, printed):
                role = found["role"] or ("user" if sentence_of(found["summary"], text.user) else "assistant")
                side = {"user": text.user, "assistant": text.assistant}.get(role, text.other)
                evidence = sentence_of(found["summary"], side) or side
                idea = make_idea(Kind(found["kind"]), found["summary"], evidence, role)
                if idea:
                    ideas.append(idea.model_copy(update={"summary": found["summary"]}))
            kept = check_faithful(ideas, text, outcome)
            records.append(
                {
                    "set": kind,
                    "file": name,
                    "turn": turn_id,
                    "user": strip_envelope(text.user)[:600],
                    "status": outcome.status,
                    "ideas": [i.model_dump(mode="json") for i in kept],
                    "dropped": outcome.dropped,
                    "recomposed": outcome.recomposed,
                }
            )
    return {"model": "(the tables' own)", "seconds": 0.0, "asked": 0, "replayed": 0, "turns": records}


def _kept(turn: dict[str, Any]) -> list[str]:
    return [f"{i['kind']}: {i['summary']}" for i in turn["ideas"]]


def _changes(result: dict[str, Any], against: dict[str, Any] | None) -> tuple[list[list[str]], Counter[str]]:
    """A row per memory the check composed again or dropped; with `against` (an earlier run's outcomes on the same
    turns), a row per turn whose memories differ from that run's instead, with what went and what came."""
    rows: list[list[str]] = []
    counts: Counter[str] = Counter()
    earlier = {(t["set"], t["file"], t["turn"]): t for t in (against or {}).get("turns", [])}
    for t in result["turns"]:
        why = "<br>".join(
            f"{w} ({s[:80]})" for w, s in [*t["recomposed"], *t["dropped"]] if "unfaithful" in w or "(" in w
        )
        if against is not None:
            before, after = _kept(earlier[(t["set"], t["file"], t["turn"])]), _kept(t)
            if before != after:
                counts["turns changed"] += 1
                went, came = [m for m in before if m not in after], [m for m in after if m not in before]
                cells = ["<br>".join(went) or "-", "<br>".join(came) or "-", why or "-"]
                rows.append([t["set"], t["turn"], _cell(t["user"][:160]), *map(_cell, cells)])
            continue
        for what, found in (("composed again", t["recomposed"]), ("dropped", t["dropped"])):
            for reason, said in found:
                if what == "composed again" or reason.startswith("unfaithful"):
                    counts[f"{what}: {reason.split(' (')[0]}"] += 1
                    kept = "<br>".join(_kept(t)) or "(none)"
                    rows.append(
                        [t["set"], t["turn"], _cell(t["user"][:160]), _cell(said), f"{what}: {reason}", _cell(kept)]
                    )
    return rows, counts


def main(argv: list[str]) -> None:
    save = next((a.split("=", 1)[1] for a in argv if a.startswith("--save=")), "last")
    name = next((a.split("=", 1)[1] for a in argv if a.startswith("--against=")), "")
    result = from_tables() if "--from-tables" in argv else run()
    out = WORK / "faithful" / f"{save}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    against = json.loads((WORK / "faithful" / f"{name}.json").read_text()) if name else None
    rows, counts = _changes(result, against)
    memories = Counter(t["set"] for t in result["turns"] for _ in t["ideas"])
    sets = Counter(t["set"] for t in result["turns"])
    headers = ["set", "turn", "the turn's request"]
    headers += (
        ["memories of the earlier run that went", "memories that came", "the check's reasons on the turn"]
        if against is not None
        else ["memory before the check", "what the check did", "kept for the turn"]
    )
    body = "\n\n".join(
        [
            f"Model `{result['model']}`; {len(result['turns'])} turns ({dict(sets)}), {dict(memories)} memories kept; "
            f"{result['asked']} answers asked of the model, {result['replayed']} replayed from bench/.work/answers; "
            f"{result['seconds']} s.",
            (f"Against `{name}`: " if against is not None else "Changed by the faithfulness check: ")
            + f"{json.dumps(dict(counts))}.",
            table(headers, rows),
        ]
    )
    write_section("faithful", " ".join(["uv run python -m bench faithful", *argv]), body)
    print(body)
