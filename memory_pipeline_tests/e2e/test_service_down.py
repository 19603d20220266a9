"""Elasticsearch stopped under a running memory service: every API call and every page of the memory browser (in
headless Chromium) says what is down and how to start it, the briefing still carries MEMORY.md's rules; started
again, the same service answers as before, without a restart (issue 25)."""

from __future__ import annotations

from pathlib import Path

import httpx
from selenium.webdriver.common.by import By

from memory_pipeline.reflect.workspace import ensure_project_dir
from memory_pipeline.settings import Settings
from testkit.browser import chromium
from testkit.servers import memory_service, private_server, settings_on

PROJECT = "/work/down-and-up"
FIX = "memory-pipeline local up"


def _note(base: str, settings: Settings, text: str) -> dict:
    sent = httpx.post(
        f"{base}/api/v1/memories",
        json={"text": text, "project": PROJECT, "author": "person"},
        headers={"X-Memory-Token": settings.service_token()},
        timeout=60,
    )
    assert sent.status_code == 201, sent.text
    return sent.json()


def test_elasticsearch_stopped_is_named_everywhere_and_back_up_needs_no_restart(
    local_runtime: Settings, tmp_path: Path
) -> None:
    with private_server(tmp_path, local_runtime, "elasticsearch") as runtime:
        settings = settings_on(runtime, "elasticsearch", local_runtime, tmp_path)
        settings.sessions_dir.mkdir(parents=True, exist_ok=True)  # the service's sessions (none here)
        folder = ensure_project_dir(settings.memory_workspace, PROJECT)
        (folder / "MEMORY.md").write_text(
            f"# Memory — {PROJECT}\n\n- Always run migrations with `make migrate` <!-- p-20261203-001 -->\n"
        )
        with memory_service(settings) as base:
            note = _note(base, settings, "The staging database listens on port 5433, not 5432.")
            found = httpx.get(f"{base}/api/v1/search", params={"q": "staging database port", "project": PROJECT})
            assert found.status_code == 200 and note["id"] in [m["id"] for m in found.json()["data"]]

            runtime.down(["elasticsearch"])
            calls = {
                "search": ("/api/v1/search", {"q": "staging database port", "project": PROJECT}),
                "timeline": ("/api/v1/timeline", {"anchor": note["id"]}),
                "about-file": ("/api/v1/about-file", {"path": "db/config.py", "project": PROJECT}),
                "memory": (f"/api/v1/memories/{note['id']}", {}),
                "memories": ("/api/v1/memories", {"ids": [note["id"]]}),
                "compaction": ("/api/v1/compaction", {"session_id": "s-1", "project": PROJECT}),
            }
            for name, (path, params) in calls.items():
                answer = httpx.get(f"{base}{path}", params=params, timeout=60)
                detail = answer.json().get("detail", "")
                assert answer.status_code == 503, (name, answer.status_code, answer.text[:300])
                assert settings.elasticsearch_url in detail and FIX in detail, (name, detail)
            stored = httpx.post(
                f"{base}/api/v1/memories",
                json={"text": "A note while it is down.", "project": PROJECT, "author": "person"},
                headers={"X-Memory-Token": settings.service_token()},
                timeout=60,
            )
            assert stored.status_code == 503 and FIX in stored.json()["detail"]
            # The briefing keeps what lives in local files, and says what it could not read.
            brief = httpx.get(f"{base}/api/v1/briefing", params={"prompt": "migrate", "project": PROJECT}, timeout=60)
            assert brief.status_code == 200 and "make migrate" in brief.json()["markdown"]
            degraded = brief.json()["degraded"] or ""
            assert settings.elasticsearch_url in degraded and FIX in degraded, degraded

            with chromium() as driver:
                for page in (f"/?q=staging&project={PROJECT}", f"/m/{note['id']}", "/glance"):
                    driver.get(f"{base}{page}")
                    text = driver.find_element(By.TAG_NAME, "body").text
                    assert "Elasticsearch" in text and FIX in text, (page, text[:500])
                driver.get(f"{base}/review")  # local files only: it still works
                assert "make migrate" in driver.find_element(By.TAG_NAME, "body").text

                runtime.up(["elasticsearch"])  # the same data folder; the service is not restarted
                driver.get(f"{base}/?q=staging+database+port&project={PROJECT}")
                assert "5433" in driver.find_element(By.ID, "results").text
                driver.get(f"{base}/m/{note['id']}")
                assert "5433" in driver.find_element(By.TAG_NAME, "body").text
            for name, (path, params) in calls.items():
                answer = httpx.get(f"{base}{path}", params=params, timeout=60)
                assert answer.status_code == 200, (name, answer.status_code, answer.text[:300])
            again = httpx.get(f"{base}/api/v1/search", params={"q": "staging database port", "project": PROJECT})
            assert note["id"] in [m["id"] for m in again.json()["data"]]
            assert not httpx.get(f"{base}/api/v1/briefing", params={"prompt": "migrate", "project": PROJECT}).json()[
                "degraded"
            ]
