"""The redactor's rate now against the code before the fast path (sessions/reach.py), on every corpus the
redaction tests use, output byte-identical.

    uv run python -m bench redaction_speed
    uv run python -m bench redaction_speed --repeat=1   # one pass a corpus (the baseline's take ~10 min a pass)

The corpora (testkit/corpora/redaction_texts.py): gitleaks' examples in their line contexts, the held-out
formats in every context, the real lines alone and as their files' blocks, the session files of the fixtures
and of bench/corpus whole; and the long synthetic tool output of bench secrets_heldout (200,000 characters).
Each side runs in a process of its own on the same texts (the baseline from `git archive`, as bench knowledge
does), every corpus REPEAT times, the fastest pass counted; every output's SHA-256 must be the baseline's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from bench.baseline import code_at, load
from bench.results_file import table, write_section
from bench.secrets_heldout import _long_text
from testkit.corpora.redaction_texts import texts
from testkit.paths import ROOT

WORK = Path(__file__).with_name(".work") / "redaction_speed"
BASELINE = "c6c0e1d"  # the last commit before 5562315, where sessions/reach.py and the fast path landed
REPEAT = 3
TARGET = 5.0
LONG = "long synthetic tool output (200,000 characters)"
_RUN = """
import hashlib, json, sys, time
sys.path.insert(0, sys.argv[1])
from memory_pipeline.sessions.redact import Redactor
assert sys.modules["memory_pipeline"].__file__.startswith(sys.argv[1]), sys.modules["memory_pipeline"].__file__
corpora, repeat = json.load(open(sys.argv[2])), int(sys.argv[4])
result = {}
for name, texts in corpora.items():
    best = float("inf")
    for _ in range(repeat):
        # Every pass cold: a new redactor, and the answers the code keeps between texts (shapes.machine_made's
        # cache, when the code has one) forgotten, so a pass gains only from what repeats within its texts.
        redactor = Redactor()
        kept = getattr(sys.modules.get("memory_pipeline.sessions.shapes"), "machine_made", None)
        getattr(kept, "cache_clear", lambda: None)()
        begin = time.perf_counter()
        outputs = [redactor.redact(t) for t in texts]
        best = min(best, time.perf_counter() - begin)
    digests = [hashlib.sha256(o.encode("utf-8", "surrogatepass")).hexdigest() for o in outputs]
    result[name] = {"seconds": best, "digests": digests}
    print(f"{name}: {best:.2f} s", file=sys.stderr, flush=True)
json.dump(result, open(sys.argv[3], "w"))
"""


def corpora() -> dict[str, list[str]]:
    """Every text by corpus, as the redaction tests group them."""
    groups: dict[str, list[str]] = defaultdict(list)
    for corpus, text in texts():
        family = corpus.split("/")[0]
        groups[
            {"gitleaks": "gitleaks examples", "heldout": "held-out secrets", "sessions": "session files"}.get(
                family, family
            )
        ].append(text)
    groups[LONG] = [_long_text()] * 5
    return dict(groups)


def measure(code: Path, wanted: Path, name: str, repeat: int = REPEAT) -> dict[str, dict]:
    out = WORK / f"{name}.json"
    argv = [sys.executable, "-W", "ignore", "-c", _RUN, str(code), str(wanted), str(out), str(repeat)]
    subprocess.run(argv, check=True)
    return json.loads(out.read_text())


def main(flags: list[str]) -> None:
    WORK.mkdir(parents=True, exist_ok=True)
    repeat = next((int(f.split("=", 1)[1]) for f in flags if f.startswith("--repeat=")), REPEAT)
    groups = corpora()
    wanted = WORK / "texts.json"
    wanted.write_text(json.dumps(groups))
    loads = [load()]
    before = measure(code_at(BASELINE, WORK), wanted, f"before-{BASELINE}", repeat)
    loads.append(load())
    now = measure(ROOT, wanted, "now", repeat)
    loads.append(load())
    rows, total = [], {"bytes": 0, "before": 0.0, "now": 0.0}
    differ = {}
    for name, items in groups.items():
        size = sum(len(t.encode("utf-8", "surrogatepass")) for t in items)
        old, new = before[name], now[name]
        differ[name] = sum(a != b for a, b in zip(old["digests"], new["digests"], strict=True))
        total["bytes"] += size
        total["before"] += old["seconds"]
        total["now"] += new["seconds"]
        rows.append(
            [
                name,
                f"{len(items):,}",
                f"{size / 2**20:.2f}",
                f"{size / 2**20 / old['seconds']:.2f}",
                f"{size / 2**20 / new['seconds']:.2f}",
                f"**{old['seconds'] / new['seconds']:.1f}x**",
                "yes" if not differ[name] else f"NO: {differ[name]} differ",
            ]
        )
    speedup = total["before"] / total["now"]
    rows.append(
        [
            "all",
            f"{sum(len(v) for v in groups.values()):,}",
            f"{total['bytes'] / 2**20:.2f}",
            f"{total['bytes'] / 2**20 / total['before']:.2f}",
            f"{total['bytes'] / 2**20 / total['now']:.2f}",
            f"**{speedup:.1f}x**",
            "yes" if not any(differ.values()) else "NO",
        ]
    )
    slowest = min(before[n]["seconds"] / now[n]["seconds"] for n in groups)
    body = "\n\n".join(
        [
            f"`Redactor().redact` on the same texts, the code before the fast path ({BASELINE}, the commit before "
            "sessions/reach.py) against now, each in a process of its own, every corpus "
            f"{repeat} time(s) (fastest pass), each pass cold (a new redactor, shapes.machine_made's cache emptied: "
            "a pass gains only from what repeats within its own texts). "
            "Load average (1, 5, 15 min) before, between and after: "
            f"{' / '.join(loads)}. MB/s:",
            table(["corpus", "texts", "MB", f"before ({BASELINE})", "now", "speed-up", "output identical"], rows),
            f"Target: at least {TARGET:.0f}x the old rate: {speedup:.1f}x over all the text, {slowest:.1f}x on the "
            f"corpus that gained least ({'met' if slowest >= TARGET else 'not met on every corpus'}). Every output "
            "compared by SHA-256 with the baseline's.",
        ]
    )
    command = "uv run python -m bench redaction_speed" + (f" --repeat={repeat}" if repeat != REPEAT else "")
    write_section("redaction_speed", command, body)
    print(body)
    assert not any(differ.values()), f"output differs from {BASELINE}: {differ}"
