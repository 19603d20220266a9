"""Validate events.jsonl (issue 48 follow-through corpus) and print its counts.

Checks: every line is JSON with the required fields and allowed values; ids are
unique and sequential; split follows the rule (id number divisible by 3 -> held);
evidence is empty for no_signal and otherwise an exact substring of one message's
content or of json.dumps(arguments) of one tool call in the turn; no memory text is
used more than 3 times. Exit status 1 on any problem.

    python3 bench/corpus/followthrough/check.py
    python3 bench/corpus/followthrough/check.py bench/corpus/followthrough/events_tune_b.jsonl
    python3 bench/corpus/followthrough/check.py bench/corpus/followthrough/events_tune_c.jsonl
    python3 bench/corpus/followthrough/check.py bench/corpus/followthrough/heldout_b.jsonl
"""

import collections
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
LABELS = ("followed", "ignored", "contradicted", "no_signal")
AGENTS = ("pi", "claude-code", "codex", "gemini")
KINDS = ("rule", "decision", "fact", "root_cause")
ROLES = ("user", "assistant", "toolResult")
TOOLS = {
    "pi": {"bash", "read", "edit", "write"},
    "claude-code": {"Bash", "Read", "Edit", "Write"},
    "codex": {"shell", "exec_command", "apply_patch"},
    "gemini": {"run_shell_command", "read_file", "write_file", "replace"},
}


def haystacks(turn):
    for m in turn:
        yield m.get("content", "")
        for c in m.get("tool_calls", []):
            yield json.dumps(c["arguments"])


def main(path=HERE / "events.jsonl"):
    problems, events = [], []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError as e:
            problems.append(f"line {n}: not JSON ({e})")
    for i, e in enumerate(events, 1):
        eid = e.get("id")
        where = f"{eid}"
        # The other tuning sets (events_tune_b.jsonl: fb-001 ..., events_tune_c.jsonl: fc-001 ...) are tuning data.
        prefix = {"events_tune_b.jsonl": "fb", "events_tune_c.jsonl": "fc", "heldout_b.jsonl": "fh"}.get(
            path.name, "ft"
        )
        if eid != f"{prefix}-{i:03d}":
            problems.append(f"{where}: expected id {prefix}-{i:03d}")
        want_split = "held" if prefix == "fh" else "tune" if prefix != "ft" or i % 3 else "held"
        if e.get("split") != want_split:
            problems.append(f"{where}: split should be {want_split}")
        if set(e) != {"id", "split", "memory", "agent", "turn", "label", "evidence", "note"}:
            problems.append(f"{where}: fields {sorted(e)}")
            continue
        if e["label"] not in LABELS:
            problems.append(f"{where}: label {e['label']}")
        if e["agent"] not in AGENTS:
            problems.append(f"{where}: agent {e['agent']}")
        if e["memory"].get("kind") not in KINDS:
            problems.append(f"{where}: kind")
        if not e["memory"].get("text"):
            problems.append(f"{where}: memory text")
        if not e["note"]:
            problems.append(f"{where}: empty note")
        for m in e["turn"]:
            if m.get("role") not in ROLES:
                problems.append(f"{where}: role {m.get('role')}")
            if not isinstance(m.get("content"), str):
                problems.append(f"{where}: content not str")
            for c in m.get("tool_calls", []):
                if c["name"] not in TOOLS[e["agent"]]:
                    problems.append(f"{where}: tool {c['name']} for {e['agent']}")
            if m.get("role") == "toolResult" and not m.get("tool_name"):
                problems.append(f"{where}: toolResult without tool_name")
        ev = e["evidence"]
        if e["label"] == "no_signal":
            if ev:
                problems.append(f"{where}: no_signal with evidence")
        elif not ev:
            problems.append(f"{where}: empty evidence")
        elif not any(ev in h for h in haystacks(e["turn"])):
            problems.append(f"{where}: evidence not found: {ev!r}")
    uses = collections.Counter(e["memory"]["text"] for e in events)
    for t, k in uses.items():
        if k > 3:
            problems.append(f"memory used {k} times: {t}")

    print(f"{len(events)} events, {len(uses)} distinct memories")
    for title, key in (("label", "label"), ("agent", "agent"), ("kind", lambda e: e["memory"]["kind"])):
        f = key if callable(key) else (lambda e, k=key: e[k])
        print(f"\nby {title}:", dict(sorted(collections.Counter(map(f, events)).items())))
    print("\nlabel x split x agent:")
    print(f"{'label':14}{'split':6}" + "".join(f"{a:>13}" for a in AGENTS) + f"{'total':>8}")
    for lab in LABELS:
        for sp in ("tune", "held"):
            row = [sum(1 for e in events if e["label"] == lab and e["split"] == sp and e["agent"] == a) for a in AGENTS]
            print(f"{lab:14}{sp:6}" + "".join(f"{x:>13}" for x in row) + f"{sum(row):>8}")
    for sp in ("tune", "held"):
        print(f"{sp}: {sum(1 for e in events if e['split'] == sp)}")
    if problems:
        print("\nPROBLEMS:")
        for p in problems:
            print(" ", p)
        return 1
    print("\nOK")
    return 0


if __name__ == "__main__":
    sys.exit(main(*(pathlib.Path(a) for a in sys.argv[1:])))
