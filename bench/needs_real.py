"""The real-history check: in one person's real consecutive sessions, how many of the needs a later session had
(what an earlier session had already said: a rule restated, a correction repeated, a fact asked again) would
today's delivery have met before the person had to say it again?

    uv run python -m bench needs_real                 # reads bench/.work/real_history (see below)
    uv run python -m bench needs_real --real=PATH     # M-Claude's Archives/ folder at the pinned commit

The labels (bench/labels/real_history_needs.json, provenance in REAL_HISTORY_SOURCES.md) were written by hand
and committed before this file. The sessions (60 Claude Code files of M-Thisness/M-Claude, CC0) are not in
the repository: PATH holds them, each checked against its sha256 in the labels. They are moved back five
years (every `timestamp`), so their days are their own in the shared indices, then go through the LLM-free
assets in one range run; each later session is replayed against the store as of its first timestamp
(`bench.needs.AsOf`), its prompts in order up to the last one that carries a need, through each delivery:
the product's (the memory service's `POST /api/v1/recall`, which pi's extension and Claude Code's hooks call:
the start, every prompt, served in this process by `bench.needs_served.ServedHere`), the two deliveries as
issue 46 found them (Claude Code's hooks briefing for the words "(no prompt)" at the start and for every
prompt; pi's briefing at the first prompt), and the baseline (the project's last user messages at the first
prompt). A need is met
when a line delivered at or before the prompt where the person had to say it names it. Why a need was
missed: in the project's store but not delivered (selection), only in another working folder's (a
project-scoped delivery cannot see it), or nowhere in the store as of then (extraction).
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from collections.abc import Callable
from contextlib import closing
from datetime import datetime, timedelta
from pathlib import Path

from bench.needs import claude_code_today, today
from bench.needs_served import ServedHere
from bench.results_file import table, write_section
from memory_pipeline.search.briefing import tokens
from memory_pipeline.search.engine import MemorySearch
from memory_pipeline.search.models import Filters
from memory_pipeline.search.open import open_search
from memory_pipeline.settings import Settings, isolated_settings, load_settings
from testkit.corpora.make_real_history_needs import OUT as LABELS_FILE
from testkit.ingest_helpers import recall_history
from testkit.needs import AsOf, Delivered, DeliveryMaker, RecallEvent, names, replay, score

REAL = Path(__file__).with_name(".work") / "real_history"
BUDGET = 1500
_STAMP = re.compile(r'("timestamp"\s*:\s*")(\d{4})-')
YEARS_BACK = 5


def earlier(stamp: str) -> str:
    """An ISO timestamp moved back `YEARS_BACK` years (as the staged files are)."""
    return f"{int(stamp[:4]) - YEARS_BACK}{stamp[4:]}"


def just_before(stamp: str) -> str:
    """A second before `stamp`: the bound of a session's store (its own first turn is established at its start)."""
    moment = datetime.fromisoformat(stamp.replace("Z", "+00:00")) - timedelta(seconds=1)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def stage(source: Path, truth: dict, target: Path) -> Path:
    """Every session file of `source` under `target/<its folder>/`, as Claude Code keeps them, moved back in
    time; a file the labels name must have the sha256 they record."""
    for path in sorted(source.glob("*.jsonl")):
        raw = path.read_bytes()
        wanted = truth["files"].get(path.stem)
        if wanted and hashlib.sha256(raw).hexdigest() != wanted:
            raise SystemExit(f"{path}: not the file the labels were written on (sha256 differs)")
        text = raw.decode(errors="replace")
        cwd = next((json.loads(line).get("cwd") for line in text.splitlines() if '"cwd"' in line), None) or "unknown"
        folder = target / re.sub(r"[^A-Za-z0-9]", "-", cwd)
        folder.mkdir(parents=True, exist_ok=True)
        moved = _STAMP.sub(lambda m: f"{m.group(1)}{int(m.group(2)) - YEARS_BACK}-", text)
        (folder / path.name).write_text(moved)
    missing = set(truth["files"]) - {p.stem for p in source.glob("*.jsonl")}
    if missing:
        raise SystemExit(f"{source}: {len(missing)} labelled session files missing, e.g. {sorted(missing)[0]}")
    return target


def last_messages(search: MemorySearch, settings: Settings) -> Callable[[RecallEvent], Delivered]:
    """The baseline: the project's most recent user messages (as the store holds them), newest first, at
    the first prompt, within the budget."""
    given: set[str] = set()

    def deliver(event: RecallEvent) -> Delivered:
        if event.event != "prompt" or event.session_id in given:
            return Delivered()
        given.add(event.session_id)
        rows = search.recent(Filters(project=event.project, kind=("observation",)), k=40)
        text = "## Recent messages in this project\n"
        for row in rows:
            line = f"- {' '.join(row.summary.split())}\n"
            if tokens(text + line) <= BUDGET:
                text += line
        return Delivered(markdown=text, tokens=tokens(text))

    return deliver


