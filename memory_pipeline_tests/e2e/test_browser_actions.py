"""The memory browser's actions that test_browser_pages.py and test_browser.py leave out, in a real headless
chromium against `memory-pipeline serve` over the real Elasticsearch and embedding server (memories stored as
notes through the API, so no chat model is needed): the Excluded page's Exclude, Remove and "Remove what is stored
of excluded projects", a memory's "Exclude this project", the Undo on the Recently forgotten page, the search
form, the glance page's project list and the Given page's Show; then writes that fail, each saying why in the
page's alert region while nothing else changes: a memory forgotten behind the page's back, a proposal decided
elsewhere, a browser whose login is gone, Elasticsearch down, and the service stopped."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import Select

from memory_pipeline.reflect.workspace import ensure_project_dir
from memory_pipeline.sessions.exclude_list import exclusions_path, read_exclusions
from memory_pipeline.settings import Settings, isolated_settings
from memory_pipeline.stores.injections import InjectedLine, Injection, open_ledger
from testkit.browser import accept_dialog, chromium, log_in, wait
from testkit.servers import free_port, memory_service

RUN = uuid.uuid4().hex[:8]  # the shared indices keep other runs' notes: each run's projects are its own
PROJECT = f"/work/actions-shop-{RUN}"
CLIENT = f"/work/actions-client-{RUN}"
# What is in the main part of a page, the alert region left out: the same before and after a failed write.
MAIN = (
    "const m = document.querySelector('main').cloneNode(true); m.querySelector('#failed').remove(); return m.innerHTML"
)


@pytest.fixture(scope="module")
def world(local_runtime: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Settings, str]]:
    tmp = tmp_path_factory.mktemp("actions")
    settings = isolated_settings(local_runtime, tmp, sessions_dir=tmp / "sessions")
    settings.sessions_dir.mkdir(parents=True)
    ensure_project_dir(settings.memory_workspace, PROJECT)  # a project the memory knows: offered in the lists
    with memory_service(settings) as base:
        yield settings, base


def _note(settings: Settings, base: str, text: str, project: str = PROJECT) -> str:
    stored = httpx.post(
        f"{base}/api/v1/memories",
        json={"text": text, "project": project},
        headers={"X-Memory-Token": settings.service_token()},
        timeout=60,
    )
    assert stored.status_code == 201, stored.text
    return stored.json()["id"]


def _exists(base: str, memory_id: str) -> bool:
    return httpx.get(f"{base}/api/v1/memories/{memory_id}", timeout=30).status_code == 200


def _failed(driver) -> str:  # noqa: ANN001
    """The alert region's text once it shows, after checking it is styled as an error and announced."""
    region = wait(driver, lambda d: (e := d.find_element(By.ID, "failed")).is_displayed() and e)
    assert region.get_attribute("role") == "alert"
    assert driver.execute_script("return getComputedStyle(arguments[0]).borderLeftWidth", region) == "4px"
    return region.text


def _own(settings: Settings) -> list[str]:
    return read_exclusions(exclusions_path(settings)).patterns


