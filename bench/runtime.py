"""Local runtime figures: cold and warm start per server, idle memory, chat and embedding throughput.

uv run python -m bench runtime          # warm figures (uses the existing cache)
uv run python -m bench runtime --cold   # also a cold setup on an empty cache (downloads + build, ~7 min)
"""

from __future__ import annotations

import json
import shutil
import socket
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.results_file import table, write_section
from memory_pipeline.local.runtime import LocalRuntime
from memory_pipeline.settings import Settings, load_settings
from memory_pipeline.stores.embeddings import embeddings_client
from memory_pipeline.stores.llm import ChatCompletion, chat_client

WORK = Path(__file__).with_name(".work")
COLD = Path(__file__).with_name("runtime_cold.json")

# A fixed, realistic turn: what the summarize stage will send.
FIXED_TURN = """[user] The webhook tests fail on CI but pass locally. Please find out why. From now on, always run
`pytest -x` before you tell me something is fixed, and never edit the generated files under src/gen/.
[assistant] I ran the tests with `pytest -x tests/webhooks`. The failure is in test_signature: the CI job sets
TZ=UTC while my machine uses Europe/Berlin, and the signature check compares a naive local timestamp against the
header's UTC time, so it is off by one hour and the 5-minute tolerance rejects it.
[tool:bash] FAILED tests/webhooks/test_signature.py::test_valid_signature - SignatureExpired: timestamp 3600s old
[assistant] Fixed by parsing the header with datetime.fromtimestamp(ts, tz=UTC) in src/webhooks/verify.py and
comparing aware datetimes. `pytest -x` passes (42 tests). I did not touch src/gen/."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _private(state: Path, cache: Path) -> Settings:
    return load_settings(
        memory_pipeline_state_dir=state,
        memory_pipeline_cache_dir=cache,
        local_es_port=_free_port(),
        local_llama_port=_free_port(),
        local_embed_port=_free_port(),
    )


def _start_each(settings: Settings) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """Prepare (fetch/build/verify) and start each server alone; seconds per phase and idle RSS."""
    runtime = LocalRuntime(settings, progress=lambda m: print("   ", m, flush=True))
    prepare, start, rss = {}, {}, {}
    try:
        for service in runtime.services():
            begin = time.monotonic()
            service.prepare(runtime.progress)
            prepare[service.name] = time.monotonic() - begin
            [status] = runtime.up([service.name])
            start[service.name] = status.seconds or 0.0
        time.sleep(5)  # idle: let start-up allocations settle
        rss = {s.name: s.rss_mb or 0.0 for s in runtime.status()}
    finally:
        runtime.down()
    return prepare, start, rss


def _chat_throughput(settings: Settings, runs: int = 3) -> tuple[float, float, int, int]:
    """Server-side timings on the fixed turn: the whole prompt evaluated (no prompt cache), then a
    fixed-length free-text answer (EOS ignored), so every run measures the same work."""
    prompt_tps, gen_tps = [], []
    with chat_client(settings) as client:
        for _ in range(runs):
            answer = ChatCompletion.model_validate(
                client.request(
                    "POST",
                    "/v1/chat/completions",
                    json={
                        "model": client.model_id(),
                        "max_tokens": 128,
                        "temperature": 0,
                        "cache_prompt": False,
                        "ignore_eos": True,
                        "messages": [
                            {"role": "system", "content": "Summarise what a coding agent should remember."},
                            {"role": "user", "content": FIXED_TURN},
                        ],
                    },
                )
            )
            assert answer.timings is not None
            prompt_tps.append(answer.timings.prompt_per_second or 0.0)
            gen_tps.append(answer.timings.predicted_per_second or 0.0)
    return (
        statistics.median(prompt_tps),
        statistics.median(gen_tps),
        answer.usage.prompt_tokens,
        answer.usage.completion_tokens,
    )


def _embedding_throughput(settings: Settings, n: int = 512) -> float:
    texts = [f"memory {i}: {line}" for i in range(n // 8) for line in FIXED_TURN.splitlines()[:8]]
    with embeddings_client(settings) as client:
        client.embed(texts[:32])  # warm-up
        begin = time.perf_counter()
        client.embed(texts, batch_size=32)
        return len(texts) / (time.perf_counter() - begin)


def main(argv: list[str]) -> None:
    shared = load_settings()
    rows = []
    if "--cold" in argv:
        cold_cache = WORK / "cold-cache"
        shutil.rmtree(WORK, ignore_errors=True)
        print("cold setup on an empty cache (downloads and the llama-server build)", flush=True)
        cold_prepare, cold_start, _ = _start_each(_private(WORK / "cold-state", cold_cache))
        shutil.rmtree(WORK, ignore_errors=True)
        COLD.write_text(
            json.dumps(
                {
                    "measured": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
                    "prepare": cold_prepare,
                    "start": cold_start,
                },
                indent=2,
            )
            + "\n"
        )
    # A cold setup takes minutes: without --cold the last one measured (and its date) is shown.
    cold = json.loads(COLD.read_text()) if COLD.exists() else None
    print("warm starts (cache filled, fresh state folder)", flush=True)
    warm_prepare, warm_start, rss = _start_each(_private(WORK / "warm-state", shared.memory_pipeline_cache_dir))
    shutil.rmtree(WORK, ignore_errors=True)
    for name in ("elasticsearch", "chat", "embed"):
        cold_cell = f"{cold['prepare'][name]:.1f} + {cold['start'][name]:.1f}" if cold else "not measured (--cold)"
        rows.append([name, cold_cell, f"{warm_prepare[name]:.1f} + {warm_start[name]:.1f}", f"{rss[name]:.0f}"])

    LocalRuntime(shared, progress=lambda m: None).up(["chat", "embed"])
    prompt_tps, gen_tps, prompt_tokens, gen_tokens = _chat_throughput(shared)
    texts_per_s = _embedding_throughput(shared)
    body = "\n\n".join(
        [
            "Setup per server, seconds as prepare (fetch, build, verify) + start until ready"
            + (f" (cold: measured {cold['measured']} with --cold)" if cold else "")
            + ":",
            table(["server", "cold (empty cache)", "warm", "idle RSS (MB)"], rows),
            "The cold llama-server prepare includes building it (once per machine); the chat model's prepare "
            "includes the sha256 check that runs before every start.",
            table(
                ["figure", "value"],
                [
                    [
                        f"chat prompt processing (fixed turn, {prompt_tokens} prompt tokens, no prompt cache, "
                        "median of 3)",
                        f"{prompt_tps:.0f} tok/s",
                    ],
                    [f"chat generation ({gen_tokens} tokens, median of 3)", f"{gen_tps:.1f} tok/s"],
                    ["embeddings, batches of 32 (512 short texts)", f"{texts_per_s:.0f} texts/s"],
                ],
            ),
        ]
    )
    write_section("runtime", "uv run python -m bench runtime" + (" --cold" if "--cold" in argv else ""), body)
    print(body)


if __name__ == "__main__":
    main(sys.argv[1:])
