"""Screenshots of the memory browser's pages, on a small demo history, into docs/screenshots/ (described in
docs/browser.md).

uv run python -m bench screenshots [--again] [--only=NAME,...]      (or: make screenshots)

Three short sessions in two projects over three days are run through the pipeline (ingest, the local LLM's
ideas, observations, vectors) on the local servers, with a few proposals waiting in REVIEW.md, a rule already
in MEMORY.md, one memory edited, a next session's start, prompt and file recall in the injection ledger and
one memory forgotten; a project kept out by MEMORY_EXCLUDE and two by the person's exclusions list; then
`memory-pipeline serve` is started and each page is captured by headless chromium at 1280 px, in the light theme
and in the dark one; last, a service whose Elasticsearch is down, for the page an outage shows.

--only=excluded,failed,down redraws those pages alone (and their dark twins); the pages that read only the
settings and the memory folder (Excluded, and `failed`: its Remove refused, as it is for a browser that never
logged in) and the outage page need no demo run, so redrawing only them takes seconds.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from unittest import mock

from dagster import materialize
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from memory_pipeline.assets import recall, summarize
from memory_pipeline.curation import actions
from memory_pipeline.partitions import instance_with_days
from memory_pipeline.reflect.workspace import ensure_project_dir
from memory_pipeline.resources import build_resources
from memory_pipeline.search import moment
from memory_pipeline.search.models import Filters
from memory_pipeline.search.open import open_search
from memory_pipeline.sessions.exclude_list import add_exclusion, exclusions_path
from memory_pipeline.settings import Settings, isolated_settings, load_settings
from memory_pipeline.stores.injections import open_ledger
from memory_pipeline.stores.memory_store import open_store
from testkit.browser import chromium, write_session
from testkit.ingest_helpers import INGEST_ASSETS, reset_days
from testkit.servers import free_port, memory_service

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / ".work" / "screenshots"
SHOTS = ROOT / "docs" / "screenshots"
SHOP, BOT = "/work/demo-shop", "/work/demo-bot"
# The Excluded page: a pattern from the settings (MEMORY_EXCLUDE, read-only there) and two the person added.
SETTINGS_EXCLUDE, OWN_EXCLUDE = ["/work/demo-secret-*"], ["/work/demo-client-acme", "~/clients/*"]
# Pages that read only the settings and the memory folder: no demo run is needed to draw them.
LOCAL_PAGES = {"excluded": "/excluded"}
NEXT_SESSION = "demo-next-session"
SESSIONS = [
    (
        "2024-08-05",
        SHOP,
        [
            (
                "From now on always use pnpm, never npm, in this repo.",
                "Noted: pnpm only. I switched the CI job to pnpm install.",
            ),
            (
                "The checkout page shows NaN for an empty cart. Why?",
                "formatPrice divided by the item count, which is 0 for an empty cart. Fixed by returning 0.00 early.",
            ),
            (  # a small model's answer that is a tool call written as JSON: the pages show it as one line
                "Which package still pulls in lodash?",
                '```json {"name": "bash", "arguments": {"command": "pnpm why lodash"}} ```',
            ),
        ],
    ),
    (
        "2024-08-12",
        SHOP,
        [
            (
                "We decided to use Vitest instead of Jest: Jest kept breaking on our ESM imports.",
                "Done: Vitest is configured, 42 tests pass, Jest removed.",
            )
        ],
    ),
    (
        "2024-08-19",
        BOT,
        [
            (
                "The Telegram bot replies twice to every message after the deploy.",
                "Two instances ran the long-polling loop. The deploy now stops the old one first.",
            )
        ],
    ),
]
MEMORY = """# Memory — /work/demo-shop

Curated by people: promoted from REVIEW.md, edit freely.

## Hard rules

- Never commit .env files <!-- p-20240805-001 -->
"""
REVIEW = """# Review — /work/demo-shop

## Hard rules

- [ ] p-20240819-001 Use pnpm for every install, never npm (evidence: 2 sessions)
- [ ] p-20240819-002 Return 0.00 from formatPrice for empty carts (evidence: 1 session)

## Decisions