def test_the_excluded_page_adds_purges_and_removes_each_confirmed_and_reported(world: tuple[Settings, str]) -> None:
    settings, base = world
    secret = _note(settings, base, f"The client's staging host is staging-{RUN}.acme.internal", CLIENT)
    kept = _note(settings, base, f"Deploys of the shop go out on Tuesdays ({RUN})")
    with chromium(height=1000) as driver:
        log_in(driver, settings.service_login_path, base)
        driver.find_element(By.CSS_SELECTOR, "header a[href='/excluded']").click()
        wait(driver, expected_conditions.presence_of_element_located((By.ID, "add")))
        known = driver.find_elements(By.CSS_SELECTOR, "#known-projects option")
        assert PROJECT in [o.get_attribute("value") for o in known]  # the projects the memory knows, offered

        # Exclude: dismissed changes nothing; accepted, the page says so and lists it with its Remove.
        driver.find_element(By.CSS_SELECTOR, "#add input[name=pattern]").send_keys(CLIENT)
        driver.find_element(By.CSS_SELECTOR, "#add button").click()
        wait(driver, expected_conditions.alert_is_present()).dismiss()
        assert not exclusions_path(settings).exists() or CLIENT not in _own(settings)
        driver.find_element(By.CSS_SELECTOR, "#add button").click()
        assert "Keep this project out of the memory" in accept_dialog(driver)
        wait(driver, expected_conditions.url_contains("added="))
        assert driver.find_element(By.ID, "done").text.startswith(f"Excluded {CLIENT}: its sessions are not read")
        assert driver.find_elements(By.CSS_SELECTOR, f"#own tr[data-pattern='{CLIENT}']") and _own(settings) == [CLIENT]

        # What was stored of it before: removed (asked first), the other project's memory kept.
        assert _exists(base, secret) and _exists(base, kept)
        driver.find_element(By.CSS_SELECTOR, "#purge button").click()
        assert "This cannot be undone." in accept_dialog(driver)
        wait(driver, expected_conditions.url_contains("purged="))
        assert driver.find_element(By.ID, "done").text.startswith("Removed 1 documents of 1 excluded projects")
        assert not _exists(base, secret) and _exists(base, kept)

        # Remove: asked first, then it is read again from the next run on.
        driver.find_element(By.CSS_SELECTOR, f"#own tr[data-pattern='{CLIENT}'] button").click()
        assert "Read this project's sessions again" in accept_dialog(driver)
        wait(driver, expected_conditions.url_contains("removed="))
        assert driver.find_element(By.ID, "done").text == (
            f"No longer excluded: {CLIENT}. Its sessions are read again from the next run on."
        )
        assert not driver.find_elements(By.CSS_SELECTOR, "#own") and _own(settings) == []


def test_a_memorys_page_excludes_its_project(world: tuple[Settings, str]) -> None:
    settings, base = world
    project = f"/work/actions-excluded-from-its-page-{RUN}"
    memory_id = _note(settings, base, f"Use the VPN for the {RUN} client's database", project)
    with chromium() as driver:
        log_in(driver, settings.service_login_path, base)
        driver.get(f"{base}/m/{memory_id}")
        driver.find_element(By.CSS_SELECTOR, "#exclude-project button").click()
        assert f"Exclude this memory's project ({project})?" in accept_dialog(driver)
        wait(driver, expected_conditions.url_contains("/excluded?added="))
        assert driver.find_element(By.ID, "done").text.startswith(f"Excluded {project}:")
        assert project in _own(settings) and _exists(base, memory_id)  # what is stored stays until purged
        driver.find_element(By.CSS_SELECTOR, f"#own tr[data-pattern='{project}'] button").click()
        accept_dialog(driver)
        wait(driver, expected_conditions.url_contains("removed="))
        assert project not in _own(settings)


def test_the_forgotten_pages_undo_brings_a_memory_back(world: tuple[Settings, str]) -> None:
    settings, base = world
    memory_id = _note(settings, base, f"The nightly export runs at 02:00 UTC ({RUN})")
    forgot = httpx.post(
        f"{base}/api/v1/memories/{memory_id}/forget", headers={"X-Memory-Token": settings.service_token()}
    )
    assert forgot.status_code == 200 and not _exists(base, memory_id)
    with chromium() as driver:
        log_in(driver, settings.service_login_path, base)
        driver.get(f"{base}/forgotten")
        row = driver.find_element(By.CSS_SELECTOR, f"#forgotten tr[data-id='{memory_id}']")
        assert "nightly export" in row.text
        row.find_element(By.CSS_SELECTOR, "button[data-undo]").click()  # no question: it only brings back
        wait(driver, expected_conditions.url_contains("done=restored"))
        assert driver.find_element(By.ID, "done").text.startswith("Brought back:")
        assert _exists(base, memory_id)
        driver.get(f"{base}/forgotten")
        assert not driver.find_elements(By.CSS_SELECTOR, f"#forgotten tr[data-id='{memory_id}']")


