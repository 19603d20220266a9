"""A person's decision against the replies a small model gives it: is it stored, and in the person's words?

    uv run python -m bench person_words [--replies=20]

CI once lost the decision of the agent-loop test ("We decided to use Vitest instead of Jest, because Jest kept
breaking on our ESM imports."): pi's reply, written by the 0.5B chat model at its default temperature, differs
from run to run, and with some replies the pipeline stored nothing for the turn. Here the chat server writes
`--replies` such replies (pi's opening system line, the rule turn before, temperature 1, one seed each; kept in
bench/.work/person_words so both sides read the same), and `summarise_turn` reads each turn (the person's
sentence and that reply), as `llm_ideas` does with the loop's token cap: the code before this work (d6f893e)
against now, each in a process of its own, the chat server started anew before each side.

Per side: turns whose decision is stored; stored in the person's words (every content word of the memory is in
the person's sentence); stored with words the person did not say (a reason from the reply, a reworded choice);
turns failed (an invalid answer on both attempts); model calls.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from bench.baseline import code_at, load, run_side
from bench.results_file import table, write_section
from memory_pipeline.language.words import content_words
from memory_pipeline.settings import load_settings
from testkit.paths import ROOT

WORK = Path(__file__).with_name(".work") / "person_words"
BASELINE = "d6f893e"  # the last commit before the person's words were kept over the model's
RULE = "Rule for this project: always use pnpm, never npm."
DECIDED = "We decided to use Vitest instead of Jest, because Jest kept breaking on our ESM imports."
# pi's own opening line; the rest of its system prompt (tools, guidelines) only makes the replies longer.
SYSTEM = "You are an expert coding assistant operating inside pi, a coding agent harness."
MAX_OUTPUT_TOKENS = 300  # the agent loop's cap (testkit: Settings(max_tokens=300))
_RUN = """
import json, sys
sys.path.insert(0, sys.argv[1])
from memory_pipeline.settings import load_settings
from memory_pipeline.stores.llm import chat_client
from memory_pipeline.summarize.extract import TurnJob, summarise_turn
from memory_pipeline.summarize.prompt import TurnMessage
assert sys.modules["memory_pipeline"].__file__.startswith(sys.argv[1]), sys.modules["memory_pipeline"].__file__
said, replies, cap = json.loads(open(sys.argv[2]).read())
rows = []
with chat_client(load_settings(), timeout=900) as client:
    context = client.context_size() or 4096
    for n, reply in enumerate(replies):
        job = TurnJob("bench", f"t{n}", "/shop", [TurnMessage("user", said), TurnMessage("assistant", reply)])
        o = summarise_turn(client, job, context, cap)
        rows.append({"status": o.status, "attempts": o.attempts,
                     "ideas": [{"kind": str(i.kind), "summary": i.summary} for i in o.ideas]})
        print(f"reply {n}: {o.status}, {len(o.ideas)} memories", file=sys.stderr, flush=True)
json.dump(rows, open(sys.argv[3], "w"))
"""


def replies(count: int) -> list[str]:
    """The chat model's replies to the decision, one a seed, kept for the next run."""
    kept = WORK / f"replies-{count}.json"
    if kept.exists():
        return json.loads(kept.read_text())
    settings = load_settings()
    key = settings.api_key("chat")
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": RULE},
        {"role": "assistant", "content": "Understood: I will use pnpm, never npm."},
        {"role": "user", "content": DECIDED},
    ]
    written = []
    with httpx.Client(timeout=600, headers={"Authorization": f"Bearer {key}"} if key else {}) as http:
        for seed in range(count):
            body = {"messages": messages, "temperature": 1.0, "seed": seed, "max_tokens": 400}
            answer = http.post(f"{settings.chat_url}/v1/chat/completions", json=body)
            answer.raise_for_status()
            written.append(answer.json()["choices"][0]["message"]["content"] or "")
    kept.write_text(json.dumps(written))
    return written


def measure(code: Path, name: str, given: Path) -> list[dict]:
    """One side's rows, on a chat server started for it (`baseline.run_side`)."""
    out = WORK / f"{name}.json"
    run_side(code, _RUN, out, str(given))
    return json.loads(out.read_text())


def summary(rows: list[dict]) -> dict[str, int]:
    said = content_words(DECIDED)
    decisions = [[i for i in r["ideas"] if i["kind"] == "decision" and "Vitest" in i["summary"]] for r in rows]
    return {
        "stored": sum(bool(d) for d in decisions),
        "in the person's words": sum(
            bool(d) and all(content_words(i["summary"]) <= said for i in d) for d in decisions
        ),
        "with words the person did not say": sum(any(content_words(i["summary"]) - said for i in d) for d in decisions),
        "failed": sum(r["status"] == "failed" for r in rows),
        "model calls": sum(r["attempts"] for r in rows),
    }


def main(flags: list[str]) -> None:
    count = int(next((f.split("=", 1)[1] for f in flags if f.startswith("--replies=")), "20"))
    WORK.mkdir(parents=True, exist_ok=True)
    given = WORK / "given.json"
    given.write_text(json.dumps([DECIDED, replies(count), MAX_OUTPUT_TOKENS]))
    loads = [load()]
    before = summary(measure(code_at(BASELINE, WORK), f"before-{BASELINE}", given))
    loads.append(load())
    now = summary(measure(ROOT, "now", given))
    loads.append(load())

    def cell(side: dict[str, int], name: str) -> str:
        return str(side[name]) if name == "model calls" else f"{side[name]} / {count}"

    rows = [[name, cell(before, name), cell(now, name)] for name in before]
    body = "\n\n".join(
        [
            f'The person\'s turn "{DECIDED}" with {count} replies the chat model wrote to it (temperature 1, seeds '
            f"0-{count - 1}), read by `summarise_turn` with the loop's token cap ({MAX_OUTPUT_TOKENS}); the code "
            f"before ({BASELINE}) against now, the chat server started anew before each side. Load average (1, 5, "
            f"15 min) before, between and after: {' / '.join(loads)}.",
            table(["turns whose decision is …", f"before ({BASELINE})", "now"], rows),
        ]
    )
    write_section("person_words", "uv run python -m bench person_words", body)
    print(body)
