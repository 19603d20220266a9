"""Every action of the memory browser's pages in a real headless chromium at 1280 px, against `memory-pipeline
serve` over the real indices (a day run through ingest, observations and vectors on the local servers): short ids
that copy the whole id, the memory text given the room, a model's raw tool-call JSON shown as one line, edit,
forget, promote and reject each confirmed and reported done, a forget undone from its done message (listed on the
Recently forgotten page until then), MEMORY.md without its comments, the recent feed picking up a new memory
without a reload, numbers on the glance bars, the theme toggle remembered, and the page an Elasticsearch outage
shows (styled, with the navigation, the server and the command that starts it)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest
from dagster import materialize
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions

from memory_pipeline.partitions import instance_with_days
from memory_pipeline.reflect.workspace import ensure_project_dir
from memory_pipeline.resources import build_resources
from memory_pipeline.settings import Settings, isolated_settings
from testkit.browser import accept_dialog, chromium, log_in, wait, write_session
from testkit.ingest_helpers import RECALL_ASSETS, reset_days
from testkit.servers import free_port, memory_service

DAY = "2024-07-03"
PROJECT = "/work/pages-shop"
TURNS = [
    ("Which package pulls in lodash? We want it gone.",
     '```json {"name": "bash", "arguments": {"command": "pnpm why lodash"}} ```'),
    ("The checkout page shows NaN for an empty cart. Why?",
     "averageItemPrice divided by items.length, which is 0 for an empty cart; it now returns 0 early."),
    ("From now on always use pnpm, never npm, in this repo.", "Understood: pnpm only."),
]  # fmt: skip
REVIEW = """# Review — /work/pages-shop

## Hard rules

- [ ] p-20240703-001 Use pnpm for every install, never npm (evidence: 2 sessions)
- [ ] p-20240703-002 Never edit generated files (evidence: 1 session)
"""
MEMORY = """# Memory — /work/pages-shop

Curated by people: promoted from REVIEW.md, edit freely.

## Decisions

