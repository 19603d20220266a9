"""The memory workspace: plain markdown files a person reads and edits, one folder per project.

<workspace>/<project>/daily/YYYY-MM-DD.md   what the pipeline learned that day (and what review rejected)
<workspace>/<project>/REVIEW.md             proposals waiting for a human decision
<workspace>/<project>/MEMORY.md             the curated memory: only what a human promoted
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from memory_pipeline.names import safe_name, slug

PRIORITY_TITLES = {
    "high": "High: rules, preferences, decisions",
    "medium": "Medium: working context",
    "low": "Low: ephemeral",
}


PROJECT_MARKER = ".project"


def project_dir(workspace: Path, project: str) -> Path:
    """The project's folder: a readable slug of its path plus a hash of the exact path
    (`/home/a/shop` -> `home-a-shop-1f0c…`), so `..` stays inside the workspace and `/work/a-b` and
    `/work/a/b` never share a folder. The folder holds a `.project` file with the exact path; a folder
    made by an older version under the bare slug is moved here the first time it is asked for."""
    folder = workspace / safe_name(project.strip("/") or "no-project")
    legacy = workspace / (slug(project.strip("/"), limit=255) or "no-project")
    if not folder.exists() and legacy.is_dir() and not (legacy / PROJECT_MARKER).exists():
        legacy.rename(folder)
        (folder / PROJECT_MARKER).write_text(project + "\n")
    return folder


def project_of(folder: Path) -> str:
    """The exact project path a workspace folder belongs to (its folder name for hand-made folders)."""
    marker = folder / PROJECT_MARKER
    return marker.read_text().rstrip("\n") if marker.exists() else folder.name


def ensure_project_dir(workspace: Path, project: str) -> Path:
    """The project's folder, made if need be, with its `.project` file: what every writer of it calls."""
    folder = project_dir(workspace, project)
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / PROJECT_MARKER).exists():
        (folder / PROJECT_MARKER).write_text(project + "\n")
    return folder


def daily_log_path(workspace: Path, project: str, day: str) -> Path:
    return project_dir(workspace, project) / "daily" / f"{day}.md"


def render_daily_log(project: str, day: str, ideas: Iterable[dict]) -> str:
    """The day's ideas by priority, each with its id and source session, as markdown."""
    by_priority: dict[str, list[dict]] = {p: [] for p in PRIORITY_TITLES}
    for idea in ideas:
        by_priority.setdefault(idea["priority"], []).append(idea)
    lines = [f"# {day} — {project}", "", "What the pipeline learned from this day's sessions.", ""]
    for priority, title in PRIORITY_TITLES.items():
        items = sorted(by_priority.get(priority, []), key=lambda i: (i["established_at"], i["doc_id"]))
        if not items:
            continue
        lines += [f"## {title}", ""]
        lines += [
            f"- {i['summary']} (`{i['doc_id'][:12]}`, session `{i['session_id']}`, turn `{i['turn_id']}`; "
            f"tags: {', '.join(i['tags'])})"
            for i in items
        ]
        lines.append("")
    if len(lines) == 4:
        lines += ["Nothing worth remembering was found.", ""]
    return "\n".join(lines)


def write_daily_log(workspace: Path, project: str, day: str, ideas: Iterable[dict]) -> tuple[Path, bool]:
    """Write the day's log (keeping an `## Archived by review` section already there); True if it changed."""
    ensure_project_dir(workspace, project)
    path = daily_log_path(workspace, project, day)
    text = render_daily_log(project, day, ideas)
    if path.exists():
        old = path.read_text()
        marker = old.find("\n## Archived by review")
        if marker >= 0:
            text = text.rstrip("\n") + "\n" + old[marker:]
        if old == text:
            return path, False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path, True