- [ ] p-20240819-003 Vitest, not Jest, because of ESM imports (evidence: 1 session)
"""


def main(flags: list[str]) -> None:
    only = {n for f in flags if f.startswith("--only=") for n in f.removeprefix("--only=").split(",") if n}
    demo = not only or bool(only - set(LOCAL_PAGES) - {"down", "failed"})
    # --again: keep bench/.work (the chat model's journal answers every turn read before) and re-run the days,
    # e.g. after another run deleted them from the shared indices: minutes instead of the model's half hour.
    if demo and "--again" not in flags:
        shutil.rmtree(WORK, ignore_errors=True)
    settings = isolated_settings(load_settings(), WORK, sessions_dir=WORK / "sessions")
    pages = _demo(settings) if demo else {}
    if not demo:
        settings.sessions_dir.mkdir(parents=True, exist_ok=True)  # the service reads it: no session in it
        _workspace(settings)  # what the run writes before its recall and forget (_demo)
    pages |= LOCAL_PAGES
    pages = {name: path for name, path in pages.items() if not only or name in only}
    SHOTS.mkdir(parents=True, exist_ok=True)
    # The service sees the demo's MEMORY_EXCLUDE (the pipeline's own runs above had no use for it).
    with (
        mock.patch.dict(os.environ, {"MEMORY_EXCLUDE": json.dumps(SETTINGS_EXCLUDE)}),
        memory_service(settings) as base,
        chromium(width=1280, height=1000) as driver,
    ):
        for theme in ("light", "dark"):
            driver.get(f"{base}/health")
            driver.execute_script(f"localStorage.setItem('memory-theme', '{theme}')")
            for name, path in pages.items():
                _shoot(driver, f"{base}{path}", f"{name}-{theme}" if theme == "dark" else name)
            # A write that fails: this browser never logged in, so the Excluded page's Remove is refused.
            if not only or "failed" in only:
                failed = f"failed-{theme}" if theme == "dark" else "failed"
                _shoot(driver, f"{base}/excluded", failed, click="#own tr:first-child + tr button")
    if only and "down" not in only:
        return
    # The page a browser gets while Elasticsearch is down: a service whose Elasticsearch port has nothing on it.
    down = isolated_settings(settings, WORK / "down", local_es_port=free_port())
    down.sessions_dir.mkdir(parents=True, exist_ok=True)
    with memory_service(down) as base, chromium(width=1280, height=700) as driver:
        _shoot(driver, f"{base}/?q=pnpm", "down")


def _workspace(settings: Settings) -> None:
    """The demo's memory folder as the pages read it: REVIEW.md and MEMORY.md of the shop, and the person's
    exclusions (added once: a re-run with --again finds them there)."""
    (ensure_project_dir(settings.memory_workspace, SHOP) / "REVIEW.md").write_text(REVIEW)
    (ensure_project_dir(settings.memory_workspace, SHOP) / "MEMORY.md").write_text(MEMORY)
    # The bot's folder too: the pipeline's daily reflection makes one for every project it reads (the demo runs
    # none), and the pages' project lists are those folders.
    ensure_project_dir(settings.memory_workspace, BOT)
    for pattern in OWN_EXCLUDE:
        add_exclusion(exclusions_path(settings), pattern)


def _demo(settings: Settings) -> dict[str, str]:
    """The demo history run through the pipeline, a next session's recall and a forget: the pages that show them."""
    days = [day for day, _, _ in SESSIONS]
    reset_days(settings, days)
    for n, (day, project, turns) in enumerate(SESSIONS):
        write_session(settings.sessions_dir / f"{n}.jsonl", f"demo-{n}", day, project, turns)
    assets = [*INGEST_ASSETS, summarize.llm_ideas, summarize.memory_summary_index, recall.turn_observations,
              recall.memory_observations_index, recall.embeddings, recall.es_dense_vector]  # fmt: skip
    for day in days:
        assert materialize(
            assets, resources=build_resources(settings), partition_key=day, instance=instance_with_days([day])
        ).success
    _workspace(settings)
    with open_search(settings) as search, open_store(settings) as store:
        [observation] = search.index(
            "checkout NaN empty cart", k=1, filters=Filters(project=SHOP, kind=("observation",))
        )
        actions.edit(search, store, settings.memory_workspace, observation.id, priority="high")
        # What a next session of the shop was given (the Given page): its start, a prompt, a file it read.
        ledger = open_ledger(settings)
        for event, text in (("start", ""), ("prompt", "Set up the test runner for the cart"), ("file", "src/cart.ts")):
            asked = moment.Moment(session_id=NEXT_SESSION, agent="pi", event=event, project=SHOP, text=text)
            moment.recall(search, ledger, asked, settings.memory_workspace)
        # A memory of the other project forgotten (no other page shows it): the Undo and Recently forgotten pages.
        # With --again it was forgotten by the last run already (the trail keeps it out of the re-run): still held.
        for found in search.index("bot replies twice", k=1, filters=Filters(project=BOT)):
            actions.forget(search, store, settings.memory_workspace, found.id)
        forgotten = next(m.memory_id for m in actions.recently_forgotten(store) if m.project == BOT)
    return {
        "search": f"/?q=pnpm+npm&project={SHOP}",
        "recent": f"/?project={SHOP}",
        "memory": f"/m/{observation.id}",
        "review": "/review",
        "glance": f"/glance?project={SHOP}",
        "given": "/injected",
        "given-session": f"/injected?session_id={NEXT_SESSION}",
        "undo": f"/?forgotten={forgotten}",
        "forgotten": "/forgotten",
    }


def _shoot(driver, url: str, name: str, click: str = "") -> None:  # noqa: ANN001
    """The page at `url` (after pressing `click` and accepting its question, when given) into `name`.png."""
    driver.get(url)
    time.sleep(1.0)  # the recent feed's first poll, the fonts
    if click:
        driver.find_element(By.CSS_SELECTOR, click).click()
        WebDriverWait(driver, 10).until(expected_conditions.alert_is_present()).accept()
        WebDriverWait(driver, 20).until(lambda d: d.find_element(By.ID, "failed").is_displayed())
    # The whole page, not only the window: a viewport as tall as its content. The window's size counts the
    # browser's own bars (about 140 px headless), so the content is measured in a short window, then the window
    # made that much taller than the content.
    driver.set_window_size(1280, 700)
    bars = 700 - driver.execute_script("return window.innerHeight")
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1280, min(height, 2400) + bars)
    time.sleep(0.3)
    driver.save_screenshot(str(SHOTS / f"{name}.png"))
    print(f"{SHOTS / f'{name}.png'}: {url}")
