"""Shared fixtures. Tests under e2e/ talk to the real local servers, brought up once per session."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_pipeline.settings import Settings, load_settings
from testkit.paths import SESSION_FIXTURES  # noqa: F401 - the tests import it from here too

FIXTURES = Path(__file__).parent / "fixtures"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)


# `make test` runs the tests marked dagster_storage a second time with this set to "postgres": the CLI's
# Dagster instance (runs, events, schedules) then lives in the local PostgreSQL.
STORAGE_VARIABLE = "MEMORY_PIPELINE_TEST_DAGSTER_STORAGE"


@pytest.fixture(scope="session")
def settings() -> Settings:
    storage = os.environ.get(STORAGE_VARIABLE, "sqlite")
    assert storage in ("sqlite", "postgres"), f"{STORAGE_VARIABLE} must be sqlite or postgres, not {storage!r}"
    return load_settings(local_postgres=storage == "postgres")


@pytest.fixture(scope="session")
def local_runtime(settings: Settings) -> Iterator[Settings]:
    """The real servers (idempotent `up`: a no-op when `make test` started them already)."""
    from memory_pipeline.local.runtime import LocalRuntime

    LocalRuntime(settings, progress=lambda m: print(m, flush=True)).up()
    yield settings
