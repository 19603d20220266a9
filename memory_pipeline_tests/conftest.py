"""Shared fixtures. Tests under e2e/ talk to the real local servers, brought up once per session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_pipeline.settings import Settings, load_settings

FIXTURES = Path(__file__).parent / "fixtures"
# Real pi session files (provenance in their SOURCES.md), copied into the repo so a clone tests on its own.
SESSION_FIXTURES = FIXTURES / "pi-sessions"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def settings() -> Settings:
    return load_settings()


@pytest.fixture(scope="session")
def local_runtime(settings: Settings) -> Iterator[Settings]:
    """The real servers (idempotent `up`: a no-op when `make test` started them already)."""
    from memory_pipeline.local.runtime import LocalRuntime

    LocalRuntime(settings, progress=lambda m: print(m, flush=True)).up()
    yield settings
