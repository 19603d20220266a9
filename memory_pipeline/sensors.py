"""A sensor on the sessions directory: runs for the days whose files are new, changed or gone.

The cursor maps each file to (size, mtime, day) as last requested. A tick only
stats files; it reads a header only for a file it has not seen in this state.
A file modified within the debounce window is left for a later tick (pi may
still be writing it), and run keys name the exact file states, so a repeated
tick requests nothing twice. A day seen for the first time becomes a partition
in the same tick.
"""

import hashlib
import json
import time
from collections import defaultdict

from dagster import DefaultSensorStatus, RunRequest, SensorEvaluationContext, SensorResult, SkipReason, sensor

from memory_pipeline.jobs import assets_to_run, memory_job
from memory_pipeline.partitions import new_days, new_weeks, session_days, session_weeks
from memory_pipeline.resources import LlamaResource, SessionsResource
from memory_pipeline.sessions.discovery import session_paths
from memory_pipeline.sessions.parse import Problem, parse_timestamp
from memory_pipeline.sessions.sources import read_header


@sensor(
    job=memory_job,
    minimum_interval_seconds=30,
    default_status=DefaultSensorStatus.RUNNING,
    description="Watches SESSIONS_DIR and the other agents' folders (CLAUDE_PROJECTS_DIR, CODEX_SESSIONS_DIR): a "
    "new, changed or deleted session file requests a run of its day "
    "(30 s after its last write), and a new day becomes a partition. Without the chat model "
    "(MEMORY_PIPELINE_NO_LLM) the runs leave out the LLM's assets.",
)
def session_files_sensor(context: SensorEvaluationContext, sessions: SessionsResource, llm: LlamaResource):
    """Requests ingest runs for session days with new, changed or deleted files."""
    before: dict[str, list] = json.loads(context.cursor) if context.cursor else {}
    after: dict[str, list] = {}
    touched: dict[str, list[str]] = defaultdict(list)
    now_ns = time.time_ns()
    problems: list[Problem] = []
    # Every agent's folder (pi's, Claude Code's, Codex's): one cursor, its keys prefixed per folder.
    files = [
        (root.relative(path), path)
        for root in sessions.roots
        if root.path.exists()
        for path in session_paths(root.path, problems, root.prefix)
    ]
    for relative, path in files:
        try:
            stat = path.stat()
        except OSError:
            continue
        previous = before.get(relative)
        if previous and previous[:2] == [stat.st_size, stat.st_mtime_ns]:
            after[relative] = previous
            continue
        if now_ns - stat.st_mtime_ns < sessions.debounce_seconds * 1e9:
            context.log.info(f"{relative}: modified {(now_ns - stat.st_mtime_ns) / 1e9:.0f}s ago, waiting")
            if previous:
                after[relative] = previous  # still owed: compared again next tick
            continue
        try:
            day = parse_timestamp(read_header(path)[1].timestamp).date().isoformat()
        except (OSError, ValueError) as exc:
            context.log.warning(f"{relative}:1: not a session file: {exc}")
            after[relative] = [stat.st_size, stat.st_mtime_ns, None]
            continue
        after[relative] = [stat.st_size, stat.st_mtime_ns, day]
        touched[day].append(f"{relative}:{stat.st_size}:{stat.st_mtime_ns}")
        if previous and previous[2] and previous[2] != day:
            touched[previous[2]].append(f"{relative}:moved")
    for problem in problems:
        context.log.warning(str(problem))
    for relative, previous in before.items():
        if relative not in after and previous[2]:
            touched[previous[2]].append(f"{relative}:deleted")
    context.update_cursor(json.dumps(after, sort_keys=True))
    requests = []
    # The most recent day first: one run at a time (the queue is first in, first out), so a history found at
    # once is useful within minutes, not after its oldest days.
    for day, states in sorted(touched.items(), reverse=True):
        run_key = f"{day}:{hashlib.sha1(chr(10).join(sorted(states)).encode()).hexdigest()[:16]}"
        requests.append(
            RunRequest(
                run_key=run_key,
                asset_selection=assets_to_run(llm.enabled),
                partition_key=day,
                tags={"memory_pipeline/files": str(len(states))},
            )
        )
    if not requests:
        folders = ", ".join(str(root.path) for root in sessions.roots)
        return SkipReason(f"no new or changed session files under {folders}")
    added = new_days(context.instance, touched)
    weeks = new_weeks(context.instance, touched)
    return SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=[
            *([session_days.build_add_request(added)] if added else []),
            *([session_weeks.build_add_request(weeks)] if weeks else []),
        ],
    )
