"""Labels of the real-history check (issue 46): in a public real history of one person's consecutive Claude Code
sessions, what a later session needed that an earlier one had already said (a rule restated, a correction
repeated, a fact asked again), at the prompt where the person had to say it (bench/labels/real_history_needs.json).

    uv run python -m testkit.corpora.make_real_history_needs PATH   # PATH: M-Claude's Archives/ folder

The history: `M-Thisness/M-Claude` at commit 5a8d89ee3677906aec18f7beb518a5a08e72a002 (CC0-1.0), folder
`Archives/`: 60 real Claude Code sessions of one person from 2026-01-02 to 2026-01-17 on their machines (a Mac
whose sessions start in /Users/[USER], a Windows PC in C:\\Users\\Mischa) and their repository M-Claude; the
files are already redacted by their author ([REDACTED_IP], [REDACTED_JWT]). Every later session was read (its
prompts and the assistant's answers) and each need written down by hand below (`PIECES`, `NEEDS`) before the
check's code existed; this module only assembles them with the sessions' own prompts, in order, up to the
last prompt that carries a need, and records each file's sha256 so the check reads exactly these files.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from testkit.paths import LABELS

OUT = LABELS / "real_history_needs.json"
SOURCE = {
    "repo": "M-Thisness/M-Claude",
    "commit": "5a8d89ee3677906aec18f7beb518a5a08e72a002",
    "licence": "CC0-1.0",
    "folder": "Archives/",
    "kind": "claude-code",
}
# What the prompts of a session are: typed prompts, not Claude Code's own notices in the user role.
NOT_TYPED = ("<command", "Caveat", "<local-command", "[Request interrupted", "<task-notification",
             "This session is being continued")  # fmt: skip


def session(folder: Path, prefix: str) -> tuple[str, str, str, list[str], str]:
    """(session id, its first cwd, its first timestamp, its typed prompts in order, sha256) of a session file."""
    [path] = sorted(folder.glob(f"{prefix}*.jsonl"))
    prompts: list[str] = []
    cwd, started = "", ""
    for line in path.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue  # the published file has a few lines cut mid-record; the pipeline skips them too
        started = started or entry.get("timestamp", "")
        cwd = cwd or entry.get("cwd", "")
        if entry.get("type") != "user" or entry.get("isMeta"):
            continue
        content = entry.get("message", {}).get("content")
        texts = [content] if isinstance(content, str) else [
            b["text"] for b in content or [] if isinstance(b, dict) and b.get("type") == "text"
        ]  # fmt: skip
        prompts += [t for t in (" ".join(text.split()) for text in texts) if t and not t.startswith(NOT_TYPED)]
    return path.stem, cwd, started, prompts, hashlib.sha256(path.read_bytes()).hexdigest()


# Each piece an earlier session said: (kind, statement, match sets, the session that said it first).
PIECES = {
    "shortcut-path": (
        "fact",
        "The Claude Code launcher is the app `/Applications/Claude Code.app` (made with a custom icon on 2026-01-02).",
        [["claude code.app"]],
        "18240050",
    ),
    "skip-permissions": (
        "rule",
        "The Claude Code shortcuts (plain and tmux) run claude with --dangerously-skip-permissions.",
        [["dangerously-skip-permissions"]],
        "57bb5674",
    ),
    "session-sudo": (
        "decision",
        "sudo for Claude Code: /etc/sudoers.d/session-sudo caches credentials (timestamp_timeout=480); authenticate once with `sudo -v` at session start (Touch ID/YubiKey).",  # noqa: E501
        [["session-sudo"], ["sudo -v"], ["timestamp_timeout"]],
        "f551142a",
    ),
    "m-claude-path": (
        "fact",
        "The M-Claude repository's local folder is ~/Documents/M-Claude (/Users/[USER]/Documents/M-Claude; on Windows Documents\\M-Claude), synced both ways with GitHub.",  # noqa: E501
        [["documents/m-claude"], ["documents\\m-claude"]],
        "3af9b1a7",
    ),
    "op-installed": (
        "fact",
        "The 1Password CLI (`op`) is installed with Homebrew (`brew install 1password-cli`, 2.32.0).",
        [["1password-cli"], ["1password cli"]],
        "18240050",
    ),
    "slate-ssh": (
        "fact",
        "SSH to the slate router goes through Cloudflare: host slate-ssh.thisness.us with `ProxyCommand cloudflared access ssh --hostname %h` in ~/.ssh/config.",  # noqa: E501
        [["slate-ssh"], ["cloudflared access"]],
        "f726527a",
    ),
    "brew-claude": (
        "fact",
        "Claude Code is installed as the Homebrew cask `claude-code`; update it with `brew upgrade claude-code`.",
        [["brew upgrade claude-code"], ["claude-code", "cask"]],
        "3771a5c5",
    ),
    "cygheap-fork": (
        "gotcha",
        "bash on legion-windows fails with `child_copy: cygheap read copy failed ... dofork: child -1` (MSYS2 fork error); seen on 2026-01-10, unresolved then.",  # noqa: E501
        [["cygheap"], ["child_copy"], ["dofork"]],
        "0a8fc187",
    ),
    "ralph": (
        "fact",
        'Ralph mode is the Ralph Loop plugin: `/ralph-loop "task" --completion-promise DONE --max-iterations 50`, stopped with /cancel-ralph.',  # noqa: E501
        [["ralph-loop"], ["ralph", "plugin"]],
        "1249ff48",
    ),
    "slate-blocky": (
        "fact",
        "slate (the GL-iNet BE3600 router) runs Blocky as its DNS resolver (/etc/blocky/config.yml); Blocky refusing queries broke internet from legion.",  # noqa: E501
        [["blocky"]],
        "c76e5be5",
    ),
    "gitleaks-strict": (
        "rule",
        "The M-Claude repo runs gitleaks in max strict mode as a pre-commit scan; cycling the repo means run the scripts, pre-commit and gitleaks, then push.",  # noqa: E501
        [["gitleaks"]],
        "3af9b1a7",
    ),
}
# Each later session: (the prompt where the need arises, the pieces, why the person had to say it).
# [(prompt index where the need arises, [keys], why the person had to say it)]
NEEDS = {
    "f726527a": [(8, ["op-installed"], "asked to install op again: an earlier session had installed it")],
    "621cc355": [(1, ["gitleaks-strict"], "restated what cycling the repo means (no leaks)")],
    "8914a511": [(3, ["m-claude-path"], "the agent looked in ~/M-Claude; the person restated it is in Documents")],
    "0eda269a": [
        (0, ["slate-ssh"], "ssh to slate.thisness.us failed (exit 255): the tunnel host was set up the day before")
    ],
    "b8d44276": [(0, ["brew-claude"], "the person had to tell it how to upgrade (brew)")],
    "f551142a": [(0, ["brew-claude"], "brew vs npm confusion again: the person restated brew is the one install")],
    "3bd9cf18": [
        (0, ["session-sudo"], "asked whether it can sudo: the sudo setup was made the session before"),
        (2, ["shortcut-path", "skip-permissions"], "the agent did not know which launcher; the person gave its path"),
    ],
    "43bc3167": [(0, ["cygheap-fork"], "the same fork error pasted again two days later")],
    "9be1d737": [(0, ["ralph"], "asked to install ralph mode: an earlier session had explained it is a plugin")],
    "d8126fa6": [(2, ["ralph"], "asked again whether ralph can be invoked")],
    "21037e11": [
        (0, ["slate-blocky"], "restated that slate runs blocky, found in an earlier session on legion-windows")
    ],
    "43391f62": [
        (
            1,
            ["m-claude-path"],
            "the agent opened anthropics/claude-code on GitHub; the person restated the local folder",
        )
    ],
}


def build(folder: Path, out: Path = OUT) -> dict:
    labels: dict = {"source": SOURCE, "projects": {}, "sessions": [], "files": {}}
    planted: dict[str, tuple[str, str]] = {}
    for key, (kind, statement, match, source) in PIECES.items():
        sid, cwd, started, _, digest = session(folder, source)
        labels["files"][sid] = digest
        labels["projects"].setdefault(cwd, {})[key] = {
            "kind": kind, "statement": statement, "match": match, "stale": [], "replaces": None, "component": "",
            "port": None, "files": [], "planted_in": sid, "planted_day": started,
        }  # fmt: skip
        planted[key] = (cwd, started)
    for prefix, needs in NEEDS.items():
        sid, cwd, started, prompts, digest = session(folder, prefix)
        labels["files"][sid] = digest
        steps = [
            {"event": "prompt", "text": p, "needs": [], "why": []} for p in prompts[: max(n for n, _, _ in needs) + 1]
        ]
        for n, keys, why in needs:
            steps[n]["needs"] += keys
            steps[n]["why"].append(why)
            for key in keys:
                assert planted[key][1] < started, f"{prefix}: {key} is not said before it"
        labels["sessions"].append(
            {
                "session_id": sid, "project": cwd, "day": started, "split": "held_out", "steps": steps,
                "needs_from_other_folders": [k for _, keys, _ in needs for k in keys if planted[k][0] != cwd],
            }
        )  # fmt: skip
    labels["sessions"].sort(key=lambda s: s["day"])
    out.write_text(json.dumps(labels, indent=1, ensure_ascii=False) + "\n")
    return labels


if __name__ == "__main__":
    made = build(Path(sys.argv[1]))
    needs = sum(len(st["needs"]) for s in made["sessions"] for st in s["steps"])
    print(f"{OUT}: {len(made['sessions'])} later sessions, {needs} needs")
