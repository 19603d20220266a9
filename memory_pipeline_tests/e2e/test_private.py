"""Text a person marked private is stored nowhere and sent to no model: `<private>` spans (closed, and one left
open) in every text field of a session, and a turn opened with `#private`, through the whole job on the real
servers; then every index, every file under the state folder (Dagster's run storage and event log, parquet
frames, journals, logs), the memory workspace and every request to the LLM and embedding servers searched, as
the planted-secrets test searches them (testkit/corpora/secrets_run.py)."""

from __future__ import annotations

import json
from pathlib import Path

from memory_pipeline.settings import Settings, isolated_settings
from testkit.corpora.secrets_corpus import FIELDS, Planted, session_lines
from testkit.corpora.secrets_run import run_planted
from testkit.ingest_helpers import run_metadata

# Plain words: no secret rule masks them, so only the private handling can keep them out.
CONTROL = Planted("control", "the staging bucket is the Peregrine Thistlewood archive", "Peregrine Thistlewood archive")
SPAN = Planted(
    "private span",
    "<private>my landlord is Marguerite Okonkwo-Vance of Quayside Lantern Row</private> (for the lease form)",
    "Marguerite Okonkwo-Vance of Quayside Lantern Row",
)
TURN = Planted("private turn", "", "Bartholomew Ashgrove-Finch and his daughter Winifred")
UNCLOSED = Planted(
    "unclosed private span",
    "<private>the door code of the office is heliotrope walrus saxophone",
    "heliotrope walrus saxophone",
)


def _write_private_turn(sessions_dir: Path) -> None:
    """A session whose first turn starts with `#private`: the agent's reply and its tool result repeat it."""
    lines = session_lines("tool result", f"grep found {TURN.core} in contacts.csv", "private-turn")
    lines[1]["message"]["content"] = f"#private who is {TURN.core}?"
    path = sessions_dir / "--work-secrets--" / "private-turn.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")


def test_private_text_is_stored_nowhere_and_sent_to_no_model(local_runtime: Settings, tmp_path: Path) -> None:
    settings = isolated_settings(local_runtime, tmp_path)
    _write_private_turn(settings.sessions_dir)
    runs, found, requests = run_planted(settings, [CONTROL, SPAN, TURN, UNCLOSED])
    assert len(runs) == 1 and runs[0].success
    metadata, checks, _ = run_metadata(runs[0])
    assert all(checks.values()), [name for name, ok in checks.items() if not ok]
    assert metadata["raw_messages"]["sessions"] == len(FIELDS) + 1 and requests > len(FIELDS)
    # The search works and the job stored the sessions: the same kind of text, not marked, is found.
    assert "control" in found.get("index memory-raw", set()), found
    leaked = {place: kinds - {"control"} for place, kinds in found.items() if kinds - {"control"}}
    assert leaked == {}, leaked
