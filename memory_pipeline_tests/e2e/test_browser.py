"""The memory browser in a real headless chromium, against `memory-pipeline serve` over the real indices:
search, a memory's page, forget, edit, promote a proposal, then re-run the day: the forgotten memory stays gone,
the edit stays, the promoted rule is in MEMORY.md. The session is hostile: its markup must render as text."""

from __future__ import annotations

import getpass
import uuid
from collections.abc import Iterator

import pytest
from dagster import materialize
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import Select

from memory_pipeline.partitions import instance_with_days
from memory_pipeline.reflect.workspace import ensure_project_dir
from memory_pipeline.resources import build_resources
from memory_pipeline.search.models import Filters
from memory_pipeline.search.open import open_search
from memory_pipeline.settings import Settings, isolated_settings
from testkit.browser import HOSTILE_TURNS, chromium, log_in, wait, write_session
from testkit.ingest_helpers import MEMORY_ASSETS, reset_days
from testkit.servers import memory_service

DAY = "2024-07-01"
PROJECT = "/work/hostile-shop"

REVIEW = """# Review — /work/hostile-shop

## Hard rules

- [ ] p-20240701-001 Format prices with the shared formatter (evidence: 2 sessions)
- [ ] p-20240701-002 Never edit generated files (evidence: 1 session)
"""


def _run_day(settings: Settings) -> None:
    result = materialize(
        MEMORY_ASSETS, resources=build_resources(settings), partition_key=DAY, instance=instance_with_days([DAY])
    )
    assert result.success


@pytest.fixture(scope="module")
def world(local_runtime: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Settings, str]]:
    tmp = tmp_path_factory.mktemp("browser")
    reset_days(local_runtime, [DAY])
    settings = isolated_settings(local_runtime, tmp, sessions_dir=tmp / "sessions")
    # A new session id each run: corrections are kept for good, and must not meet a former run's memories.
    write_session(settings.sessions_dir / "a.jsonl", f"hostile-{uuid.uuid4().hex[:8]}", DAY, PROJECT, HOSTILE_TURNS)
    _run_day(settings)
    (ensure_project_dir(settings.memory_workspace, PROJECT) / "REVIEW.md").write_text(REVIEW)
    with memory_service(settings) as base:
        yield settings, base