def test_the_search_form_the_glance_project_list_and_the_given_pages_show(world: tuple[Settings, str]) -> None:
    settings, base = world
    word = f"zephyr{RUN}"
    memory_id = _note(settings, base, f"The {word} queue is drained before each deploy")
    session = f"actions-given-{RUN}"
    open_ledger(settings).record(
        Injection(session_id=session, agent="pi", event="start", project=PROJECT, ids=[memory_id],
                  lines=[InjectedLine(key=memory_id, text=f"The {word} queue is drained before each deploy")])
    )  # fmt: skip
    with chromium() as driver:
        driver.get(base)
        driver.find_element(By.CSS_SELECTOR, "form.filters input[name=q]").send_keys(f"{word} queue")
        Select(driver.find_element(By.CSS_SELECTOR, "form.filters select[name=project]")).select_by_value(PROJECT)
        driver.find_element(By.CSS_SELECTOR, "form.filters button[type=submit]").click()
        wait(driver, expected_conditions.presence_of_element_located((By.ID, "results")))
        assert "q=" in driver.current_url and "project=" in driver.current_url
        assert memory_id in [a.get_attribute("data-id") for a in driver.find_elements(By.CSS_SELECTOR, "#results a")]

        driver.get(f"{base}/glance")
        Select(driver.find_element(By.CSS_SELECTOR, "select[name=project]")).select_by_value(PROJECT)
        wait(driver, expected_conditions.url_contains("project="))  # the list submits itself
        assert Select(driver.find_element(By.CSS_SELECTOR, "select[name=project]")).first_selected_option.text == (
            PROJECT
        )

        # Given: a session from the list, or typed in the box and shown; a line's id opens the memory.
        driver.get(f"{base}/injected")
        driver.find_element(By.LINK_TEXT, session).click()
        wait(driver, expected_conditions.url_contains("session_id="))
        assert f"The {word} queue is drained" in driver.find_element(By.TAG_NAME, "table").text
        driver.get(f"{base}/injected")
        driver.find_element(By.NAME, "session_id").send_keys(session)
        driver.find_element(By.XPATH, "//button[text()='Show']").click()
        wait(driver, expected_conditions.url_contains("session_id="))
        assert f"The {word} queue is drained" in driver.find_element(By.TAG_NAME, "table").text
        driver.find_element(By.CSS_SELECTOR, f"table a[href='/m/{memory_id}']").click()
        wait(driver, expected_conditions.url_contains(f"/m/{memory_id}"))
        assert word in driver.find_element(By.TAG_NAME, "h2").text


def test_a_failed_write_says_why_and_changes_nothing(world: tuple[Settings, str]) -> None:
    settings, base = world
    gone = _note(settings, base, f"Feature flags live in flags.yaml ({RUN})")
    kept = _note(settings, base, f"The CDN cache is purged after each release ({RUN})")
    token = {"X-Memory-Token": settings.service_token()}
    with chromium() as driver:
        log_in(driver, settings.service_login_path, base)
        # A memory forgotten behind the page's back (another tab, the CLI): the page's Forget is refused.
        driver.get(f"{base}/m/{gone}")
        before, url = driver.execute_script(MAIN), driver.current_url
        assert not driver.find_element(By.ID, "failed").is_displayed()
        assert httpx.post(f"{base}/api/v1/memories/{gone}/forget", headers=token).status_code == 200
        driver.find_element(By.CSS_SELECTOR, "#forget button").click()
        accept_dialog(driver)
        said = _failed(driver)
        assert said.startswith(f"Not forgotten. No memory '{gone}'.") and "Nothing was changed" in said, said
        assert driver.current_url == url and driver.execute_script(MAIN) == before  # nothing swapped, no redirect
        # The next write hides it again before it is sent (here, Save: refused the same way).
        driver.find_element(By.CSS_SELECTOR, "#edit button").click()
        accept_dialog(driver)
        assert _failed(driver).startswith("Not saved. No memory")

        # A proposal decided elsewhere while the page was open: Promote is refused, REVIEW.md left as it is.
        folder = ensure_project_dir(settings.memory_workspace, PROJECT)
        waiting = "- [ ] p-20240901-001 Pin Node to 20 (evidence: 1 session)\n"
        (folder / "REVIEW.md").write_text(f"# Review — {PROJECT}\n\n## Hard rules\n\n{waiting}")
        driver.get(f"{base}/review")
        decided = f"# Review — {PROJECT}\n\n## Hard rules\n\n"  # promoted from the CLI meanwhile
        (folder / "REVIEW.md").write_text(decided)
        before = driver.execute_script(MAIN)
        driver.find_element(By.CSS_SELECTOR, "#p-20240901-001 button[value=promote]").click()
        accept_dialog(driver)
        said = _failed(driver)
        assert said.startswith("Not done. Not in ") and "p-20240901-001" in said and "Nothing was changed" in said
        assert driver.execute_script(MAIN) == before and (folder / "REVIEW.md").read_text() == decided
        assert not (folder / "MEMORY.md").exists()

    # A browser whose login is gone (a restarted service, a forged or stale cookie): the page says how to log in.
    with chromium() as driver:
        driver.get(f"{base}/health")
        driver.add_cookie({"name": "memory_session", "value": "forged", "path": "/"})
        driver.get(f"{base}/m/{kept}")
        before = driver.execute_script(MAIN)
        driver.find_element(By.CSS_SELECTOR, "#forget button").click()
        accept_dialog(driver)
        said = _failed(driver)
        assert said.startswith("Not forgotten. This browser is not logged in: open the one-time link")
        assert str(settings.service_login_path) in said and settings.service_token() not in said
        assert driver.execute_script(MAIN) == before and _exists(base, kept)


