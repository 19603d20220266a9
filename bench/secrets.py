"""Secrets (`python -m bench secrets`): is any planted secret stored anywhere, and is ordinary code left alone?

1. Rule sets compared on the same text: every planted kind alone and all of them in one text (recall), and
   320 ordinary lines (left intact): gitleaks' rules alone, the project's own alone, both (the default).
2. The maintained corpus: gitleaks' own true- and false-positive examples in six contexts
   (`testkit/corpora/gitleaks_corpus.py`), per context and per rule family.
3. End to end: 50 kinds planted in each of 12 text fields of a session, the whole `memory_job` run on them
   (as `backfill` runs it, with the Dagster instance inside the state folder), then every place a secret
   could land is searched: every Elasticsearch index, every file under the state folder (parquet read as
   data, the rest as bytes: parse cache, frames, LLM journal, Dagster's event log and run storage), the
   memory workspace, and every request the pipeline sent to the chat and embedding servers.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

from bench.results_file import table, write_section
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.sessions.secret_rule import gitleaks_rules
from memory_pipeline.sessions.secret_rules import OWN_RULES
from memory_pipeline.settings import isolated_settings, load_settings
from memory_pipeline.stores.indices import PIPELINE_INDICES
from testkit.corpora import gitleaks_corpus
from testkit.corpora.secrets_corpus import FIELDS, Planted, kinds, leaks, ordinary_lines
from testkit.corpora.secrets_run import run_planted

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / ".work" / "secrets"
RUN_CONFIG = {"ops": {"llm_ideas": {"config": {"context_tokens": 2048, "max_output_tokens": 384}}}}


def compare_rule_sets(planted: list[Planted], lines: list[str]) -> list[list[object]]:
    """Recall (alone, and all in one text) and lines left intact, per rule set."""
    variants = {
        "gitleaks only": Redactor(base=gitleaks_rules()),
        "own rules only": Redactor(base=OWN_RULES),
        "both (default)": Redactor(),
    }
    blob = "\n".join(f"{p.kind}: {p.text}" for p in planted)
    rows = []
    for name, redactor in variants.items():
        alone = sum(not leaks(redactor.redact(p.text), [p]) for p in planted)
        together = len(planted) - len(leaks(redactor.redact(blob), planted))
        intact = sum(redactor.redact(line) == line for line in lines)
        rows.append([name, f"{alone}/{len(planted)}", f"{together}/{len(planted)}", f"{intact}/{len(lines)}",
                     f"{intact / len(lines):.1%}"])  # fmt: skip
    return rows


def maintained_corpus() -> str:
    """Figures on gitleaks' own examples (testkit/corpora/gitleaks_corpus.py): per context, per rule family."""
    figures = gitleaks_corpus.measure(Redactor())
    total = sum(n for _, n in figures.by_family.values())
    contexts = [[c, f"{m}/{n}", f"{m / n:.2%}"] for c, (m, n) in figures.recall.items()]
    families = sorted(figures.by_family.items(), key=lambda item: (item[1][0] / item[1][1], item[0]))
    intact, negatives = figures.fp_intact
    return (
        f"Maintained corpus: gitleaks' own examples ({total} true positives of "
        f"{len({s.rule for s in gitleaks_corpus.samples()})} rules, {negatives} false positives its whole rule set "
        "leaves alone; `bench/corpus/gitleaks`, written by gitleaks' maintainers), each true positive in six "
        "contexts:\n\n"
        + table(["context", "masked", "recall"], contexts)
        + f"\n\n- other lines of each context byte for byte intact: {figures.around[0]}/{figures.around[1]}"
        f"\n- false positives left unchanged (alone, and as a line of a file): {intact}/{negatives} "
        f"({intact / negatives:.1%})"
        + "".join(f"\n  - changed: `{gitleaks_corpus.short(t)}`" for t in figures.changed_fps)
        + "\n\nPer rule family (the rule id's first word), true positives masked in all six contexts:\n\n"
        + table(["family", "masked everywhere", "true positives"], [[f, str(m), str(n)] for f, (m, n) in families])
        + "\n"
    )


def main(flags: list[str]) -> None:
    planted, lines = kinds(), ordinary_lines()
    rule_rows = compare_rule_sets(planted, lines)
    shutil.rmtree(WORK, ignore_errors=True)
    settings = isolated_settings(load_settings(), WORK)
    runs, found, requests = run_planted(settings, planted)
    assert all(r.success for r in runs), "the planted run failed"
    masked = Counter()
    for run in runs:
        for event in run.get_asset_materialization_events():
            if event.asset_key.path[-1] == "raw_messages":
                masked.update(event.materialization.metadata["masked_by_rule"].value)
    searched = sum(1 for folder in (settings.memory_pipeline_state_dir, settings.memory_workspace)
                   for p in folder.rglob("*") if p.is_file())  # fmt: skip
    leaked = set().union(*found.values()) if found else set()
    body = (
        "Rule sets on the same text: each of the 50 planted kinds alone, all 50 in one text, and 320 ordinary "
        "lines of code and config (env lookups, loaders, fixtures, hashes, UUIDs, base64 images, digests) that "
        "must come out unchanged.\n\n"
        + table(["rules", "recall, alone", "recall, together", "ordinary lines intact", "share intact"], rule_rows)
        + f"\n\nEnd to end: 50 kinds in each of {len(FIELDS)} fields ({', '.join(FIELDS)}), the whole `memory_job` "
        f"(run {'ok' if all(r.success for r in runs) else 'FAILED'}); searched: every index "
        f"({', '.join(PIPELINE_INDICES)}), {searched} files under the state folder and the workspace (parquet "
        f"as data; Dagster's event log included), {requests} requests to the LLM and embedding servers.\n\n"
        f"- kinds found stored or sent anywhere: **{len(leaked)} of {len(planted)}** "
        f"(recall {1 - len(leaked) / len(planted):.0%})"
        + "".join(f"\n  - {place}: {', '.join(sorted(kinds_found))}" for place, kinds_found in sorted(found.items()))
        + f"\n- masked at ingest, by rule: {json.dumps(dict(masked.most_common()))}\n"
    )
    body += "\n" + maintained_corpus()
    write_section("secrets", "uv run python -m bench secrets", body)
    print(body)
