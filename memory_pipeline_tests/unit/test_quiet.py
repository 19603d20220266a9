"""Quiet tools: a process that loads the pipeline prints none of Dagster's beta, preview or superseded notices
(each is a pair of lines per use, and nothing a person can act on), and Ctrl-C ends `dev` without "Aborted!",
a traceback or an error for `make`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from memory_pipeline.local.supervise import interrupted_once, run_in_foreground

NOTICES = "BetaWarning", "PreviewWarning", "SupersessionWarning"


def _stderr(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stderr


def test_importing_the_definitions_prints_no_beta_warning() -> None:
    stderr = _stderr("import memory_pipeline.definitions")
    assert not any(notice in stderr for notice in NOTICES), stderr


def test_the_package_ignores_exactly_dagsters_notices() -> None:
    # What `dagster dev` (started through memory_pipeline.local.dagster_cli) and the code server would print.
    emit = (
        "from dagster_shared.utils.warnings import beta_warning, deprecation_warning, preview_warning, "
        "supersession_warning\n"
        "beta_warning('Parameter x'); preview_warning('Parameter y'); supersession_warning('Function dev_command')\n"
        "import warnings; warnings.simplefilter('always', DeprecationWarning); deprecation_warning('z', '2.0')"
    )
    loud = _stderr(emit)
    assert all(notice in loud for notice in NOTICES)  # Dagster does print them
    quiet = _stderr("import memory_pipeline\n" + emit)
    assert not any(notice in quiet for notice in NOTICES), quiet
    assert "DeprecationWarning" in quiet  # a deprecation says what will break: it still shows


CHILD = """
import signal, sys, time
from pathlib import Path
ready = Path(sys.argv[1])
got = []
signal.signal(signal.SIGINT, lambda *_: got.append(1))
ready.write_text("")
while not got:
    time.sleep(0.01)
(ready.parent / "interrupted").write_text("")
time.sleep(0.5)  # shutting down, as dagster dev does for a second or two
sys.exit(1 if len(got) > 1 else 0)  # a second SIGINT cuts dagster dev's shutdown short: "Aborted!", exit 1
"""


def _ctrl_c_when(ready: Path, then: float = 0.0) -> None:
    while not ready.exists():
        time.sleep(0.01)
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(then)


def test_ctrl_c_stops_the_foreground_child_once_and_cleanly(tmp_path: Path) -> None:
    ready = tmp_path / "ready"

    def as_a_terminal_under_uv_does() -> None:
        _ctrl_c_when(ready, then=0.2)
        os.kill(os.getpid(), signal.SIGINT)  # `uv run` repeats the terminal's Ctrl-C to its child 200 ms later

    before = signal.getsignal(signal.SIGINT)
    presser = threading.Thread(target=as_a_terminal_under_uv_does)
    presser.start()
    code = run_in_foreground([sys.executable, "-c", CHILD, str(ready)], dict(os.environ), started=ready.exists)
    presser.join()
    assert code == 0
    assert signal.getsignal(signal.SIGINT) is before  # a later Ctrl-C is not sent to a process that is gone


def test_a_ctrl_c_while_the_child_starts_is_held_until_it_has_started(tmp_path: Path) -> None:
    ready, up, held = tmp_path / "ready", threading.Event(), []

    def early() -> None:
        _ctrl_c_when(ready, then=0.7)
        held.append(not (tmp_path / "interrupted").exists())  # dagster dev still starting: not interrupted yet
        up.set()

    presser = threading.Thread(target=early)
    presser.start()
    code = run_in_foreground([sys.executable, "-c", CHILD, str(ready)], dict(os.environ), started=up.is_set)
    presser.join()
    assert held == [True] and code == 0 and (tmp_path / "interrupted").exists()


def test_the_first_ctrl_c_interrupts_and_the_next_ones_are_ignored_until_the_block_ends() -> None:
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt), interrupted_once():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1)  # the handler runs at once: never reached
    with interrupted_once():
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
        except KeyboardInterrupt:
            os.kill(os.getpid(), signal.SIGINT)  # stopping what was started: not interrupted again
            time.sleep(0.05)
    assert signal.getsignal(signal.SIGINT) is before


def test_the_instance_the_project_writes_opens_the_ui_without_dagsters_community_modal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dagster import DagsterInstance

    from memory_pipeline.instance import prepare_dagster_home
    from memory_pipeline.settings import load_settings

    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.delenv("DAGSTER_POSTGRES_URL", raising=False)
    home = prepare_dagster_home(load_settings(memory_pipeline_state_dir=tmp_path / "state"))
    with DagsterInstance.from_config(str(home)) as instance:
        # What the UI's `shouldShowNux` query answers from (with "not seen yet", true in a fresh home).
        assert instance.nux_enabled is False
