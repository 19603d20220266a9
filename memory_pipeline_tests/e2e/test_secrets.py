"""No planted secret is stored or sent anywhere: 50 kinds in every text field of a session, and one sample of
each credential format no rule names, the whole job on the real servers with the chat model on, then every
index, every file under the state folder (Dagster's event log included), the memory workspace and every request
to the LLM and embedding servers searched (bench/secrets.py)."""

from __future__ import annotations

from pathlib import Path

from memory_pipeline.settings import Settings, isolated_settings
from testkit.corpora.heldout_corpus import carrier, samples
from testkit.corpora.secrets_corpus import FIELDS, Planted, kinds
from testkit.corpora.secrets_run import find_leaks, run_planted
from testkit.ingest_helpers import run_metadata


def held_out() -> list[Planted]:
    """One sample of each credential format no rule names (bench/corpus/heldout_secrets, frozen before the shape
    rules were written), on its carrier line and standing alone."""
    first = {}
    for sample in samples():
        first.setdefault(sample.format, sample)
    return [
        Planted(kind=f"held-out {s.format}", text=f"{carrier(s)} and alone: {s.token}", core=max(s.secrets, key=len))
        for s in first.values()
    ]


def test_no_planted_or_held_out_secret_is_stored_or_sent_anywhere(local_runtime: Settings, tmp_path: Path) -> None:
    # One job for both sets: the run is the cost (the chat model reads every session), the search is cheap.
    named, unnamed = kinds(), held_out()
    planted = named + unnamed
    settings = isolated_settings(local_runtime, tmp_path)
    runs, found, requests = run_planted(settings, planted)
    assert len(runs) == 1 and runs[0].success
    metadata, checks, _ = run_metadata(runs[0])
    assert all(checks.values()), [name for name, ok in checks.items() if not ok]
    assert metadata["raw_messages"]["sessions"] == len(FIELDS) and requests > len(FIELDS)
    assert metadata["raw_messages"]["masked_secrets"] >= len(named) * (len(FIELDS) - 2)  # name, label: not rows
    assert found == {}, found
    # The search itself works: the unmasked secrets of both sets, put where it looks, are all found.
    probe = settings.memory_pipeline_state_dir / "probe.txt"
    probe.write_text("\n".join(p.text for p in planted))
    assert find_leaks(settings, planted, []) == {"state probe.txt": {p.kind for p in planted}}
