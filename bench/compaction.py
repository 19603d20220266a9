"""Compaction from memory against pi's own: when a session is compacted, how much of what it established does
the summary keep, in how many tokens?

    uv run python -m bench compaction               # the 12 corpus sessions that hold the most knowledge
    uv run python -m bench compaction --sessions=20

On the next-session corpus (bench/corpus/next_session): a session's knowledge is the labelled knowledge of its
project (labels.json: rules, decisions, gotchas, facts, each with keyword sets) that the session's own messages
name. Each session is compacted whole, two ways:

- memory: the summary the pi extension's `session_before_compact` handler gets (`build_compaction`, 2000 tokens),
  from the memory the pipeline made of the corpus with the local chat model (the daily job, day by day);
- pi: pi's own compaction (`compact` over pi's RPC, the extension not loaded), its summary written by the same
  local chat model, keeping only the newest 20 tokens, so it summarises the same messages.

A kept piece of knowledge is one whose keyword set the summary names (as next_session scores a briefing line).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from pathlib import Path

from dagster import materialize

from bench.next_session import _names, labels
from bench.results_file import table, write_section
from memory_pipeline.partitions import instance_with_days
from memory_pipeline.resources import build_resources
from memory_pipeline.search.briefing import tokens
from memory_pipeline.search.compaction import build_compaction
from memory_pipeline.search.open import open_search
from memory_pipeline.sessions.discovery import scan_sessions
from memory_pipeline.settings import Settings, isolated_settings, load_settings
from memory_pipeline.stores.elasticsearch import delete_days, make_client
from memory_pipeline.stores.indices import PIPELINE_INDICES
from testkit.corpora.make_next_session_corpus import OUT as CORPUS
from testkit.ingest_helpers import MEMORY_ASSETS
from testkit.pi_agent import ensure_pi

BUDGET = 2000


def _text(session_file: Path) -> str:
    """What a session's messages say (the user's, the assistant's, the tools')."""
    said = []
    for line in session_file.read_text().splitlines():
        entry = json.loads(line)
        content = entry.get("message", {}).get("content")
        for part in content if isinstance(content, list) else []:
            said.append(part.get("text", "") if isinstance(part, dict) else "")
    return "\n".join(said)


def _knowledge(session_file: Path, knowledge: dict) -> list[str]:
    text = _text(session_file)
    return [key for key, k in knowledge.items() if _names(text, k["match"])]


def _memory(settings: Settings) -> float:
    """The daily job over the corpus, day by day (as next_session's local-model variant runs it)."""
    days = sorted({found.partition for found in scan_sessions(settings.sessions_dir)[0]})
    with make_client(settings) as es:
        delete_days(es, PIPELINE_INDICES, days)
    begin, done = time.perf_counter(), []
    for day in days:
        done.append(day)
        result = materialize(
            MEMORY_ASSETS, resources=build_resources(settings), partition_key=day, instance=instance_with_days(done)
        )
        if not result.success:
            raise SystemExit(f"the run of {day} failed")
    return time.perf_counter() - begin


def _pi_home(settings: Settings, home: Path) -> dict[str, str]:
    """pi's agent folder: its model the local chat server (room for a whole summary), compaction keeping 20
    tokens; the environment to run it in."""
    home.mkdir(parents=True, exist_ok=True)
    model = {
        "id": "local-chat", "name": "local-chat", "contextWindow": settings.local_llama_ctx, "maxTokens": 2048,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
    }  # fmt: skip
    provider = {
        "baseUrl": f"{settings.chat_url}/v1", "api": "openai-completions", "apiKey": settings.api_key("chat"),
        "authHeader": True, "models": [model],
    }  # fmt: skip
    (home / "models.json").write_text(json.dumps({"providers": {"local": provider}}))
    (home / "settings.json").write_text(json.dumps({"compaction": {"enabled": False, "keepRecentTokens": 20}}))
    bin_dir = ensure_pi()
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "PI_CODING_AGENT_DIR": str(home), "PI_OFFLINE": "1",
            "PI_SKIP_VERSION_CHECK": "1", "PI_TELEMETRY": "0", "HOME": str(home)}  # fmt: skip