def test_search_detail_forget_edit_promote_and_a_rerun_keeps_them(world: tuple[Settings, str]) -> None:
    settings, base = world
    with chromium() as driver:
        # Not logged in: the page shows, a write is refused. The one-time link `serve` printed logs the browser in.
        driver.get(f"{base}/?q=pnpm+npm&project={PROJECT}")
        assert settings.service_token() not in driver.page_source
        log_in(driver, settings.service_login_path, base)
        driver.get(f"{base}/?q=pnpm+npm&project={PROJECT}")
        rows = driver.find_elements(By.CSS_SELECTOR, "#results a[data-id]")
        assert rows, driver.page_source[:2000]
        # The hostile text is shown as text: no alert, no script of its own ran, the markup is visible.
        assert "<script>window.__pwned" in driver.find_element(By.ID, "results").text
        assert driver.execute_script("return window.__pwned === undefined")
        with pytest.raises(NoAlertPresentException):
            driver.switch_to.alert.text  # noqa: B018 - touching it is the check

        # A memory's page: its turn as a conversation.
        forgotten_id = rows[0].get_attribute("data-id")  # the whole id (the link shows a short one)
        rows[0].click()
        wait(driver, expected_conditions.presence_of_element_located((By.ID, "turn")))
        roles = [e.text.split(" ·")[0] for e in driver.find_elements(By.CSS_SELECTOR, "#turn .role")]
        assert roles[:2] == ["user", "assistant"]
        assert "<img src=x" in driver.page_source.replace("&lt;", "<") and driver.execute_script(
            "return window.__pwned === undefined"
        )

        # Forget it (confirmed in the dialog): gone from search at once.
        driver.find_element(By.CSS_SELECTOR, "#forget button").click()
        wait(driver, expected_conditions.alert_is_present()).accept()
        wait(driver, expected_conditions.url_contains("forgotten="))
        driver.get(f"{base}/?q=pnpm+npm&project={PROJECT}")
        assert forgotten_id not in driver.page_source

        # Its turn is still found through its observation: forget that with the whole turn, and nothing of the
        # turn is left to find (its messages, its observation, any memory of it).
        found = [e.get_attribute("data-id") for e in driver.find_elements(By.CSS_SELECTOR, "#results a[data-id]")]
        [observation_id] = [i for i in found if i.startswith("obs_")][:1]
        driver.get(f"{base}/m/{observation_id}")
        forgotten_turn = driver.find_element(By.ID, "turn-id").text
        driver.find_element(By.CSS_SELECTOR, "#forget-turn button").click()
        wait(driver, expected_conditions.alert_is_present()).accept()
        wait(driver, expected_conditions.url_contains("forgotten="))
        driver.get(f"{base}/?q=pnpm+npm&project={PROJECT}")
        assert observation_id not in driver.page_source and "window.__pwned = 1" not in driver.page_source

        # Edit another: the new text is shown, with the change in the trail.
        driver.get(f"{base}/?q=checkout+price+formatter&project={PROJECT}")
        edited_id = driver.find_elements(By.CSS_SELECTOR, "#results a[data-id]")[0].get_attribute("data-id")
        assert edited_id != forgotten_id
        driver.get(f"{base}/m/{edited_id}")
        box = driver.find_element(By.CSS_SELECTOR, "#edit textarea")
        box.clear()
        box.send_keys("Checkout broke on empty carts: the price formatter returned NaN (fixed: total defaults to 0).")
        Select(driver.find_element(By.CSS_SELECTOR, "#edit select")).select_by_visible_text("high")
        driver.find_element(By.CSS_SELECTOR, "#edit button").click()
        wait(driver, expected_conditions.alert_is_present()).accept()
        wait(driver, expected_conditions.presence_of_element_located((By.ID, "trail")))
        assert "total defaults to 0" in driver.find_element(By.TAG_NAME, "h2").text
        trail = driver.find_element(By.ID, "trail").text  # who, what, when; never the text before (hashed)
        assert f"{getpass.getuser()} (browser) · edit: “Checkout broke on empty carts" in trail and "was “" not in trail

        # Promote one proposal, reject the other, with the page's buttons.
        driver.get(f"{base}/review")
        driver.find_element(By.CSS_SELECTOR, "#p-20240701-001 button[value=promote]").click()
        wait(driver, expected_conditions.alert_is_present()).accept()
        wait(driver, lambda d: not d.find_elements(By.ID, "p-20240701-001"))
        driver.find_element(By.CSS_SELECTOR, "#p-20240701-002 button[value=reject]").click()
        wait(driver, expected_conditions.alert_is_present()).accept()
        wait(driver, lambda d: not d.find_elements(By.ID, "p-20240701-002"))
        assert "Format prices with the shared formatter" in driver.find_element(By.CSS_SELECTOR, ".memory-md").text

    # The day again: what people did stands.
    _run_day(settings)
    with open_search(settings) as search:
        assert search.get([forgotten_id]) == []
        found = search.index("pnpm npm", k=50, filters=Filters(project=PROJECT))
        assert forgotten_id not in [r.id for r in found] and forgotten_turn not in [r.turn_id for r in found]
        assert search.get([observation_id]) == []
        [edited] = search.get([edited_id])
        assert edited.summary.endswith("(fixed: total defaults to 0).")
    memory = (ensure_project_dir(settings.memory_workspace, PROJECT) / "MEMORY.md").read_text()
    assert "- Format prices with the shared formatter <!-- p-20240701-001 -->" in memory
    assert "Never edit generated files" not in memory


def test_writes_without_the_token_are_refused_and_pages_render(world: tuple[Settings, str]) -> None:
    import httpx

    settings, base = world
    assert httpx.post(f"{base}/m/anything/forget").status_code == 403
    with chromium() as driver:
        driver.get(f"{base}/?q=zzqx+vlorp&project={PROJECT}")
        said = driver.find_element(By.TAG_NAME, "main").text
        assert "No memory matches “zzqx vlorp”." in said or "Nothing matched “zzqx vlorp” well" in said
        driver.get(f"{base}/review")
        assert PROJECT in driver.find_element(By.TAG_NAME, "main").text
        driver.get(f"{base}/glance")
        captions = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "figure figcaption")]
        assert any(c.startswith("Memories per day") for c in captions) and len(captions) >= 2
