"""A real headless browser for the memory browser's tests and screenshots: Debian's chromium and
chromium-driver (installed with apt the first time, as root), driven by Selenium through the system
executables (no browser download)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from memory_pipeline.local.host import apt_install

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")


def ensure_chromium() -> None:
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        apt_install(["chromium", "chromium-driver"])


@contextmanager
def chromium(width: int = 1280, height: int = 900) -> Iterator[webdriver.Chrome]:
    ensure_chromium()
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", f"--window-size={width},{height}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


# A session whose text attacks the page: a script tag, an img onerror.
HOSTILE_TURNS = [
    ("Always use pnpm, never npm. <script>window.__pwned = 1; alert('xss')</script>", "Understood: pnpm only."),
    (
        'Why did the checkout page break? <img src=x onerror="window.__pwned = 2">',
        # A finding the turn confirms (the suite failed, then passed): the keep filter stores no unconfirmed one.
        "The price formatter returned NaN for empty carts; fixed by defaulting the total to 0.\n"
        "`npm test` before the fix: 1 failed, 11 passed.\n`npm test` after it: 12 passed.",
    ),
]


def write_session(path: Path, session_id: str, day: str, project: str, turns: list[tuple[str, str]]) -> Path:
    """A small pi v3 session file: one user message and one assistant reply per turn."""
    stamp = f"{day}T10:00:00.000Z"
    epoch_ms = int(datetime.fromisoformat(f"{day}T10:00:00+00:00").timestamp() * 1000)
    lines = [{"type": "session", "version": 3, "id": session_id, "timestamp": stamp, "cwd": project}]
    parent = None
    for n, (asked, answered) in enumerate(turns):
        for role, text in (("user", asked), ("assistant", answered)):
            entry_id = f"{role[0]}{n:07d}"
            when = epoch_ms + 60_000 * n + (1000 if role == "assistant" else 0)
            message: dict = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": when}
            if role == "assistant":
                message |= {"api": "openai-completions", "provider": "local", "model": "m", "stopReason": "stop"}
            lines.append(
                {"type": "message", "id": entry_id, "parentId": parent, "timestamp": stamp, "message": message}
            )
            parent = entry_id
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def wait(driver, condition, seconds: float = 20):  # noqa: ANN001, ANN201
    """What `condition` returns once it holds (selenium's wait, `seconds` at most)."""
    return WebDriverWait(driver, seconds).until(condition)


def log_in(driver, login_path: Path, base: str) -> None:  # noqa: ANN001
    """The browser logged in with the one-time code `memory-pipeline serve` wrote to `login_path`."""
    driver.get(f"{base}/login?code={login_path.read_text().strip()}")


def accept_dialog(driver) -> str:  # noqa: ANN001
    """The text of the confirm dialog the page opened, accepted."""
    alert = wait(driver, expected_conditions.alert_is_present())
    text = alert.text
    alert.accept()
    return text
