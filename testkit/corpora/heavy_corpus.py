"""A heavy history for `bench heavy`: months of pi, Claude Code and Codex sessions with long tool outputs, made
from the real fixtures and the pi corpora the other builders made (bench/corpus/{hard,conversation}).

Each session is a template file under a new id, moved to a day of the six months (every date in it shifted by
the same number of days), its tool results grown with long output as real ones are (real code and config from
bench/corpus/real_lines, build and test logs, JSON, `grep -rn` listings; now and then a credential, which the
redactor must mask). Deterministic: the same bytes for the same seed.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

from memory_pipeline.sessions.sources import read_header
from testkit.corpora.heldout_corpus import real_lines
from testkit.paths import CORPUS, ROOT

VERSION = 1  # bump when the bytes it makes change: the cache is rebuilt
SEED = 47
FIRST_DAY = date(2021, 1, 1)  # six months no other test or benchmark uses
DAYS = 181
SESSIONS = 330  # at least this many, and more until the bytes reach the target
TARGET_BYTES = 160 * 2**20
LONGEST_OUTPUT = 200_000  # characters of one tool result at most (the rough corpus' longest)
AGENTS = ("pi", "claude-code", "codex")
FIXTURES = ROOT / "memory_pipeline_tests" / "fixtures"
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_DATE = re.compile(rb"\b(20\d\d)-(\d\d)-(\d\d)(?=T)")


@dataclass
class Heavy:
    root: Path
    files: dict[str, list[Path]] = field(default_factory=dict)  # by agent
    bytes_by_agent: Counter[str] = field(default_factory=Counter)
    days: list[str] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(self.bytes_by_agent.values())

    @property
    def sessions(self) -> int:
        return sum(len(v) for v in self.files.values())


def templates() -> dict[str, list[Path]]:
    """Session files of each agent to copy: main sessions only (a Claude Code subagent's file follows its parent)."""
    pi = sorted((FIXTURES / "pi-sessions").glob("*.jsonl"))
    pi += (
        sorted((CORPUS / "hard" / "sessions").rglob("*.jsonl"))
        + sorted((CORPUS / "conversation" / "sessions").rglob("*.jsonl"))[::8]
    )
    claude = [p for p in sorted((FIXTURES / "claude-code").rglob("*.jsonl")) if "subagents" not in p.parts]
    claude = [p for p in claude if not p.name.startswith("agent-")]
    codex = sorted((FIXTURES / "codex").rglob("*.jsonl"))
    return {"pi": pi, "claude-code": claude, "codex": codex}


def _filler_pool(rng: random.Random) -> list[str]:
    """Pieces of tool output: real files' lines, and the logs, listings and JSON agents' tools print."""
    blocks: dict[tuple[str, str], list[str]] = defaultdict(list)
    for line in real_lines():
        blocks[(line.repo, line.path)].append(line.text)
    pool = ["\n".join(b) for b in blocks.values()]
    for i in range(300):
        kind = i % 5
        n = rng.randint(20, 400)
        if kind == 0:
            pool.append(
                "\n".join(
                    f"tests/test_{rng.choice(['api', 'store', 'sync', 'cli'])}_{j}.py::test_case_{j} "
                    + rng.choice(["PASSED", "PASSED", "PASSED", "FAILED", "SKIPPED"])
                    + f" [{100 * j // n:3d}%]"
                    for j in range(n)
                )
            )
        elif kind == 1:
            pool.append(
                "\n".join(
                    f"2021-0{rng.randint(1, 6)}-1{rng.randint(0, 9)} "
                    f"{rng.randint(10, 23)}:{j % 60:02d}:{j * 7 % 60:02d}"
                    f" {rng.choice(['INFO', 'INFO', 'WARN', 'ERROR', 'DEBUG'])} worker[{j % 7}] "
                    f"job {rng.randint(1000, 99999)} " + rng.choice(["claimed", "retry", "done in 412ms", "timeout"])
                    for j in range(n)
                )
            )
        elif kind == 2:
            pool.append(
                json.dumps(
                    [
                        {"id": rng.randint(1, 10**6), "sha": f"{rng.getrandbits(160):040x}", "status": "ok", "n": j}
                        for j in range(n // 4 + 1)
                    ],
                    indent=2,
                )
            )
        elif kind == 3:
            pool.append(
                "\n".join(
                    f"src/{rng.choice(['core', 'web', 'db'])}/mod_{j % 40}.py:{rng.randint(1, 900)}:    "
                    f"result = client.fetch(url, timeout={rng.randint(1, 60)})  # {rng.getrandbits(32):08x}"
                    for j in range(n)
                )
            )
        else:
            pool.append(
                "\n".join(
                    f"   Compiling crate-{j % 50} v0.{j % 9}.{j % 13}\nwarning: unused variable `x{j}`\n"
                    f"  --> src/lib.rs:{rng.randint(1, 999)}:{rng.randint(1, 80)}"
                    for j in range(n // 3 + 1)
                )
            )
    return pool


def _secret(rng: random.Random) -> str:
    """A credential in a tool output (an env dump, a config file): the redactor's work on long text."""
    chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    token = "".join(rng.choice(chars) for _ in range(36))
    return rng.choice([f"GITHUB_TOKEN=ghp_{token}", f"export OPENAI_API_KEY=sk-proj-{token}{token[:12]}"])


def _output(rng: random.Random, pool: list[str], size: int) -> str:
    parts, total = [], 0
    while total < size:
        piece = rng.choice(pool)
        if rng.random() < 0.02:
            piece = f"{piece}\n{_secret(rng)}"
        parts.append(piece)
        total += len(piece) + 1
    return "\n".join(parts)[:size]


def _grow_tool_result(agent: str, entry: dict, extra: str) -> bool:
    """Appends `extra` to the entry's tool result in its agent's format; False when it holds none."""
    if agent == "pi":
        message = entry.get("message") if entry.get("type") == "message" else None
        if isinstance(message, dict) and message.get("role") == "toolResult":
            for item in message.get("content") or []:
                if isinstance(item, dict) and item.get("type") == "text":
                    item["text"] = f"{item.get('text', '')}\n{extra}"
                    return True
    elif agent == "claude-code":
        message = entry.get("message") if entry.get("type") == "user" else None
        content = message.get("content") if isinstance(message, dict) else None
        for item in content if isinstance(content, list) else []:
            if isinstance(item, dict) and item.get("type") == "tool_result":
                if isinstance(item.get("content"), str):
                    item["content"] = f"{item['content']}\n{extra}"
                    return True
                for part in item.get("content") or []:
                    if isinstance(part, dict) and part.get("type") == "text":
                        part["text"] = f"{part.get('text', '')}\n{extra}"
                        return True
    else:
        payload = entry.get("payload") if entry.get("type") == "response_item" else None
        kind = payload.get("type") if isinstance(payload, dict) else None
        if kind in ("function_call_output", "custom_tool_call_output") and isinstance(payload.get("output"), str):
            payload["output"] = f"{payload['output']}\n{extra}"
            return True
    return False


def _shift_dates(raw: bytes, days: int) -> bytes:
    def shifted(match: re.Match[bytes]) -> bytes:
        try:
            moved = date(int(match[1]), int(match[2]), int(match[3])) + timedelta(days=days)
        except ValueError:
            return match[0]
        return moved.isoformat().encode()

    return _DATE.sub(shifted, raw)


def _session(
    agent: str, template: Path, day: date, rng: random.Random, pool: list[str], target: int
) -> tuple[str, bytes]:
    """(new session id, the file's bytes): the template under a new id on `day`, tool results grown toward
    `target` bytes."""
    _, header = read_header(template)
    new_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    raw = template.read_bytes().replace(header.id.encode(), new_id.encode())
    if agent == "claude-code" and _UUID.match(template.stem):  # a file named by its id: the entries may carry
        raw = raw.replace(template.stem.encode(), new_id.encode())  # another (the session it resumed)
    start = date.fromisoformat(header.timestamp[:10])
    raw = _shift_dates(raw, (day - start).days)
    lines = raw.split(b"\n")
    entries: dict[int, dict] = {}
    for i, line in enumerate(lines):
        if b"tool" in line or b"output" in line:
            try:
                value = json.loads(line)
            except ValueError:
                continue  # a template's broken line stays as it is: real files have them
            if isinstance(value, dict):
                entries[i] = value
    growable = [i for i, value in entries.items() if _grow_tool_result(agent, json.loads(lines[i]), "")]
    missing = target - len(raw)
    if growable and missing > 0:
        weights = [rng.paretovariate(1.2) for _ in growable]
        for i, weight in zip(growable, weights, strict=True):
            size = min(LONGEST_OUTPUT, int(missing * weight / sum(weights)))
            if size > 200:
                _grow_tool_result(agent, entries[i], _output(rng, pool, size))
                lines[i] = json.dumps(entries[i], ensure_ascii=False).encode()
    return new_id, b"\n".join(lines)


def _place(root: Path, agent: str, new_id: str, day: date, rng: random.Random, n: int) -> Path:
    hour, minute = rng.randint(7, 22), rng.randint(0, 59)
    if agent == "pi":
        return root / "sessions" / f"--work-heavy-{n % 6}--" / f"{day}T{hour:02d}-{minute:02d}-00-000Z_{new_id}.jsonl"
    if agent == "claude-code":
        return root / "claude-projects" / f"-work-heavy-{n % 5}" / f"{new_id}.jsonl"
    return root / "codex-sessions" / f"{day:%Y/%m/%d}" / f"rollout-{day}T{hour:02d}-{minute:02d}-00-{new_id}.jsonl"


def build(root: Path, seed: int = SEED, sessions: int = SESSIONS, target_bytes: int = TARGET_BYTES) -> Heavy:
    """The history under `root` (sessions/, claude-projects/, codex-sessions/, as `isolated_settings` names
    them): at least `sessions` sessions and `target_bytes` bytes; built again only when `root` holds none of
    this version, seed and size."""
    stamp = root / "heavy.json"
    key = [VERSION, seed] if (sessions, target_bytes) == (SESSIONS, TARGET_BYTES) else [VERSION, seed, sessions]
    if stamp.exists() and json.loads(stamp.read_text()).get("key") == key:
        return _read(root, json.loads(stamp.read_text()))
    shutil.rmtree(root, ignore_errors=True)
    rng = random.Random(seed)
    pool = _filler_pool(rng)
    kinds = templates()
    heavy = Heavy(root, {agent: [] for agent in AGENTS})
    days: set[str] = set()
    n = 0
    while n < sessions or heavy.size < target_bytes:
        agent = AGENTS[n % 3]
        day = FIRST_DAY + timedelta(days=rng.randrange(DAYS))
        template = rng.choice(kinds[agent])
        target = int(min(4 * 2**20, max(20_000, rng.lognormvariate(13.0, 0.9))))
        new_id, raw = _session(agent, template, day, rng, pool, target)
        path = _place(root, agent, new_id, day, rng, n)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(raw)
        heavy.files[agent].append(path)
        heavy.bytes_by_agent[agent] += len(raw)
        days.add(day.isoformat())
        n += 1
    heavy.days = sorted(days)
    record = {
        "key": key,
        "files": {a: [str(p.relative_to(root)) for p in ps] for a, ps in heavy.files.items()},
        "bytes": dict(heavy.bytes_by_agent),
        "days": heavy.days,
    }
    stamp.write_text(json.dumps(record))
    return heavy


def _read(root: Path, record: dict) -> Heavy:
    files = {a: [root / p for p in ps] for a, ps in record["files"].items()}
    return Heavy(root, files, Counter(record["bytes"]), record["days"])


if __name__ == "__main__":
    made = build(ROOT / "bench" / ".work" / "heavy" / "history")
    print(made.sessions, f"{made.size / 2**20:.0f} MB", dict(made.bytes_by_agent), len(made.days))
