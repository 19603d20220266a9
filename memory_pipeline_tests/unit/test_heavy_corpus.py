"""The heavy history of `bench heavy` (testkit/corpora/heavy_corpus.py), built small: every file a session of its
agent under a new id on a day of the six months, readable by the pipeline's readers, tool output grown, the same
bytes for the same seed."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from memory_pipeline.sessions.discovery import agent_roots, scan_sessions
from memory_pipeline.sessions.messages import session_messages
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.sessions.sources import parse_any, read_header
from testkit.corpora.heavy_corpus import DAYS, FIRST_DAY, build, templates


def _history(root: Path) -> tuple[object, list]:
    heavy = build(root, sessions=9, target_bytes=1)
    roots = agent_roots(root / "sessions", root / "claude-projects", root / "codex-sessions")
    found, problems = scan_sessions(roots)
    assert not problems
    return heavy, found


def test_a_small_history_holds_every_agent_under_new_ids_within_the_six_months(tmp_path: Path) -> None:
    heavy, found = _history(tmp_path / "history")
    assert Counter(f.agent for f in found) == {"pi": 3, "claude-code": 3, "codex": 3}
    template_ids = {read_header(p)[1].id for ps in templates().values() for p in ps}
    assert len({f.session_id for f in found}) == 9 and not {f.session_id for f in found} & template_ids
    assert all(str(FIRST_DAY) <= f.partition < "2021-07-01" for f in found) and DAYS == 181
    assert heavy.size == sum(f.size for f in found)
    for f in found:
        rows, _ = session_messages(parse_any(f.path), Redactor(), f.partition)
        assert rows, f.path


def test_the_same_seed_makes_the_same_bytes_and_tool_output_is_grown(tmp_path: Path) -> None:
    first, _ = _history(tmp_path / "a")
    second, _ = _history(tmp_path / "b")
    read = lambda h: [p.read_bytes() for agent in sorted(h.files) for p in h.files[agent]]  # noqa: E731
    assert read(first) == read(second)
    smallest_template = min(p.stat().st_size for ps in templates().values() for p in ps)
    assert max(p.stat().st_size for ps in first.files.values() for p in ps) > 20 * smallest_template
