"""Secrets (`python -m bench secrets`): is any planted secret stored anywhere, and is ordinary code left alone?

1. Rule sets compared on the same text: every planted kind alone and all of them in one text (recall), and
   320 ordinary lines (left intact): gitleaks' rules alone, the project's own alone, both (the default).
2. The maintained corpus: gitleaks' own true- and false-positive examples in six contexts
   (`bench/gitleaks_corpus.py`), per context and per rule family.
3. End to end: 50 kinds planted in each of 12 text fields of a session, the whole `memory_job` run on them
   (as `backfill` runs it, with the Dagster instance inside the state folder), then every place a secret
   could land is searched: every Elasticsearch index, every file under the state folder (parquet read as
   data, the rest as bytes: parse cache, frames, LLM journal, Dagster's event log and run storage), the
   memory workspace, and every request the pipeline sent to the chat and embedding servers.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter, defaultdict
from pathlib import Path

import polars as pl
from dagster import instance_for_test

from bench import gitleaks_corpus
from bench.results_file import table, write_section
from bench.secrets_corpus import DAY, FIELDS, Planted, kinds, leaks, ordinary_lines, write_sessions
from memory_pipeline.backfill import day_ranges, plan_backfill, run_backfill
from memory_pipeline.definitions import build_definitions
from memory_pipeline.partitions import ordered_days
from memory_pipeline.sessions.redact import OWN_RULES, Redactor, gitleaks_rules
from memory_pipeline.settings import Settings, isolated_settings, load_settings
from memory_pipeline.stores.elasticsearch import delete_days, make_client, stored_sources
from memory_pipeline.stores.indices import PIPELINE_INDICES
from memory_pipeline.stores.openai_compat import OpenAICompatibleClient

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


class RequestLog:
    """Every JSON body the pipeline's OpenAI-compatible clients send, while in use."""

    def __init__(self) -> None:
        self.bodies: list[str] = []

    def __enter__(self) -> RequestLog:
        self._original = OpenAICompatibleClient.request
        log = self

        def request(client, method, path, json=None, **options):  # noqa: ANN001, ANN003, ANN202
            if json is not None:
                log.bodies.append(_dump(json))
            return log._original(client, method, path, json=json, **options)

        OpenAICompatibleClient.request = request
        return self

    def __exit__(self, *exc: object) -> None:
        OpenAICompatibleClient.request = self._original


def _dump(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _file_text(path: Path) -> str:
    if path.suffix == ".parquet":
        try:
            frame = pl.read_parquet(path)
        except Exception:  # noqa: BLE001 - a torn file is searched as bytes
            return path.read_bytes().decode("latin-1")
        return frame.write_ndjson()
    return path.read_bytes().decode("utf-8", errors="replace") + path.read_bytes().decode("latin-1")


def find_leaks(settings: Settings, planted: list[Planted], requests: list[str]) -> dict[str, set[str]]:
    """place -> kinds of which any 12 characters of the random part are stored or were sent there."""
    found: dict[str, set[str]] = defaultdict(set)
    with make_client(settings) as es:
        for index in PIPELINE_INDICES:
            if es.indices.exists(index=index):
                es.indices.refresh(index=index)
                documents = stored_sources(es, index, {"match_all": {}})
                text = "\n".join(_dump(d) for d in documents.values())
                found[f"index {index}"] |= leaks(text, planted)
    for folder, label in ((settings.memory_pipeline_state_dir, "state"), (settings.memory_workspace, "workspace")):
        for path in sorted(folder.rglob("*")) if folder.exists() else []:
            if path.is_file() and path.name != "llama-api-key":
                kinds_found = leaks(_file_text(path), planted)
                if kinds_found:
                    found[f"{label} {path.relative_to(folder)}"] |= kinds_found
    found["requests to the LLM and embedding servers"] |= leaks("\n".join(requests), planted)
    return {place: kinds for place, kinds in found.items() if kinds}


def run_planted(settings: Settings, planted: list[Planted]) -> tuple[list, dict[str, set[str]], int]:
    """The whole job over the planted sessions, as `backfill` runs it; (runs, leaks by place, requests)."""
    write_sessions(settings.sessions_dir, planted)
    with make_client(settings) as es:
        delete_days(es, PIPELINE_INDICES, [DAY])
    instance_dir = settings.memory_pipeline_state_dir / "dagster"
    instance_dir.mkdir(parents=True, exist_ok=True)
    definitions = build_definitions(settings)
    with RequestLog() as log, instance_for_test(temp_dir=str(instance_dir)) as instance:
        plan = plan_backfill(instance, settings.sessions_dir, everything=True)
        runs = [
            run_backfill(instance, first, last, definitions, RUN_CONFIG)
            for first, last in day_ranges(plan.todo, ordered_days(instance))
        ]
    return runs, find_leaks(settings, planted, log.bodies), len(log.bodies)


def maintained_corpus() -> str:
    """Figures on gitleaks' own examples (bench/gitleaks_corpus.py): per context, per rule family."""
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