# The product's delivery (the service's `POST /api/v1/recall`, which pi's extension and Claude Code's hooks both
# call: the start's briefing, every prompt, never a line given before), then the deliveries as issue 46 found
# them, then the baseline.
PRODUCT = "memory service (POST /api/v1/recall: start + every prompt)"
DELIVERIES: dict[str, DeliveryMaker] = {
    "Claude Code hooks as filed (briefing for '(no prompt)', then every prompt)": claude_code_today,
    "pi extension as filed (first prompt)": today,
    "baseline (last user messages)": last_messages,
}


def main(argv: list[str]) -> None:
    truth = json.loads(LABELS_FILE.read_text())
    source = Path(next((a.split("=", 1)[1] for a in argv if a.startswith("--real=")), REAL))
    pieces = {key: piece for project in truth["projects"].values() for key, piece in project.items()}
    sessions = [s | {"day": earlier(s["day"])} for s in truth["sessions"]]
    base = load_settings()
    rows, listing = [], []
    with tempfile.TemporaryDirectory(prefix="needs-real-") as tmp:
        folder = stage(source, truth, Path(tmp) / "claude-projects")
        settings = isolated_settings(base, Path(tmp), claude_projects_dir=folder)
        days = recall_history(settings)
        print(f"  {len(days)} days of the real history ingested", flush=True)
        served = ServedHere()
        with open_search(settings) as search, closing(served):
            verdicts: dict[tuple[str, str], dict[str, bool]] = {}
            for name, make in {PRODUCT: served, **DELIVERIES}.items():
                met = needs = used_tokens = 0
                for session in sessions:
                    view = AsOf(search, just_before(session["day"]))
                    scored = score(replay(session, make(view, settings)), pieces)  # type: ignore[arg-type]
                    needs, met, used_tokens = needs + scored.needs, met + scored.met, used_tokens + scored.tokens
                    for step in session["steps"]:
                        for key in step["needs"]:
                            verdicts.setdefault((session["session_id"], key), {})[name] = key not in scored.missed
                rows.append([name, needs, met, f"{met / needs:.2f}", f"{used_tokens / len(sessions):.0f}"])
            for session in sessions:
                view = AsOf(search, just_before(session["day"]))
                for n, step in enumerate(session["steps"]):
                    for key, why in zip(step["needs"], step["why"] * len(step["needs"]), strict=False):
                        got = verdicts[(session["session_id"], key)]
                        here = view.find(pieces[key]["statement"], k=20, filters=Filters(project=session["project"]))
                        anywhere = view.find(pieces[key]["statement"], k=20)
                        if any(names(r.summary, pieces[key]["match"]) for r in here):
                            reason = "in the store, not delivered"
                        elif any(names(r.summary, pieces[key]["match"]) for r in anywhere):
                            reason = "only in another working folder"
                        else:
                            reason = "nowhere in the store (not extracted)"
                        listing.append(
                            [
                                session["session_id"][:8],
                                truth["sessions"][sessions.index(session)]["day"][:16],
                                f"prompt {n + 1}: {step['text'][:70]}",
                                key,
                                why,
                                ", ".join(k.split(" (")[0] for k, v in got.items() if v) or "none",
                                "-" if all(got.values()) else reason,
                            ]
                        )
    body = "\n\n".join(
        [
            f"History: `{truth['source']['repo']}` at `{truth['source']['commit'][:12]}` "
            f"({truth['source']['licence']}), {len(truth['files'])} labelled files of 60; "
            f"{len(sessions)} later sessions, "
            f"{sum(len(st['needs']) for s in sessions for st in s['steps'])} needs (labels "
            "`bench/labels/real_history_needs.json`). LLM-free store, as of each session's start. A need counts as met "
            "when a delivered line names it (its keyword sets): the line need not settle it.",
            table(["delivery", "needs", "met before said again", "share", "tokens a session"], rows),
            "Each need, who met it, and why it was missed:",
            table(
                [
                    "session",
                    "started",
                    "where it arose",
                    "need",
                    "what the person had to do",
                    "met by",
                    "why the others missed it",
                ],
                listing,
            ),
        ]
    )
    write_section("needs_real", " ".join(["uv run python -m bench needs_real", *argv]), body)
    print(table(["delivery", "needs", "met before said again", "share", "tokens a session"], rows))