def test_a_write_while_elasticsearch_is_down_or_the_service_stopped_says_so(
    local_runtime: Settings, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tmp = tmp_path_factory.mktemp("down")
    # Nothing listens on this port: the service's Elasticsearch is down from the start.
    settings = isolated_settings(local_runtime, tmp, local_es_port=free_port())
    settings.sessions_dir.mkdir(parents=True)
    with chromium() as driver:
        with memory_service(settings) as base:
            # The outage page's command copies whole; its Review link works meanwhile (local files only).
            driver.get(f"{base}/?q=anything")
            driver.execute_script(
                "window.__copied = [];"
                "navigator.clipboard.writeText = t => { window.__copied.push(t); return Promise.resolve(); }"
            )
            driver.find_element(By.CSS_SELECTOR, "#down button.copy").click()
            wait(driver, lambda d: d.execute_script("return window.__copied.length") == 1)
            assert driver.execute_script("return window.__copied[0]") == "memory-pipeline local up"
            driver.find_element(By.CSS_SELECTOR, "main a[href='/review']").click()
            wait(driver, expected_conditions.url_contains("/review"))
            assert driver.find_element(By.TAG_NAME, "h2").text == "Review"
            log_in(driver, settings.service_login_path, base)
            driver.get(f"{base}/excluded")
            # The Excluded page reads local files only: adding works, the purge needs Elasticsearch.
            driver.find_element(By.CSS_SELECTOR, "#add input[name=pattern]").send_keys(CLIENT)
            driver.find_element(By.CSS_SELECTOR, "#add button").click()
            accept_dialog(driver)
            wait(driver, expected_conditions.url_contains("added="))
            before = driver.execute_script(MAIN)
            driver.find_element(By.CSS_SELECTOR, "#purge button").click()
            accept_dialog(driver)
            said = _failed(driver)
            assert said.startswith(f"Nothing removed. Elasticsearch at {settings.elasticsearch_url} is unreachable")
            assert "memory-pipeline local up" in said and "Reload the page once it works again" in said
            assert driver.execute_script(MAIN) == before and _own(settings) == [CLIENT]
        # The service itself stopped: the request gets no answer at all.
        driver.find_element(By.CSS_SELECTOR, f"#own tr[data-pattern='{CLIENT}'] button").click()
        accept_dialog(driver)
        said = wait(driver, lambda d: "did not answer" in (t := d.find_element(By.ID, "failed").text) and t)
        assert said.startswith("Not done: the memory service did not answer. Is memory-pipeline serve (or up)")
        assert driver.execute_script(MAIN) == before and _own(settings) == [CLIENT]
