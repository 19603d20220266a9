"""What a benchmark compares against in the same run: an earlier commit's code, extracted once with `git archive`
under the benchmark's own folder, and the machine's load beside each side's figures (a side measured on a busy
machine is no baseline)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from memory_pipeline.local.runtime import LocalRuntime
from memory_pipeline.settings import Settings, load_settings
from testkit.paths import ROOT


def code_at(commit: str, work: Path, paths: Sequence[str] = ("memory_pipeline",), with_tests: bool = False) -> Path:
    """`paths` as they were at `commit`, in `work`/code-`commit` (kept for the next run); with today's test
    fixtures beside them when `with_tests` (the labelled sessions are the same)."""
    code = work / f"code-{commit}"
    if not code.exists():
        code.mkdir(parents=True)
        archive = subprocess.run(["git", "archive", commit, *paths], cwd=ROOT, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(code)], input=archive.stdout, check=True)
        if with_tests:
            (code / "memory_pipeline_tests").symlink_to(ROOT / "memory_pipeline_tests")
    return code


def load() -> str:
    """The load average over 1, 5 and 15 minutes."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def fresh_chat_server(settings: Settings) -> bool:
    """Start the local chat server again, so that neither side reads prompts the other left in its memory
    (llama-server keeps earlier prompts in RAM, `--cache-ram`, 8 GiB by default: the second side would find
    every prompt of the first read already, and a cached prompt can change a small model's answer). False for a
    server of the user's, which cannot be restarted here."""
    if not settings.is_local("chat"):
        return False
    runtime = LocalRuntime(settings, progress=lambda _: None)
    runtime.down(["chat"])
    runtime.up(["chat"])
    return True


def run_side(code: Path, script: str, out: Path, *args: str) -> bool:
    """Run one side: `script` in a process of its own with `code` first on its path (`sys.argv[1]`), then `args`,
    then `out`, the file it writes; on a chat server started anew for it (`fresh_chat_server`, whose answer this
    returns). Each side is given today's chat server and its key: the baseline's own settings would look for the
    local key in its archive's folder."""
    settings = load_settings()
    fresh = fresh_chat_server(settings)
    env = {**os.environ, "LLAMA_URL": settings.chat_url, "LLAMA_API_KEY": settings.api_key("chat") or ""}
    argv = [sys.executable, "-W", "ignore", "-c", script, str(code), *args, str(out)]
    subprocess.run(argv, check=True, env=env)
    return fresh
