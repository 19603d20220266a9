"""Summarize figures: quality on hand-labelled turns, and throughput against the server's own time.

    uv run python -m bench summarize                          # the local chat server (LLAMA_URL if set)
    LLAMA_URL=http://big-box:8080 uv run python -m bench summarize   # any other server, same harness

Quality: bench/labels/summarize_turns.json lists real turns of the pi-mono fixture session, each marked
memorable (a rule, correction, decision or root cause) or not, with a line saying what is worth keeping.
The harness runs the pipeline's own extraction (prompt, schema, validation, one retry, the trust review)
on each. An idea is *correct* for a memorable turn when its embedding is closer to the labelled line than
chance: above the 95th percentile of its similarity to the other turns' lines, computed in the same run.
Reported: memorable turns with a correct idea, other turns with any idea, ungrounded ideas kept, high
ideas on acknowledgements, and precision and recall per priority (memorable turns expect a high idea).

Grounding: the threshold of `trust.GROUNDED_AT` is checked on labelled idea-turn pairs (each memorable
turn's labelled line against its own turn, and against every other turn; the prompt's example against
every turn), on a tuning half and a held-out half of the turns.

Throughput: the same turns, sequentially and with 2 in flight against a server started with 2 slots;
turns per second end to end next to the time the server itself reports (prompt + generation).
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import time
from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl

from bench.results_file import table, write_section
from memory_pipeline.local.runtime import LocalRuntime
from memory_pipeline.sessions.messages import session_messages, to_frame
from memory_pipeline.sessions.parse import parse_session
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.sessions.turns import group_turns
from memory_pipeline.settings import Settings, load_settings
from memory_pipeline.stores.embeddings import embeddings_client
from memory_pipeline.stores.llm import chat_client
from memory_pipeline.summarize.compose import quotes_its_evidence
from memory_pipeline.summarize.extract import TurnOutcome, summarise_turns
from memory_pipeline.summarize.frames import turn_jobs
from memory_pipeline.summarize.prompt import SYSTEM_PROMPT, turn_text
from memory_pipeline.summarize.trust import GROUNDED_AT, grounding, is_acknowledgement

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "memory_pipeline_tests" / "fixtures" / "pi-sessions"
LABELS = Path(__file__).with_name("labels") / "summarize_turns.json"
MODELS = Path(__file__).with_name("summarize_models.json")
MAX_OUTPUT_TOKENS = 512


def labelled_jobs() -> tuple[list, list[dict]]:
    labels = json.loads(LABELS.read_text())["labels"]
    jobs = []
    for name in sorted({label["file"] for label in labels}):
        frame = to_frame(session_messages(parse_session(FIXTURES / name), Redactor(), "bench")[0])
        by_turn = {turn_id: job for (_, turn_id), job in turn_jobs(group_turns(frame), frame).items()}
        jobs += [by_turn[label["turn_id"]] for label in labels if label["file"] == name]
    return jobs, labels


def _run(settings: Settings, jobs: list, concurrency: int) -> tuple[list[TurnOutcome], float, str, int]:
    with chat_client(settings, timeout=600) as client:
        model = client.model_id()
        context = client.context_size() or 4096
        begin = time.perf_counter()
        outcomes = summarise_turns(
            client, jobs, context_tokens=context, max_output_tokens=MAX_OUTPUT_TOKENS, concurrency=concurrency
        )
        return outcomes, time.perf_counter() - begin, model, context


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _turn_texts(jobs: list) -> list[str]:
    return [turn_text(job.messages).everything for job in jobs]


def grounding_table(jobs: list, labels: list[dict]) -> list[list[str]]:
    """How each threshold separates a labelled line's own turn from the other turns, and the prompt's example
    from every turn; turns alternate between a tuning half and a held-out half."""
    texts = _turn_texts(jobs)
    example = [line for line in SYSTEM_PROMPT.splitlines() if "<" in line]
    rows = []
    for threshold in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8):
        cells = []
        for half in (0, 1):
            own = other = own_total = other_total = 0
            for i, label in enumerate(labels):
                if not label["memorable"] or i % 2 != half:
                    continue
                claim = label["why"].split(":", 1)[-1]
                own_total += 1
                own += grounding(claim, texts[i]) >= threshold
                for j, text in enumerate(texts):
                    if j != i:
                        other_total += 1
                        other += grounding(claim, text) < threshold
            cells += [f"{own}/{own_total}", f"{other / other_total:.1%}"]
        rejected = sum(grounding(line, text) < threshold for line in example for text in texts)
        marker = " (GROUNDED_AT)" if threshold == GROUNDED_AT else ""
        rows.append([f"{threshold}{marker}", *cells, f"{rejected}/{len(example) * len(texts)}"])
    return rows


def quality(
    settings: Settings, jobs: list, labels: list[dict], outcomes: list[TurnOutcome]
) -> tuple[list[list[str]], list[list[str]]]:
    """The quality figures, and each memorable turn's labelled line beside the ideas kept (to read, not trust)."""
    memorable = [label["memorable"] for label in labels]
    whys = [label["why"].split(":", 1)[-1].strip() for label in labels]
    ideas = [(i, idea) for i, o in enumerate(outcomes) for idea in o.ideas]
    with embeddings_client(settings) as embedder:
        idea_vectors = np.array(embedder.embed([idea.summary for _, idea in ideas])) if ideas else np.zeros((0, 384))
        why_vectors = np.array(embedder.embed(whys))
    similarity = idea_vectors @ why_vectors.T
    correct = [False] * len(labels)
    for row, (turn, _) in enumerate(ideas):
        others = np.delete(similarity[row], turn)
        if memorable[turn] and similarity[row, turn] > np.percentile(others, 95):
            correct[turn] = True
    texts = [turn_text(job.messages) for job in jobs]
    ungrounded = sum(grounding(idea.summary, texts[turn].everything) < GROUNDED_AT for turn, idea in ideas)
    acks_high = sum(
        any(i.priority == "high" for i in o.ideas)
        for o, t in zip(outcomes, texts, strict=True)
        if is_acknowledgement(t.user)
    )
    n_mem, n_other = sum(memorable), len(labels) - sum(memorable)
    quotes = sum(quotes_its_evidence(idea, texts[turn]) for turn, idea in ideas)
    envelopes = sum(bool(_ENVELOPE_TEXT.search(idea.summary)) for _, idea in ideas)
    rows = [
        ["memorable turns with a correct idea", f"{sum(correct)} / {n_mem} ({sum(correct) / n_mem:.0%})"],
        [
            "memorable turns with any idea",
            _share(sum(1 for m, o in zip(memorable, outcomes, strict=True) if m and o.ideas), n_mem),
        ],
        [
            "other turns with an idea (lower is better)",
            _share(sum(1 for m, o in zip(memorable, outcomes, strict=True) if not m and o.ideas), n_other),
        ],
        ["ideas kept that their turn does not support", str(ungrounded)],
        ["acknowledgement turns with a high idea", str(acks_high)],
        [BARE_QUOTES, str(quotes)],
        ["memories holding chat-envelope text", str(envelopes)],
        ["memories by kind", ", ".join(f"{k}: {n}" for k, n in Counter(i.kind.value for _, i in ideas).most_common())],
    ]
    for priority in ("high", "medium", "low"):
        at = [turn for turn, idea in ideas if idea.priority == priority]
        precise = sum(memorable[turn] for turn in at)
        reached = len({turn for turn in at if memorable[turn]})
        rows.append(
            [
                f"{priority}: precision (ideas on memorable turns) / recall (memorable turns reached)",
                f"{_share(precise, len(at))} / {_share(reached, n_mem)}",
            ]
        )
    listing = [
        [
            label["turn_id"],
            label["why"][:70],
            " / ".join(
                f"{i.kind.value}, {i.priority.value}: {i.summary}"
                + (" _(a bare quote)_" if quotes_its_evidence(i, text) else "")
                for i in o.ideas
            )
            or "(none)",
        ]
        for label, o, text in zip(labels, outcomes, texts, strict=True)
        if label["memorable"]
    ]
    return rows, listing


