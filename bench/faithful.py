"""What the faithfulness check changes on real turns (`python -m bench faithful`): every memory it recomposed or
dropped, beside its evidence, for a reader to judge.

Two sets the check was not written on: the real fixtures' turns (as `bench fixture_memories` reads them) and the 37
labelled turns of `bench summarize` (as that benchmark reads them). Each turn goes through the pipeline's own
extraction (`summarise_turns`, gate included); the model's answers are kept in bench/.work/answers
(`bench.answers.CachedChat`), so a second run replays them in seconds and measures only the code after the model.
Every outcome is written to bench/.work/faithful/<name>.json (`--save=<name>`, default `last`) to compare runs.

    uv run python -m bench faithful [--save=NAME]
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench import fixture_memories, summarize
from bench.answers import CachedChat
from bench.results_file import table, write_section
from memory_pipeline.sessions.envelope import strip_envelope
from memory_pipeline.settings import load_settings
from memory_pipeline.stores.llm import chat_client
from memory_pipeline.summarize.extract import TurnOutcome, summarise_turns
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


def run(save: str) -> dict[str, Any]:
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
    out = WORK / "faithful" / f"{save}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    return result


def _cell(text: str) -> str:
    return text.replace("|", "/").replace("\n", " ")


def main(argv: list[str]) -> None:
    save = next((a.split("=", 1)[1] for a in argv if a.startswith("--save=")), "last")
    result = run(save)
    rows, counts = [], Counter()
    for t in result["turns"]:
        changed = [("composed again", *c) for c in t["recomposed"]]
        changed += [("dropped", why, said) for why, said in t["dropped"] if why.startswith("unfaithful")]
        for what, why, said in changed:
            counts[f"{what}: {why.split(' (')[0]}"] += 1
            kept = "<br>".join(f"{i['kind']}: {i['summary']}" for i in t["ideas"]) or "(none)"
            rows.append([t["set"], t["turn"], _cell(t["user"][:160]), _cell(said), f"{what}: {why}", _cell(kept)])
    memories = Counter(t["set"] for t in result["turns"] for _ in t["ideas"])
    sets = Counter(t["set"] for t in result["turns"])
    body = "\n\n".join(
        [
            f"Model `{result['model']}`; {len(result['turns'])} turns ({dict(sets)}), {dict(memories)} memories kept; "
            f"{result['asked']} answers asked of the model, {result['replayed']} replayed from bench/.work/answers; "
            f"{result['seconds']} s.",
            f"Changed by the faithfulness check: {json.dumps(dict(counts))}.",
            table(
                [
                    "set",
                    "turn",
                    "the turn's request",
                    "memory before the check",
                    "what the check did",
                    "kept for the turn",
                ],
                rows,
            ),
        ]
    )
    write_section("faithful", " ".join(["uv run python -m bench faithful", *argv]), body)
    print(body)
