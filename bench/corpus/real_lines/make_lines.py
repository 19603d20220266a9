"""Writes lines.jsonl beside this file: real lines of code, configuration and logs from three public
repositories (see SOURCES.md), for the false-positive rate of secret masking. Run once, before the rules
changed, on the repositories' git directories (as the project's `fetch` tool leaves them):

    python3.11 bench/corpus/real_lines/make_lines.py /work/.mirror

Lines that hold a credential (an example password in a compose file, a Flask SECRET_KEY in the docs) are
marked `secret_like` by hand, from the lines the redactor of the time changed (`SECRET_LIKE` below, reviewed
one by one): masking them is no false positive. Every other changed line is one, whichever rule changed it.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
# repo -> (commit, which files, how many lines at most)
REPOS = {
    "docker/awesome-compose": (
        "18f59bdb09ecf520dd5758fbf90dec314baec545",
        ("compose.yaml", "Dockerfile", ".json", ".env", ".conf", ".ini", ".toml", ".py", ".js", ".go", ".log",
         ".sql", ".yml", ".yaml", ".ts", ".java", ".xml", ".properties", ".cs", ".sh"),
        4500,
    ),
    "logpai/loghub": ("dd61d0952749ee7963bde24220d1be5ede023033", ("_2k.log",), 4000),
    "pallets/flask": (
        "2ac89889f4cc330eabd50f295dcef02828522c69",
        (".py", ".toml", ".yaml", ".yml", ".cfg", ".env", ".lock", ".ini", ".html", ".rst"),
        4000,
    ),
}  # fmt: skip
MAX_LINE = 2000  # minified one-line files are not lines a reader compares
PER_FILE = 300


def _spread(items: list, most: int) -> list:
    """At most `most` of `items`, evenly spaced (every file and part of a file has its share)."""
    if len(items) <= most:
        return items
    return [items[i * len(items) // most] for i in range(most)]


def git(mirror: Path, repo: str, *args: str) -> str:
    path = mirror / repo.replace("/", "+") / "repo"
    return subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True, check=True).stdout


# Of the 13 lines the redactor changed at freeze time, the 10 that hold a credential. The other three stay
# false positives: a BGL log path taken for an AWS secret key, `error = "Password is required."` and a test's
# `SECRET_KEY="config"`.
SECRET_LIKE = (
    "SA_PASSWORD: example_123",
    "MYSQL_PASSWORD=nextcloud",
    "POSTGRES_PASSWORD=mysecretpassword",
    "MYSQL_ROOT_PASSWORD: whalehello",
    "mysql://root:whalehello@",
    "MYSQL_ROOT_PASSWORD=somewordpress",
    "MYSQL_PASSWORD=wordpress",
    "SECRET_KEY = '192b9bdd22ab9ed4d12e236c78afcb9a393ec15f71bbf5dc987d54727823bcbf'",
)


def _mark_baseline(rows: list[dict]) -> None:
    for row in rows:
        row["secret_like"] = any(s in row["text"] for s in SECRET_LIKE)


def main(mirror: Path) -> None:
    rows = []
    for repo, (commit, endings, quota) in REPOS.items():
        files = [
            f for f in git(mirror, repo, "ls-tree", "-r", "--name-only", commit).splitlines() if f.endswith(endings)
        ]
        picked: list[dict] = []
        for path in sorted(files):
            try:
                text = git(mirror, repo, "show", f"{commit}:{path}")
            except (subprocess.CalledProcessError, UnicodeDecodeError):
                continue
            lines = [(n, t) for n, t in enumerate(text.splitlines(), 1) if t.strip() and len(t) <= MAX_LINE]
            lines = _spread(lines, PER_FILE)  # a lockfile of 20,000 lines is one file among many
            picked += [{"repo": repo, "commit": commit, "path": path, "line": n, "text": t} for n, t in lines]
        rows += _spread(picked, quota)
    for row in rows:  # half the lines to tune on, half only measured: by a hash of where the line is
        key = f"{row['repo']}:{row['path']}:{row['line']}".encode()
        row["split"] = "tune" if hashlib.sha256(key).digest()[0] % 2 == 0 else "held"
    _mark_baseline(rows)
    (HERE / "lines.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(len(rows), "lines")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
