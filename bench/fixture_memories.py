"""Every memory the pipeline makes from the real fixtures, beside its turn, for a reader to judge.

    uv run python -m bench fixture_memories            # every fixture (112 turns, about 20 minutes here)
    uv run python -m bench fixture_memories --small    # all but the 88-turn pi-mono session (whose 37
                                                       # labelled turns the summarize section lists)

Each active-path turn of every session in `memory_pipeline_tests/fixtures/pi-sessions/` and `data/sessions/`
goes through the pipeline's own extraction (prompt, schema, composition, trust review) against the chat
server; the table lists the turn's request (its first sentences), and every memory kept: kind, priority,
the statement, and who said the words it rests on. Not a score: the text an agent would read next week.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

from bench.results_file import table, write_section
from memory_pipeline.sentences import by_sentence
from memory_pipeline.sessions.envelope import strip_envelope
from memory_pipeline.sessions.messages import session_messages, to_frame
from memory_pipeline.sessions.parse import parse_session
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.sessions.turns import group_turns
from memory_pipeline.settings import load_settings
from memory_pipeline.stores.llm import chat_client
from memory_pipeline.summarize.extract import summarise_turns
from memory_pipeline.summarize.frames import turn_jobs
from memory_pipeline.summarize.prompt import turn_text

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = [ROOT / "memory_pipeline_tests" / "fixtures" / "pi-sessions", ROOT / "data" / "sessions"]


LARGE = "pi-mono-large-session.v1.jsonl"


def jobs(small: bool = False) -> list[tuple[str, object]]:
    found = []
    for folder in FOLDERS:
        for path in sorted(folder.rglob("*.jsonl")):
            if small and path.name == LARGE:
                continue
            frame = to_frame(session_messages(parse_session(path), Redactor(), "fixtures")[0])
            found += [(path.name, job) for job in turn_jobs(group_turns(frame), frame).values()]
    return found


def _cell(text: str) -> str:
    return text.replace("|", "/").replace("\n", " ")


def main(argv: list[str]) -> None:
    settings = load_settings()
    small = "--small" in argv
    work = jobs(small)
    print(f"{len(work)} turns of the fixtures against {settings.chat_url}", flush=True)
    begin = time.perf_counter()
    with chat_client(settings, timeout=900) as client:
        model = client.model_id()
        outcomes = summarise_turns(
            client,
            [job for _, job in work],
            context_tokens=client.context_size() or 4096,
            max_output_tokens=512,
            on_done=lambda o: print(f"  {o.session_id[:20]}/{o.turn_id}: {o.status}, {len(o.ideas)}", flush=True),
        )
    seconds = time.perf_counter() - begin
    rows = []
    for (name, job), outcome in zip(work, outcomes, strict=True):
        asked = by_sentence(strip_envelope(turn_text(job.messages).user), 200) or "(no user message)"
        kept = "<br>".join(
            f"**{i.kind.value}**, {i.priority.value}: {i.summary} _(words of the {i.evidence_role})_"
            for i in outcome.ideas
        )
        rows.append([name[:40], job.turn_id, _cell(asked), _cell(kept or f"({outcome.status})")])
    kinds = Counter(i.kind.value for o in outcomes for i in o.ideas)
    body = "\n\n".join(
        [
            f"Model `{model}` at `{settings.chat_url}`; {len(work)} turns of {len(FOLDERS)} folders"
            f"{f' (without {LARGE})' if small else ''}, "
            f"{sum(len(o.ideas) for o in outcomes)} memories ({', '.join(f'{k}: {n}' for k, n in kinds.items())}), "
            f"{sum(o.status == 'failed' for o in outcomes)} turns failed, {seconds:.0f} s.",
            table(["file", "turn", "the turn's request", "memories kept"], rows),
        ]
    )
    write_section("fixture_memories", " ".join(["uv run python -m bench fixture_memories", *argv]), body)
