"""The held-out secrets corpus and the real lines: how masking does on what its rules were not written for.

`bench/corpus/heldout_secrets`: 57 credential formats no rule of the project names (read off trufflehog's and
Nosey Parker's detectors), 20 fake samples of each, frozen before the rules changed. Each sample is measured in
15 contexts: gitleaks' corpus's six around a line that carries it (an assignment, a client call, a header),
and nine where it stands with no secret-named word beside it or inside structured text (the issue's
contexts). A sample is masked in a context when no 12 characters of any random part of it survive, and the
text around it stays byte for byte.

`bench/corpus/real_lines`: 12,500 lines of real code, configuration and logs; a line counts as a false
positive when masking changes it, alone or as a line of its file's block of lines. Lines that hold a
credential (an example password in a compose file) are marked `secret_like` by hand and left out.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from memory_pipeline.sessions.messages import redact_arguments
from memory_pipeline.sessions.redact import Redactor
from testkit.corpora.gitleaks_corpus import ARGUMENTS
from testkit.corpora.gitleaks_corpus import CONTEXTS as LINE_CONTEXTS
from testkit.paths import CORPUS as CORPUS_DIR

HELDOUT = CORPUS_DIR / "heldout_secrets"
REAL_LINES = CORPUS_DIR / "real_lines" / "lines.jsonl"
WINDOW = 12


@dataclass(frozen=True)
class Sample:
    format: str
    split: str  # tune | held: the half thresholds may be chosen on, and the half never looked at
    n: int
    token: str
    secrets: tuple[str, ...]  # the random parts: no WINDOW characters of any may survive

    @property
    def vendor(self) -> str:
        return self.format.split("-")[0]


def samples() -> list[Sample]:
    formats = {f["format"]: f for f in json.loads((HELDOUT / "formats.json").read_text())}
    rows = [json.loads(line) for line in (HELDOUT / "samples.jsonl").read_text().splitlines() if line]
    return [Sample(r["format"], formats[r["format"]]["split"], r["n"], r["token"], tuple(r["secrets"])) for r in rows]


# The line a sample is carried on in gitleaks' six contexts, by its number: an assignment under the vendor's
# name, a client call, a YAML key, a constructor, a header, an init call.
_CARRIERS = (
    "{V}_API_KEY={t}",
    'client = {C}Client(api_key="{t}")',
    "{v}_token: {t}",
    'const client = new {C}("{t}");',
    'curl -s -H "Authorization: Bearer {t}" https://api.{v}.example/v1/me',
    '{v}.init("{t}")',
)
# A `.env` line's name: secret-named by a part the old fixed list lacked, or by none at all.
_ENV_SUFFIXES = ("_PAT", "_CREDS", "_DSN", "_WEBHOOK", "_SIGNING_KEY", "_AUTH", "_CONN", "")
# JSON inside a string (a `write` of a config file): under a secret-named key, or a neutral one.
_JSON_KEYS = ("app_password", "api_credential", "signing_secret", "value", "dsn")


def carrier(sample: Sample) -> str:
    v = sample.vendor
    return _CARRIERS[sample.n % len(_CARRIERS)].format(V=v.upper(), C=v.capitalize(), v=v, t=sample.token)


def _env_file(sample: Sample) -> str:
    name = sample.vendor.upper() + _ENV_SUFFIXES[sample.n % len(_ENV_SUFFIXES)]
    return f"# .env\nDEBUG=false\n{name}={sample.token}\nPORT=8080\n"


def _yaml_file(sample: Sample) -> str:
    return (
        f"{sample.vendor}:\n  endpoint: https://api.{sample.vendor}.example\n  access: {sample.token}\n  timeout: 30\n"
    )


# context -> the text a session holds the bare token in (the token itself, no name beside it)
BARE: dict[str, Callable[[Sample], str]] = {
    "standalone in prose": lambda s: f"I rotated it, the new one is {s.token} and it works now.",
    "standalone in thinking": lambda s: f"The user pasted {s.token}; I should pass it to the client.",
    "printenv line": lambda s: f"HOME=/root\nUPSTREAM={s.token}\nLOG_LEVEL=info\nPORT=8080",
    "kubernetes value": lambda s: f'        - name: UPSTREAM\n          value: "{s.token}"\n        - name: REGION',
    ".env line": _env_file,
    "yaml through a tool": _yaml_file,
    "shell argument": lambda s: f"./bin/{s.vendor}-sync --region eu-west-1 {s.token} > sync.log",
}
# contexts where the token is inside tool-call arguments, masked as the parser masks them
ARGUMENT_CONTEXTS: dict[str, Callable[[Sample], dict]] = {
    "neutral tool argument": lambda s: {"command": "deploy", "value": s.token, "region": "eu-west-1"},
    "json inside a string": lambda s: {
        "path": f"secrets/{s.vendor}.json",
        "content": json.dumps({s.vendor: {_JSON_KEYS[s.n % len(_JSON_KEYS)]: s.token, "region": "eu"}}, indent=2),
    },
}
CONTEXTS = [*LINE_CONTEXTS, ARGUMENTS, *BARE, *ARGUMENT_CONTEXTS]


def leaked(sample: Sample, out: str) -> bool:
    for secret in sample.secrets:
        if any(secret[i : i + WINDOW] in out for i in range(0, max(len(secret) - WINDOW, 0) + 1)):
            return True
    return False


def masked_in(redactor: Redactor, sample: Sample, context: str) -> tuple[bool, bool]:
    """(no random part of `sample` survives, the text around it is intact) in `context`."""
    if context in ARGUMENT_CONTEXTS or context == ARGUMENTS:
        arguments = (
            ARGUMENT_CONTEXTS[context](sample) if context != ARGUMENTS else {"path": ".env", "content": carrier(sample)}
        )
        out = redact_arguments(arguments, redactor, Counter())
        kept = all(out[k] == v for k, v in arguments.items() if sample.token not in v)
        return not leaked(sample, json.dumps(out) + json.dumps(out, ensure_ascii=False)), kept
    if context in BARE:
        text, inner = BARE[context](sample), sample.token
    else:
        inner = carrier(sample)
        text = LINE_CONTEXTS[context](inner)
    out = redactor.redact(text)
    before, after = text.split(inner, 1)
    return not leaked(sample, out), out.startswith(before) and out.endswith(after)


@dataclass
class Figures:
    by_context: dict[str, dict[str, tuple[int, int]]]  # split -> context -> (masked, samples)
    by_format: dict[str, tuple[str, int, int, list[str]]]  # format -> (split, masked everywhere, samples, leaks)
    around: tuple[int, int]  # (contexts whose surrounding text stayed intact, contexts)


def measure(redactor: Redactor, corpus: list[Sample] | None = None) -> Figures:
    corpus = corpus if corpus is not None else samples()
    by_context: dict[str, dict[str, list[int]]] = defaultdict(lambda: {c: [0, 0] for c in CONTEXTS})
    formats: dict[str, list] = {}
    around = [0, 0]
    for sample in corpus:
        entry = formats.setdefault(sample.format, [sample.split, 0, 0, []])
        everywhere = True
        for context in CONTEXTS:
            hidden, intact = masked_in(redactor, sample, context)
            for split in (sample.split, "all"):
                by_context[split][context][0] += hidden
                by_context[split][context][1] += 1
            around[0] += intact
            around[1] += 1
            if not hidden:
                everywhere = False
                if context not in entry[3]:
                    entry[3].append(context)
        entry[1] += everywhere
        entry[2] += 1
    return Figures(
        {split: {c: (m, n) for c, (m, n) in contexts.items()} for split, contexts in by_context.items()},
        {f: (s, m, n, leaks) for f, (s, m, n, leaks) in formats.items()},
        (around[0], around[1]),
    )


@dataclass(frozen=True)
class Line:
    repo: str
    path: str
    line: int
    text: str
    split: str
    secret_like: bool


def real_lines() -> list[Line]:
    rows = [json.loads(line) for line in REAL_LINES.read_text().splitlines() if line]
    return [Line(r["repo"], r["path"], r["line"], r["text"], r["split"], r["secret_like"]) for r in rows]


def changed_lines(redactor: Redactor, lines: list[Line]) -> list[Line]:
    """The lines masking changes: alone, or as a line of their file's run of lines in the corpus."""
    changed = {i for i, line in enumerate(lines) if redactor.redact(line.text) != line.text}
    by_file: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, line in enumerate(lines):
        by_file[(line.repo, line.path)].append(i)
    for indices in by_file.values():
        block = [lines[i].text for i in indices]
        out = redactor.redact("\n".join(block)).split("\n")
        changed |= {i for i, a, b in zip(indices, block, out, strict=False) if a != b}
    return [lines[i] for i in sorted(changed)]
