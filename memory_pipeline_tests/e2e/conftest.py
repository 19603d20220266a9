"""Fixtures shared by the end-to-end tests (the real servers: `local_runtime` in the package's conftest)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_pipeline.settings import Settings, isolated_settings
from testkit.pi_agent import PiAgent
from testkit.servers import memory_service


@pytest.fixture
def loop(local_runtime: Settings, tmp_path: Path):  # noqa: ANN201
    """Real pi with the project's extension, `memory-pipeline serve` over an isolated memory: (settings, the
    service's base URL, the agent)."""
    settings = isolated_settings(local_runtime, tmp_path, sessions_dir=tmp_path / "agent" / "sessions")
    settings.sessions_dir.mkdir(parents=True)
    with memory_service(settings) as base:
        yield settings, base, PiAgent(tmp_path / "agent", settings, base)
