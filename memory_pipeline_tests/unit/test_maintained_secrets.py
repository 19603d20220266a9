"""The maintained secrets corpus (gitleaks' own examples, bench/corpus/gitleaks): one true positive of every
rule masked in each of the six contexts sessions hold secrets in, the lines around it intact, and gitleaks'
false positives left alone. `uv run python -m bench secrets` measures all 6,368 examples."""

from __future__ import annotations

from memory_pipeline.sessions.redact import DEFAULT_RULES, Redactor
from memory_pipeline.sessions.secret_rules import SHAPE_RULES
from testkit.corpora.gitleaks_corpus import ARGUMENTS, CONTEXTS, measure, samples


def test_one_example_of_every_rule_is_masked_everywhere_and_false_positives_stay() -> None:
    corpus = samples()
    first: dict[str, object] = {}
    for sample in corpus:
        if sample.kind == "tp" and sample.secrets:
            first.setdefault(sample.rule, sample)
    assert len(first) >= 200  # gitleaks' rules, nearly all with examples
    chosen = [*first.values(), *(s for s in corpus if s.kind == "fp")]
    figures = measure(Redactor(), chosen)  # type: ignore[arg-type]
    assert set(figures.recall) == {*CONTEXTS, ARGUMENTS} and len(figures.recall) == 6
    for context, (masked, total) in figures.recall.items():
        assert total == len(first) and masked == total, (context, figures.missed)
    assert figures.around[0] == figures.around[1]  # no other line of a context changed
    # The named rules leave gitleaks' false positives alone (311/313 before the shape rules); with the shape
    # rules 304/313 (bench/results.md, `secrets_heldout`, lists the nine). Restoring 99% (310) would need the shape
    # rules to stand aside wherever a line names a vendor, which leaks held-out formats of vendors gitleaks knows.
    named = measure(Redactor(base=[r for r in DEFAULT_RULES if r not in SHAPE_RULES]), chosen)  # type: ignore[arg-type]
    intact, negatives = named.fp_intact
    assert negatives >= 300 and intact / negatives >= 0.99, named.changed_fps
    intact, negatives = figures.fp_intact
    assert intact / negatives >= 0.97, figures.changed_fps
