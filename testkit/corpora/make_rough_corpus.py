"""Generate the "rough history" corpus: `python -m testkit.corpora.make_rough_corpus`.

Real histories are hostile, and this corpus holds what was seen in them, one case at a time:
files that are not sessions (empty, binary, BOM, a side file, a torn header), lines that are broken
(malformed, torn, invalid UTF-8, NUL bytes, unknown types and roles, duplicate, missing and dangerous
ids, dangling parents, a parent cycle, a second header), ids and projects that would become unsafe
file names (600 characters, `../../tmp/x`, a project `..`, `/work/a-b` beside `/work/a/b`), symlink
loops, a duplicate session, chat-bot envelopes, a turn that starts with the assistant, sessions from
2019 and from year 9999, impossible times and an unknown format version, multilingual turns
(Chinese, Japanese, Korean, Arabic, emoji), a tool output of 200,000 characters and code-heavy output.

`cases.json` lists every case with the file (and line) where a run must report it, or `ingested` for
the ones whose messages must all arrive. Deterministic: the same bytes on every run. Kept small in
turns, because every active turn costs a call to the local LLM in the end-to-end test.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from testkit.paths import CORPUS as CORPUS_DIR

OUT = CORPUS_DIR / "rough"
SESSIONS = OUT / "sessions"
DAY = "2026-03-10"
cases: list[dict[str, Any]] = []


def case(name: str, file: str, kind: str, line: int | None = None, stage: str = "raw_messages") -> None:
    """`kind`: the problem a run reports for it (by file and line), or `ingested` (every message indexed)."""
    cases.append({"case": name, "file": file, "line": line, "kind": kind, "stage": stage})


def header(sid: str, day: str = DAY, cwd: str = "/work/rough", version: int = 3, hour: int = 9) -> dict:
    return {"type": "session", "version": version, "id": sid, "timestamp": f"{day}T{hour:02d}:00:00.000Z", "cwd": cwd}


def _ts(day: str, second: int) -> str:
    return f"{day}T10:{second // 60 % 60:02d}:{second % 60:02d}.000Z"


def user(eid: str, parent: str | None, text: str, day: str = DAY, n: int = 0) -> dict:
    return {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": _ts(day, n),
        "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1_700_000_000_000 + n},
    }


def assistant(eid: str, parent: str | None, text: str, day: str = DAY, n: int = 1, calls: list | None = None) -> dict:
    content: list[dict] = [{"type": "text", "text": text}] if text else []
    content += [{"type": "toolCall", "id": c, "name": "bash", "arguments": {"command": cmd}} for c, cmd in calls or []]
    return {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": _ts(day, n),
        "message": {
            "role": "assistant",
            "content": content,
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "api": "anthropic-messages",
            "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0},
            "stopReason": "toolUse" if calls else "stop",
            "timestamp": 1_700_000_000_000 + n,
        },
    }


def tool_result(eid: str, parent: str, call: str, text: str, day: str = DAY, n: int = 2) -> dict:
    return {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": _ts(day, n),
        "message": {
            "role": "toolResult",
            "toolCallId": call,
            "toolName": "bash",
            "content": [{"type": "text", "text": text}],
            "isError": False,
            "timestamp": 1_700_000_000_000 + n,
        },
    }


def conversation(day: str, turns: list[tuple[str, str]], prefix: str = "e") -> list[dict]:
    """Linear user/assistant turns."""
    lines, parent = [], None
    for i, (ask, answer) in enumerate(turns):
        u, a = f"{prefix}{2 * i:07x}", f"{prefix}{2 * i + 1:07x}"
        lines += [user(u, parent, ask, day, 4 * i), assistant(a, u, answer, day, 4 * i + 1)]
        parent = a
    return lines


def write(rel: str, lines: list[dict | str | bytes], newline_at_end: bool = True) -> Path:
    path = SESSIONS / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    chunks = []
    for line in lines:
        if isinstance(line, dict):
            chunks.append(json.dumps(line, ensure_ascii=False).encode())
        elif isinstance(line, str):
            chunks.append(line.encode())
        else:
            chunks.append(line)
    path.write_bytes(b"\n".join(chunks) + (b"\n" if newline_at_end else b""))
    return path


def not_sessions() -> None:
    write("--work-rough--/empty.jsonl", [], newline_at_end=False)
    case("empty file", "--work-rough--/empty.jsonl", "not a session file", 1, "session_files")
    write("--work-rough--/blank-first-line.jsonl", ["", header("blank-first")])
    case("blank first line", "--work-rough--/blank-first-line.jsonl", "not a session file", 1, "session_files")
    (SESSIONS / "--work-rough--" / "binary.jsonl").write_bytes(b"\x00\x01\x02PK\x03\x04" + bytes(range(256)) * 4)
    case("binary file", "--work-rough--/binary.jsonl", "not a session file", 1, "session_files")
    write("--work-rough--/not-json.jsonl", ["this is a log line, not JSON", header("not-json")])
    case("first line not JSON", "--work-rough--/not-json.jsonl", "not a session file", 1, "session_files")
    write("--work-rough--/message-first.jsonl", [user("a1", None, "hello")])
    case("first line is a message", "--work-rough--/message-first.jsonl", "not a session file", 1, "session_files")
    write("--work-rough--/no-timestamp.jsonl", ['{"type": "session", "version": 3, "id": "no-ts", "cwd": "/w"}'])
    case("header without timestamp", "--work-rough--/no-timestamp.jsonl", "not a session file", 1, "session_files")
    write("--work-rough--/bad-timestamp.jsonl", [header("bad-ts") | {"timestamp": "yesterday at noon"}])
    case("header with a bad timestamp", "--work-rough--/bad-timestamp.jsonl", "not a session file", 1, "session_files")
    write("--work-rough--/x.trajectory.jsonl", [{"step": 1, "action": "read"}, {"step": 2}])
    case("OpenClaw side file", "--work-rough--/x.trajectory.jsonl", "not a session file", 1, "session_files")
    write("--work-rough--/empty-id.jsonl", [header("") | {"id": ""}])
    case("header with an empty id", "--work-rough--/empty-id.jsonl", "not a session file", 1, "session_files")
    (SESSIONS / "--work-rough--" / "utf16.jsonl").write_bytes(json.dumps(header("utf16")).encode("utf-16"))
    case("UTF-16 file", "--work-rough--/utf16.jsonl", "not a session file", 1, "session_files")
    (SESSIONS / "--work-rough--" / "gzipped.jsonl").write_bytes(
        bytes.fromhex("1f8b0800000000000003") + b"\x00" * 8 + json.dumps(header("gz")).encode()
    )
    case("gzip-compressed file", "--work-rough--/gzipped.jsonl", "not a session file", 1, "session_files")
    # The duplicate keeps the larger file: this one has fewer bytes than the original below.
    write("backup/copy-of-cjk.jsonl", [header("rough-cjk", cwd="/work/rough-cjk")])
    case("duplicate session id", "backup/copy-of-cjk.jsonl", "duplicate session id", 1, "session_files")


def links() -> None:
    folder = SESSIONS / "linked"
    folder.mkdir(parents=True, exist_ok=True)
    os.symlink("..", folder / "loop")
    case("symlink loop", "linked/loop", "symlink loop", None, "session_files")
    os.symlink("nowhere.jsonl", folder / "dangling.jsonl")
    case("dangling symlink", "linked/dangling.jsonl", "broken or looping symlink", None, "session_files")


def bad_lines() -> None:
    rel = "--work-rough--/2026-03-10T09-00-00-000Z_rough-lines.jsonl"
    lines: list[dict | str | bytes] = [header("rough-lines")]
    lines += conversation(DAY, [("Why does the deploy script fail on staging?", "The SSH key path is wrong.")])
    parent = lines[-1]["id"]
    lines.append('{"type": "message", "id": "broken", "parentId": ')  # 4: malformed
    lines.append(
        b'{"type": "custom", "customType": "note", "data": "\xff\xfe caf\xe9", "id": "latin1", "parentId": "e0000001"}'
    )
    lines.append('{"type": "weird_future_entry", "id": "w1", "parentId": "e0000001"}')
    lines.append(
        {"type": "message", "id": "r1", "parentId": "e0000001", "timestamp": _ts(DAY, 9),
         "message": {"role": "oracle", "content": "an unknown role"}}
    )  # fmt: skip
    lines.append(user("dup", parent, "Set the staging key to ~/.ssh/staging.", DAY, 10))  # 8
    lines.append(assistant("dup", "e0000001", "Done: deploy.sh now reads ~/.ssh/staging.", DAY, 11))  # 9: same id
    lines.append({k: v for k, v in user("x", "dup", "And the prod key?", DAY, 12).items() if k != "id"})  # 10
    lines.append(user("orphan", "not-in-this-file", "An orphan that pi treats as a root.", DAY, 13))  # 11
    lines.append(header("rough-lines-again"))  # 12: extra header
    lines.append(
        '{"type": "message", "id": "nul", "parentId": "dup", "message": {"role": "user", "content": "a\x00b"}}'
    )
    lines.append("[1, 2, 3]")  # 14: JSON, not an entry
    lines.append('{"type": "message", "id": "str", "parentId": "dup", "message": "just a string"}')  # 15
    lines.append(assistant("last1", "dup", "The prod key stays in the vault; nothing changed there.", DAY, 15))
    lines.append('{"type": "message", "id": "torn", "parentId": "last1", "message": {"role": "us')  # 17: torn
    write(rel, lines, newline_at_end=False)
    for name, line, kind in [
        ("malformed line", 4, "malformed line"),
        ("invalid UTF-8", 5, "invalid UTF-8"),
        ("unknown entry type", 6, "unknown entry type"),
        ("unknown role", 7, "unknown role"),
        ("duplicate entry id", 8, "duplicate entry id"),
        ("missing entry id", 10, "missing id"),
        ("dangling parentId", 11, "dangling parentId"),
        ("second session header", 12, "extra session header"),
        ("NUL bytes in a line", 13, "binary data"),
        ("JSON that is not an entry", 14, "malformed line"),
        ("entry with a wrongly typed field", 15, "malformed line"),
        ("torn last line", 17, "torn last line"),
    ]:
        case(name, rel, kind, line)


def unsafe_entry_ids() -> None:
    rel = "--work-rough--/2026-03-10T10-30-00-000Z_entry-ids.jsonl"
    long_id = "e" * 300
    lines = [
        header("rough-entry-ids", hour=10),
        user("../../etc/passwd", None, "Bump the API timeout to 30 s.", DAY, 0),
        assistant(long_id, "../../etc/passwd", "The API timeout is 30 s now, in config/api.toml.", DAY, 1),
    ]
    write(rel, lines)
    case("entry id with ../", rel, "unsafe entry id", 2)
    case("entry id of 300 characters", rel, "unsafe entry id", 3)
    case("messages with unsafe entry ids kept", rel, "ingested")


def cycle() -> None:
    rel = "--work-rough--/2026-03-10T11-00-00-000Z_rough-cycle.jsonl"
    lines: list[dict | str | bytes] = [header("rough-cycle", hour=11)]
    lines.append(user("c1", "c3", "Which port does the API listen on?", DAY, 0))
    lines.append(assistant("c2", "c1", "Port 8080, set in config/api.toml.", DAY, 1))
    lines.append(user("c3", "c2", "Move it to 8081, 8080 clashes with llama-server.", DAY, 2))
    lines.append(assistant("c4", "c3", "Moved the API to port 8081 in config/api.toml.", DAY, 3))
    write(rel, lines)
    case("parent cycle", rel, "parent cycle", 2)
    case("messages of a cycle kept", rel, "ingested")


def unsafe_names() -> None:
    long_id = "s" * 600
    rel = "--work-rough--/2026-03-10T12-00-00-000Z_long-id.jsonl"
    write(rel, [header(long_id, hour=12), *conversation(DAY, [("Rename the worker queue.", "Renamed to jobs.")])])
    case("600-character session id", rel, "unsafe session id", 1)
    case("600-character session id ingested", rel, "ingested")
    rel = "--work-rough--/2026-03-10T13-00-00-000Z_traversal.jsonl"
    write(rel, [header("../../../../tmp/rough-escape", hour=13), *conversation(DAY, [("Pin node 22.", "Pinned.")])])
    case("path traversal in the session id", rel, "unsafe session id", 1)
    case("path traversal session ingested", rel, "ingested")
    rel = "--..--/2026-03-10T14-00-00-000Z_dotdot.jsonl"
    write(rel, [header("rough-dotdot", cwd="..", hour=14), *conversation(DAY, [("Use tabs.", "Switched to tabs.")])])
    case("project folder ..", rel, "ingested")
    for n, cwd in enumerate(["/work/a-b", "/work/a/b"]):
        rel = f"--work-a{n}--/2026-03-10T15-0{n}-00-000Z_collide-{n}.jsonl"
        rule = ["Always use pnpm in this repo.", "Never use pnpm here, use npm."][n]
        write(rel, [header(f"rough-collide-{n}", cwd=cwd, hour=15), *conversation(DAY, [(rule, "Noted.")])])
        case(f"project {cwd} beside its look-alike", rel, "ingested")


def chat_bot() -> None:
    envelope = (
        'Conversation info (untrusted metadata):\n```json\n{\n  "message_id": "88231",\n  "sender_id": "5512",\n'
        '  "conversation_label": "Ops group",\n  "timestamp": "Tue 2026-03-10 16:02 UTC"\n}\n```\n\n'
        'Sender (untrusted metadata):\n```json\n{\n  "label": "Dana (5512)",\n  "name": "Dana",\n'
        '  "username": "dana_ops"\n}\n```\n\n'
    )
    rel = "--work-bot--/2026-03-10T16-00-00-000Z_bot.jsonl"
    turns = [
        (envelope + "The nightly backup cron is failing with 'disk quota exceeded'; move it to /srv/backup.",
         "Moved the backup target to /srv/backup and the cron passed."),
        ("[Telegram Dana (@dana_ops) id:5512 +3m 2026-03-10 16:05 UTC] keep 14 days of backups, not 30\n"
         "[message_id: 88240]", "Retention is now 14 days."),
    ]  # fmt: skip
    write(rel, [header("rough-bot", cwd="/work/bot", hour=16), *conversation(DAY, turns)])
    case("chat-bot envelope", rel, "ingested")


def assistant_first() -> None:
    rel = "--work-rough--/2026-03-10T17-00-00-000Z_assistant-first.jsonl"
    lines = [
        header("rough-assistant-first", hour=17),
        assistant("a0", None, "Resuming: the migration to Postgres 16 is half done; the users table is moved.", DAY, 0),
        *conversation(DAY, [("Finish the orders table too.", "The orders table is on Postgres 16 now.")]),
    ]
    lines[2]["parentId"] = "a0"
    write(rel, lines)
    case("turn that starts with the assistant", rel, "ingested")


def dates() -> None:
    rel = "--work-old--/2019-05-02T08-00-00-000Z_old.jsonl"
    old = conversation("2019-05-02", [("Add the CSV export.", "Added export.csv to the reports page.")])
    write(rel, [header("rough-2019", day="2019-05-02", cwd="/work/old", hour=8), *old])
    case("session from 2019", rel, "ingested")
    rel = "--work-future--/9999-12-31T08-00-00-000Z_future.jsonl"
    ahead = conversation("9999-12-31", [("Clock is wrong here.", "Noted: the system clock is off.")])
    write(rel, [header("rough-9999", day="9999-12-31", cwd="/work/future", hour=8), *ahead])
    case("session from year 9999", rel, "ingested")
    rel = "--work-rough--/v1.jsonl"
    v1 = [{"type": "session", "id": "rough-v1", "timestamp": f"{DAY}T18:00:00.000Z", "cwd": "/work/rough"}]
    v1 += [{k: v for k, v in e.items() if k not in ("id", "parentId")} for e in conversation(DAY, [
        ("Log to stderr, not a file.", "Logging now goes to stderr.")])]  # fmt: skip
    write(rel, v1)
    case("v1 session without ids", rel, "ingested")
    rel = "--work-rough--/crlf-bom.jsonl"
    body = b"\r\n".join(json.dumps(e).encode() for e in [header("rough-crlf", hour=19), *conversation(DAY, [
        ("Windows line endings here.", "Read fine.")])])  # fmt: skip
    (SESSIONS / rel).write_bytes(b"\xef\xbb\xbf" + body + b"\r\n")
    case("UTF-8 BOM and CRLF line endings", rel, "ingested")


def multilingual() -> None:
    rel = "--work-rough-cjk--/2026-03-10T20-00-00-000Z_cjk.jsonl"
    zh = (
        "请把缓存从 memcached 换成 redis，因为会话总是被驱逐。"
        + "我们需要确保所有服务在重启后仍然保留用户的登录状态和购物车内容。" * 12
    )
    ja = "テストは必ず pytest -x で実行してください。" + "失敗したら最初のエラーで止まるようにしたいです。" * 10
    ko = (
        "배포 전에 항상 마이그레이션을 확인하세요. "
        + "데이터베이스 스키마가 바뀌면 롤백 계획도 함께 작성해야 합니다. " * 10
    )
    ar = "استخدم دائمًا المنطقة الزمنية UTC في السجلات. " + "يجب أن تكون جميع الطوابع الزمنية متسقة بين الخدمات. " * 10
    emoji = "🚀 ship it when CI is 🟢 " + "🔥🐛✅ " * 60 + "— and tag the release v2.3.1 🎉"
    turns = [
        (zh, "已将缓存切换为 redis，并在 config/cache.toml 中设置了持久化。" * 6),
        (ja, "pytest -x を使うように Makefile を更新しました。"),
        (ko, "마이그레이션 확인 단계를 배포 스크립트에 추가했습니다."),
        (ar, "تم ضبط جميع السجلات على UTC."),
        (emoji, "Tagged v2.3.1 after CI went green."),
    ]
    write(rel, [header("rough-cjk", cwd="/work/rough-cjk", hour=20), *conversation(DAY, turns)])
    case("Chinese, Japanese, Korean, Arabic and emoji turns", rel, "ingested")


def huge_and_code() -> None:
    rel = "--work-rough--/2026-03-10T21-00-00-000Z_huge.jsonl"
    code = "\n".join(
        f"def handler_{i}(req: Request) -> Response:\n"
        f"    return Response(status={200 + i % 5}, body=json.dumps({{'i': {i}}}))"
        for i in range(2000)
    )
    log = "".join(
        f"2026-03-10T21:{i // 60 % 60:02d}:{i % 60:02d} WARN worker[{i % 7}] retry {i} of job {i * 7919 % 100003}\n"
        for i in range(3000)
    )[:200_000]
    lines = [
        header("rough-huge", hour=21),
        user("h1", None, "Why is the worker retrying so much? Look at the log.", DAY, 0),
        assistant("h2", "h1", "", DAY, 1, calls=[("call1", "tail -n 3000 /var/log/worker.log")]),
        tool_result("h3", "h2", "call1", log, DAY, 2),
        assistant("h4", "h3", "", DAY, 3, calls=[("call2", "cat app/handlers.py")]),
        tool_result("h5", "h4", "call2", code, DAY, 4),
        assistant("h6", "h5", "The retries come from job ids colliding modulo 100003; the handlers are fine.", DAY, 5),
    ]
    write(rel, lines)
    case("tool output of 200,000 characters", rel, "ingested")
    case("code-heavy tool output", rel, "ingested")


def bad_values() -> None:
    """One bad value in an otherwise good file (issue 30's probe): each costs its field or its file, never
    another file or another day."""
    rel = "--work-rough--/2026-03-10T22-00-00-000Z_bad-times.jsonl"
    turn = conversation(DAY, [("Which port does the API use?", "The API listens on port 8000.")])
    turn[0]["message"]["timestamp"] = 1e23  # line 2
    turn[1]["message"]["timestamp"] = -1e15  # line 3
    write(rel, [header("rough-bad-times", hour=22), *turn])
    case("message time of 1e23 ms", rel, "bad timestamp", 2)
    case("message time of -1e15 ms", rel, "bad timestamp", 3)
    case("messages with impossible times kept", rel, "ingested")
    rel = "--work-rough--/2026-03-10T23-00-00-000Z_version-999.jsonl"
    write(rel, [header("rough-v999", version=999, hour=23), *conversation(DAY, [
        ("Keep the README short.", "Trimmed the README to one screen.")])])  # fmt: skip
    case("header version 999", rel, "unknown format version", 1)
    case("a version-999 session read as the latest known", rel, "ingested")
    for name, stamp in (("year-0", "0001-01-01T00:30:00.000+01:00"), ("year-10000", "9999-12-31T23:30:00.000-01:00")):
        rel = f"--work-rough--/{name}.jsonl"
        write(rel, [header(f"rough-{name}") | {"timestamp": stamp}, *conversation(DAY, [("Hi.", "Hello.")])])
        case(f"header time whose UTC falls in {name.replace('-', ' ')}", rel, "not a session file", 1, "session_files")


def main() -> None:
    shutil.rmtree(OUT, ignore_errors=True)
    SESSIONS.mkdir(parents=True)
    parts = [not_sessions, links, bad_lines, unsafe_entry_ids, cycle, unsafe_names, chat_bot, assistant_first]
    for part in [*parts, dates, bad_values, multilingual, huge_and_code]:
        part()
    (OUT / "cases.json").write_text(json.dumps(cases, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(cases)} cases, {sum(c['kind'] != 'ingested' for c in cases)} of them bad input, in {SESSIONS}")


if __name__ == "__main__":
    main()
