"""The maintained secrets corpus: gitleaks' own true- and false-positive examples, in the contexts sessions hold.

`bench/corpus/gitleaks/samples.jsonl` holds every example gitleaks' rule generator validates its ~220 rules
with (`tp`: a line with a secret, and the secret gitleaks finds in it; `fp`: a line it must leave alone), dumped
by the patch beside it (see SOURCES.md there). Written by gitleaks' maintainers, not by this project.

Each true positive is measured in six contexts a session holds it in; it counts as masked when none of its
secrets survives. Each false positive counts as intact when it comes out unchanged (alone, and as a line of a
file). Around every masked line, the other lines of its context must come out byte for byte.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from memory_pipeline.sessions.messages import redact_arguments
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.sessions.secret_rule import gitleaks_rules
from testkit.paths import CORPUS as CORPUS_DIR

SAMPLES = CORPUS_DIR / "gitleaks" / "samples.jsonl"


@dataclass(frozen=True)
class Sample:
    rule: str
    kind: str  # tp | fp
    text: str
    secrets: tuple[str, ...]

    @property
    def family(self) -> str:
        """The rule's vendor or kind: its id's first word (`aws`, `github`, `generic`, `private`…)."""
        return self.rule.split("-", 1)[0]


def samples() -> list[Sample]:
    rows = [json.loads(line) for line in SAMPLES.read_text().splitlines() if line.strip()]
    return [Sample(r["rule"], r["kind"], r["text"], tuple(s for s in r["secrets"] or () if s)) for r in rows]


# context -> (the text a session holds the line in, the lines around it that must stay as they were)
_BEFORE, _AFTER = "HOME=/root", "LOG_LEVEL=info"


def _prose(line: str) -> str:
    return f"Here is what I have in the config: {line} and it works after the restart."


def _thinking(line: str) -> str:
    return f"The user pasted this:\n{line}\nI should wire it into the settings without printing it."


def _shell(line: str) -> str:
    return f"cat >> .env <<'EOF'\n{line}\nEOF\nsource .env && ./deploy.sh"


def _printenv(line: str) -> str:
    return f"{_BEFORE}\n{line}\n{_AFTER}"


def _file(line: str) -> str:
    return f"# settings written by the agent\nimport os\n{line}\nDEBUG = False\n"


CONTEXTS: dict[str, Callable[[str], str]] = {
    "prose": _prose,
    "thinking": _thinking,
    "shell command": _shell,
    "env output": _printenv,
    "file through a tool": _file,
}
ARGUMENTS = "tool-call arguments"  # the sixth: {"path": …, "content": line}, masked as the parser masks arguments


def masked_in(redactor: Redactor, sample: Sample, context: str) -> tuple[bool, bool]:
    """(no secret of `sample` survives, every other line of the context is intact) in `context`."""
    if context == ARGUMENTS:
        out = json.dumps(redact_arguments({"path": ".env", "content": sample.text}, redactor, Counter()))
        return not any(s in out or json.dumps(s)[1:-1] in out for s in sample.secrets), True
    text = CONTEXTS[context](sample.text)
    out = redactor.redact(text)
    hidden = not any(s in out for s in sample.secrets)
    wrapper = text.split(sample.text)
    intact = out.startswith(wrapper[0]) and out.endswith(wrapper[-1]) if len(wrapper) == 2 else True
    return hidden, intact


@dataclass
class Figures:
    recall: dict[str, tuple[int, int]]  # context -> (masked, true positives)
    around: tuple[int, int]  # (contexts whose other lines stayed intact, contexts)
    fp_intact: tuple[int, int]  # (left unchanged, examples gitleaks' whole rule set leaves alone)
    by_family: dict[str, tuple[int, int]]  # family -> (masked in every context, true positives)
    missed: dict[str, list[str]]  # rule -> contexts where a sample leaked (first few)
    changed_fps: list[str]


def measure(redactor: Redactor, corpus: list[Sample] | None = None) -> Figures:
    corpus = corpus if corpus is not None else samples()
    positives = [s for s in corpus if s.kind == "tp" and s.secrets]
    recall: dict[str, list[int]] = {c: [0, 0] for c in [*CONTEXTS, ARGUMENTS]}
    around, families = [0, 0], defaultdict(lambda: [0, 0])
    missed: dict[str, list[str]] = defaultdict(list)
    for sample in positives:
        everywhere = True
        for context in recall:
            hidden, intact = masked_in(redactor, sample, context)
            recall[context][0] += hidden
            recall[context][1] += 1
            around[0] += intact
            around[1] += 1
            if not hidden:
                everywhere = False
                if len(missed[sample.rule]) < 6 and context not in missed[sample.rule]:
                    missed[sample.rule].append(context)
        families[sample.family][0] += everywhere
        families[sample.family][1] += 1
    # An example one rule must not flag may be another rule's true positive (cloudflare's three key rules
    # list each other's keys): a false positive is what gitleaks' whole rule set leaves alone.
    gitleaks = Redactor(base=gitleaks_rules())
    negatives = [s for s in corpus if s.kind == "fp" and _unchanged(gitleaks, s.text)]
    changed = [s.text for s in negatives if not _unchanged(redactor, s.text)]
    return Figures(
        recall={c: (m, n) for c, (m, n) in recall.items()},
        around=(around[0], around[1]),
        fp_intact=(len(negatives) - len(changed), len(negatives)),
        by_family={f: (m, n) for f, (m, n) in families.items()},
        missed=dict(missed),
        changed_fps=changed,
    )


def _unchanged(redactor: Redactor, text: str) -> bool:
    return redactor.redact(text) == text and redactor.redact(_file(text)) == _file(text)


_SHORT = re.compile(r"\s+")


def short(text: str, limit: int = 70) -> str:
    flat = _SHORT.sub(" ", text)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