- Vitest, not Jest, because of ESM imports <!-- p-20240601-004 -->
"""


@pytest.fixture(scope="module")
def world(local_runtime: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Settings, str]]:
    tmp = tmp_path_factory.mktemp("pages")
    reset_days(local_runtime, [DAY])
    settings = isolated_settings(local_runtime, tmp, sessions_dir=tmp / "sessions")
    write_session(settings.sessions_dir / "a.jsonl", f"pages-{uuid.uuid4()}", DAY, PROJECT, TURNS)
    result = materialize(
        RECALL_ASSETS, resources=build_resources(settings), partition_key=DAY, instance=instance_with_days([DAY])
    )
    assert result.success
    folder = ensure_project_dir(settings.memory_workspace, PROJECT)
    (folder / "REVIEW.md").write_text(REVIEW)
    (folder / "MEMORY.md").write_text(MEMORY)
    with memory_service(settings) as base:
        yield settings, base


def test_search_rows_give_the_memory_the_room_and_copy_the_whole_id(world: tuple[Settings, str]) -> None:
    settings, base = world
    with chromium() as driver:
        driver.get(f"{base}/?q=lodash+pnpm+checkout&project={PROJECT}")
        links = driver.find_elements(By.CSS_SELECTOR, "#results a[data-id]")
        assert links, driver.page_source[:2000]
        full = links[0].get_attribute("data-id")
        assert full.startswith("obs_") and len(links[0].text) < len(full)  # shown short, kept whole
        width = driver.execute_script(
            "const r = document.querySelector('#results tr:nth-child(2)'), w = e => e.getBoundingClientRect().width;"
            "return [w(r.children[0]), w(r.querySelector('td.memory'))]"
        )
        assert width[0] < 200 and width[1] > 600, width  # at 1280 px it was about 300 px and 190 px
        # The copy button hands the whole id to the clipboard (recorded here: headless has no clipboard to read).
        driver.execute_script(
            "window.__copied = [];"
            "navigator.clipboard.writeText = t => { window.__copied.push(t); return Promise.resolve(); }"
        )
        driver.find_element(By.CSS_SELECTOR, "#results button.copy").click()
        wait(driver, lambda d: d.execute_script("return window.__copied.length") == 1)
        assert driver.execute_script("return window.__copied[0]") == full
        assert driver.find_element(By.CSS_SELECTOR, "#results button.copy").text == "copied"

        # A model's tool call written as JSON reads as one line, in the row and on the memory's page.
        text = driver.find_element(By.ID, "results").text
        assert "→ bash: pnpm why lodash" in text and '"arguments"' not in text, text
        lodash = next(a for a in driver.find_elements(By.CSS_SELECTOR, "#results tr") if "lodash" in a.text)
        lodash.find_element(By.CSS_SELECTOR, "a[data-id]").click()
        wait(driver, expected_conditions.presence_of_element_located((By.ID, "turn")))
        assert "→ bash: pnpm why lodash" in driver.find_element(By.TAG_NAME, "h2").text


def test_edit_forget_promote_and_reject_are_confirmed_then_reported_done(world: tuple[Settings, str]) -> None:
    settings, base = world
    with chromium() as driver:
        log_in(driver, settings.service_login_path, base)
        driver.get(f"{base}/?q=checkout+NaN+empty+cart&project={PROJECT}")
        memory_id = driver.find_element(By.CSS_SELECTOR, "#results a[data-id]").get_attribute("data-id")
        driver.get(f"{base}/m/{memory_id}")
        box = driver.find_element(By.CSS_SELECTOR, "#edit textarea")
        box.clear()
        box.send_keys("Empty carts showed NaN: averageItemPrice divided by zero (fixed: returns 0).")
        # Dismissed: nothing changes.
        driver.find_element(By.CSS_SELECTOR, "#edit button").click()
        wait(driver, expected_conditions.alert_is_present()).dismiss()
        driver.get(f"{base}/m/{memory_id}")
        assert "divided by zero" not in driver.find_element(By.TAG_NAME, "h2").text
        box = driver.find_element(By.CSS_SELECTOR, "#edit textarea")
        box.clear()
        box.send_keys("Empty carts showed NaN: averageItemPrice divided by zero (fixed: returns 0).")
        driver.find_element(By.CSS_SELECTOR, "#edit button").click()
        assert "Save this text and priority?" in accept_dialog(driver)
        wait(driver, expected_conditions.url_contains("done=edited"))
        assert driver.find_element(By.ID, "done").text.startswith("Saved:")
        assert "divided by zero" in driver.find_element(By.TAG_NAME, "h2").text

        driver.find_element(By.CSS_SELECTOR, "#forget button").click()
        assert "Forget this memory?" in accept_dialog(driver)
        wait(driver, expected_conditions.url_contains("forgotten="))
        assert driver.find_element(By.ID, "done").text.startswith("Forgotten:")
        assert httpx.get(f"{base}/api/v1/memories/{memory_id}").status_code == 404

        # Recently forgotten (in the nav) lists it with its Undo; the done message's Undo brings it back as edited.
        done_page = driver.current_url
        driver.find_element(By.CSS_SELECTOR, "header a[href='/forgotten']").click()
        held = wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, f"#forgotten tr[data-id='{memory_id}']"))
        assert "divided by zero" in held[0].text and held[0].find_elements(By.CSS_SELECTOR, "button[data-undo]")
        driver.get(done_page)
        wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#done button[data-undo]"))[0].click()
        wait(driver, expected_conditions.url_contains("done=restored"))
        assert driver.find_element(By.ID, "done").text.startswith("Brought back:")
        assert "divided by zero" in driver.find_element(By.TAG_NAME, "h2").text
        assert httpx.get(f"{base}/api/v1/memories/{memory_id}").status_code == 200
        driver.get(f"{base}/forgotten")
        assert not driver.find_elements(By.CSS_SELECTOR, f"#forgotten tr[data-id='{memory_id}']")

        # Review: MEMORY.md is rendered (no comment shows), its rules carry their proposal ids as tags.
        driver.get(f"{base}/review")
        shown = driver.find_element(By.CSS_SELECTOR, ".memory-md")
        assert "<!--" not in shown.text and "p-20240601-004" in [
            t.text for t in shown.find_elements(By.CLASS_NAME, "tag")
        ]
        driver.find_element(By.CSS_SELECTOR, "#p-20240703-001 button[value=promote]").click()
        assert "Promote p-20240703-001 to MEMORY.md?" in accept_dialog(driver)
        wait(driver, lambda d: not d.find_elements(By.ID, "p-20240703-001"))
        assert driver.find_element(By.ID, "done").text.startswith("Promoted p-20240703-001")
        rules = driver.find_element(By.CSS_SELECTOR, ".memory-md").text
        assert "Use pnpm for every install, never npm" in rules and "<!--" not in rules
        driver.find_element(By.CSS_SELECTOR, "#p-20240703-002 button[value=reject]").click()
        assert "Reject p-20240703-002?" in accept_dialog(driver)
        wait(driver, lambda d: not d.find_elements(By.ID, "p-20240703-002"))
        assert driver.find_element(By.ID, "done").text.startswith("Rejected p-20240703-002")
    memory = (ensure_project_dir(settings.memory_workspace, PROJECT) / "MEMORY.md").read_text()
    assert "<!-- p-20240703-001 -->" in memory and "Never edit generated files" not in memory


def test_the_recent_feed_shows_a_new_memory_without_a_reload(world: tuple[Settings, str]) -> None:
    settings, base = world
    with chromium() as driver:
        driver.get(f"{base}/?project={PROJECT}")
        wait(driver, expected_conditions.presence_of_element_located((By.ID, "recent-list")))
        driver.execute_script("window.__same_page = true")
        words = f"Staging database moved to port 5433 ({uuid.uuid4().hex[:6]})."
        stored = httpx.post(
            f"{base}/api/v1/memories",
            json={"text": words, "project": PROJECT},
            headers={"X-Memory-Token": settings.service_token()},
            timeout=60,
        )
        assert stored.status_code == 201, stored.text
        wait(driver, lambda d: words in d.find_element(By.ID, "recent").text, seconds=40)
        assert driver.execute_script("return window.__same_page === true")  # polled, not reloaded


def test_glance_bars_carry_their_numbers(world: tuple[Settings, str]) -> None:
    _, base = world
    with chromium() as driver:
        driver.get(f"{base}/glance?project={PROJECT}")
        figures = driver.find_elements(By.CSS_SELECTOR, "figure")
        for figure in figures:
            caption = figure.find_element(By.TAG_NAME, "figcaption").text
            counts = [int(e.text) for e in figure.find_elements(By.CSS_SELECTOR, "svg text.count")]
            bars = [
                int(e.get_attribute("textContent").rsplit(": ", 1)[1])
                for e in figure.find_elements(By.CSS_SELECTOR, "rect title")
            ]
            if not any(bars):  # nothing to count: no numbers (the tooltips say 0)
                assert not counts, caption
                continue
            assert counts and len(counts) <= len(bars) and max(counts) == max(bars), caption
            if len(counts) == sum(1 for b in bars if b):  # every bar's number: they add up to the caption's total
                assert f"(total {sum(counts)}, max {max(bars)})" in caption, (caption, counts)
        assert any(f.text.startswith("Memories per day (total ") for f in figures)


def test_the_theme_toggle_is_remembered(world: tuple[Settings, str]) -> None:
    _, base = world
    with chromium() as driver:
        driver.get(f"{base}/glance")
        background = "return getComputedStyle(document.body).backgroundColor"
        before = driver.execute_script(background)
        driver.find_element(By.ID, "theme-toggle").click()
        chosen = driver.execute_script("return document.documentElement.dataset.theme")
        assert chosen in {"dark", "light"} and driver.execute_script(background) != before
        driver.get(f"{base}/review")  # another page, later: the same theme, from localStorage
        assert driver.execute_script("return document.documentElement.dataset.theme") == chosen
        assert driver.execute_script(background) != before


def test_an_elasticsearch_outage_shows_a_styled_page_with_the_navigation(
    local_runtime: Settings, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tmp = tmp_path_factory.mktemp("down")
    # Nothing listens on this port: the service's Elasticsearch is down from the start.
    settings = isolated_settings(local_runtime, tmp, local_es_port=free_port())
    settings.sessions_dir.mkdir(parents=True)
    with memory_service(settings) as base, chromium() as driver:
        driver.get(f"{base}/?q=anything")
        down = driver.find_element(By.ID, "down")
        assert f"Elasticsearch at {settings.elasticsearch_url}" in down.text
        assert "memory-pipeline local up" in driver.find_element(By.CSS_SELECTOR, "#down pre.command").text
        # The reason names the command as code, as a failed change's box does, not between raw backticks.
        assert "`" not in down.text and down.find_element(By.CSS_SELECTOR, "p code").text == "memory-pipeline local up"
        assert [a.text for a in driver.find_elements(By.CSS_SELECTOR, "header a")][:3] == [
            "Search",
            "Review",
            "At a glance",
        ]
        styled = driver.execute_script("return getComputedStyle(document.getElementById('down')).borderLeftWidth")
        assert styled == "4px"