# A memory that only repeats its evidence, by the product's own check (`compose.quotes_its_evidence`: case,
# fillers, swearing and typos the turn corrects aside); runs before 2026-12-04 counted verbatim copies only.
BARE_QUOTES = "memories whose text only repeats their evidence (a bare quote; typos and fillers aside)"
VERBATIM = "memories whose text is the evidence verbatim (a bare quote)"
_ENVELOPE_TEXT = re.compile(r"(?i)\[(?:user sent|image|photo|media|message_id)|untrusted metadata|^system: \[")


def _share(n: int, total: int) -> str:
    return f"{n} / {total} ({n / total:.0%})" if total else "0 / 0"


def main(argv: list[str]) -> None:
    settings = load_settings()
    jobs, labels = labelled_jobs()
    memorable = [label["memorable"] for label in labels]
    print(f"{len(jobs)} labelled turns ({sum(memorable)} memorable) against {settings.chat_url}", flush=True)
    sequential, seq_wall, model, context = _run(settings, jobs, concurrency=1)

    quality_rows, listing = quality(settings, jobs, labels, sequential)
    grounding_rows = grounding_table(jobs, labels)
    failed = sum(o.status == "failed" for o in sequential)
    ideas = sum(len(o.ideas) for o in sequential)
    by_priority = pl.Series([i.priority.value for o in sequential for i in o.ideas], dtype=pl.String).value_counts()
    dropped = Counter(why for o in sequential for why, _ in o.dropped)

    rows = []
    seq_server = sum(o.server_seconds for o in sequential)
    rows.append(
        [
            "sequential (1 slot, concurrency 1)",
            f"{len(jobs) / seq_wall:.3f}",
            f"{seq_wall:.0f}",
            f"{seq_server:.0f}",
            f"{(seq_wall - seq_server) / seq_wall:.1%}",
        ]
    )
    if settings.is_local("chat") and "--no-slots" not in argv:
        # The same turns against a private chat server started with 2 slots.
        work = ROOT / "bench" / ".work" / "slots"
        shutil.rmtree(work, ignore_errors=True)
        two = load_settings(
            memory_pipeline_state_dir=work,
            memory_pipeline_cache_dir=settings.memory_pipeline_cache_dir,
            local_es_port=_free_port(),
            local_llama_port=_free_port(),
            local_embed_port=_free_port(),
            local_llama_slots=2,
        )
        runtime = LocalRuntime(two, progress=lambda m: None)
        runtime.up(["chat"])
        try:
            parallel, par_wall, _, _ = _run(two, jobs, concurrency=2)
        finally:
            runtime.down()
            shutil.rmtree(work, ignore_errors=True)
        par_server = sum(o.server_seconds for o in parallel)
        # With 2 slots the server's own time overlaps: the ideal wall time is half its sum.
        rows.append(
            [
                "2 slots (concurrency 2)",
                f"{len(jobs) / par_wall:.3f}",
                f"{par_wall:.0f}",
                f"{par_server:.0f} (/2 = {par_server / 2:.0f})",
                f"{(par_wall - par_server / 2) / par_wall:.1%}",
            ]
        )

    body = "\n\n".join(
        [
            f"Model `{model}` at `{settings.chat_url}` (context {context} tokens per slot), prompt and schema of "
            f"`memory_pipeline/summarize`, temperature 0 then 0.3 on the one retry, "
            f"{MAX_OUTPUT_TOKENS} output tokens max.",
            f"Labelled set: {len(jobs)} real turns of `pi-mono-large-session.v1.jsonl` "
            f"(`bench/labels/summarize_turns.json`): {sum(memorable)} memorable, {len(jobs) - sum(memorable)} not.",
            table(["quality", "result"], quality_rows),
            f"Turns failed (invalid twice): {failed}. Ideas kept: {ideas} "
            f"({', '.join(f'{p}: {n}' for p, n in by_priority.iter_rows())}); dropped by the review: "
            f"{json.dumps(dict(dropped))}; demoted: {sum(o.demoted for o in sequential)}; memories composed from the "
            f"person's or the assistant's own sentences where the model missed them: "
            f"{sum(o.added for o in sequential)}.",
            "Each memorable turn, what the label says is worth keeping, and what was kept (the judge above is "
            "an embedding's; read these to judge for yourself):",
            table(["turn", "labelled", "ideas kept"], [[c.replace("|", "/") for c in row] for row in listing]),
            "Grounding threshold on labelled pairs (share of the claim's content words found in the turn):",
            table(
                [
                    "threshold",
                    "own turn kept (tuning)",
                    "other turn rejected (tuning)",
                    "own turn kept (held out)",
                    "other turn rejected (held out)",
                    "prompt example rejected",
                ],
                grounding_rows,
            ),
            table(
                ["throughput", "turns/s end to end", "wall s", "server s (prompt + generation)", "pipeline overhead"],
                rows,
            ),
            "Overhead = the share of wall time not spent inside the server (prompt building, validation, HTTP); "
            "for 2 slots against half the server's summed time, the best a 2-slot server could do.",
        ]
    )
    command = " ".join(["uv run python -m bench summarize", *argv])
    if settings.is_local("chat"):
        write_section("summarize", command, body)
    else:
        command = f"LLAMA_URL={settings.chat_url} {command}"
        write_section(f"summarize ({model})", command, body)
    models = json.loads(MODELS.read_text()) if MODELS.exists() else {}
    models[model] = {
        "server": "embedded default" if settings.is_local("chat") else settings.chat_url,
        "quality": {row[0]: row[1] for row in quality_rows},
        "turns_per_second": f"{len(jobs) / seq_wall:.3f}",
    }
    MODELS.write_text(json.dumps(models, indent=1, sort_keys=True) + "\n")
    write_section("summarize models", command, models_table(models))
    print(body)


def models_table(models: dict) -> str:
    """Every chat model measured on the labelled set, one row each (bench/summarize_models.json)."""
    keys = [
        "memorable turns with a correct idea",
        "other turns with an idea (lower is better)",
        "ideas kept that their turn does not support",
        BARE_QUOTES,
        "memories holding chat-envelope text",
    ]

    def cell(quality: dict, key: str) -> str:
        if key == BARE_QUOTES and key not in quality and VERBATIM in quality:
            return f"{quality[VERBATIM]} (verbatim only)"  # measured before the stricter count
        return quality.get(key, "-")

    rows = [
        [f"`{name}`", entry["server"], *(cell(entry["quality"], k) for k in keys), entry["turns_per_second"]]
        for name, entry in sorted(models.items())
    ]
    headers = ["model", "server", "memorable correct", "others with any", "ungrounded", "bare quotes", "envelopes"]
    return (
        "Every chat model run on the labelled set with the same harness (its own section has the details); "
        "another OpenAI-compatible server is measured with `LLAMA_URL=… uv run python -m bench summarize "
        "--no-slots`.\n\n" + table([*headers, "turns/s"], rows)
    )


if __name__ == "__main__":
    main([])