def _pi_summary(session_file: Path, env: dict[str, str], work: Path) -> str:
    """pi's own compaction of a copy of the session (the copy is changed by it): its summary."""
    copy = work / session_file.name
    lines = session_file.read_text().splitlines()
    header = json.loads(lines[0]) | {"cwd": str(work)}  # pi opens a session only where its folder exists
    copy.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    argv = [str(ensure_pi() / "pi"), "-ne", "--model", "local/local-chat", "--mode", "rpc", "--session", str(copy)]
    process = subprocess.Popen(argv, cwd=work, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdin and process.stdout
    try:
        process.stdin.write(json.dumps({"id": "k", "type": "compact"}) + "\n")
        process.stdin.flush()
        for line in process.stdout:
            event = json.loads(line)
            if event.get("type") == "response" and event.get("command") == "compact":
                return event["data"]["summary"] if event.get("success") else ""
        return ""
    finally:
        process.kill()
        process.wait()


def main(argv: list[str]) -> None:
    count = next((int(a.split("=", 1)[1]) for a in argv if a.startswith("--sessions=")), 12)
    truth = labels()
    files = sorted(CORPUS.glob("sessions/*/*.jsonl"))
    held = []
    for path in files:
        header = json.loads(path.read_text().splitlines()[0])
        keys = _knowledge(path, truth["projects"][header["cwd"]])
        held.append((len(keys), path.name, path, header, keys))
    chosen = sorted((h for h in held if h[0]), key=lambda h: (-h[0], h[1]))[:count]
    rows, totals = [], {"memory": [0, 0, 0], "pi": [0, 0, 0]}  # kept, knowledge, tokens
    with tempfile.TemporaryDirectory(prefix="compaction-") as tmp:
        settings = isolated_settings(load_settings(), Path(tmp) / "memory", sessions_dir=CORPUS / "sessions")
        seconds = _memory(settings)
        env = _pi_home(settings, Path(tmp) / "pi")
        with open_search(settings) as search:
            for n, name, path, header, keys in chosen:
                knowledge = truth["projects"][header["cwd"]]
                ours = build_compaction(search, header["id"], header["cwd"], None, BUDGET, settings.memory_workspace)
                work = Path(tmp) / "pi-work" / header["id"]
                work.mkdir(parents=True)
                theirs = _pi_summary(path, env, work)
                cells = [name[:24], n]
                for way, summary in (("memory", ours.markdown), ("pi", theirs)):
                    kept = [k for k in keys if _names(summary, knowledge[k]["match"])]
                    totals[way][0] += len(kept)
                    totals[way][1] += n
                    totals[way][2] += tokens(summary)
                    cells += [f"{len(kept)}/{n}", tokens(summary)]
                rows.append(cells)
                print(f"  {name}: {cells[2:]}", flush=True)
    share = {way: f"{t[0] / t[1]:.2f}" if t[1] else "-" for way, t in totals.items()}
    body = "\n\n".join(
        [
            f"{len(chosen)} sessions of `bench/corpus/next_session` (those naming the most labelled knowledge), each "
            f"compacted whole: from memory (`build_compaction`, {BUDGET} tokens; the memory made by the daily job "
            f"with the local chat model in {seconds:.0f} s) and by pi's own compaction with the same model.",
            table(
                ["way", "knowledge kept", "share", "tokens (all sessions)"],
                [[way, f"{t[0]}/{t[1]}", share[way], t[2]] for way, t in totals.items()],
            ),
            table(["session", "knowledge", "memory kept", "memory tokens", "pi kept", "pi tokens"], rows),
        ]
    )
    write_section("compaction", f"uv run python -m bench compaction --sessions={count}", body)
    print(body)
