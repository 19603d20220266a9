"""The user's own words, without the envelope a chat bridge wraps them in.

pi embedded in a chat bot (OpenClaw, pi's `mom` Slack bot, Telegram bridges)
receives each message with hundreds of characters of metadata first: labelled
JSON blocks ("Conversation info (untrusted metadata):" + a fenced object),
bracketed channel headers (`[Telegram Alice (@alice) id:42 +2m 2026-01-31 10:00 UTC]`),
`System: [timestamp] …` lines, `[message_id: 1234]` markers, `Sender: …` header
lines, OpenClaw's `[media attached: …]` markers and the reply hint after them,
a `User text:` label, a screenshot pasted as its temporary file's path,
queued-message batches (`[Queued messages while agent was busy]`, each `Queued
#N` peeled alone). Clipped to a few hundred characters, such a message says
nothing. This peels those layers off the start (and drops message-id markers
anywhere); if nothing would be left, the text is kept as it was.

Some messages in the user's role are not the person's words at all: a cron
job's task prompt (`[cron:<id> <name>] …`), a sub-agent's preamble
(`[Subagent Context] … [Subagent Task]: …`), a system notice (`[System
Message] …`), a heartbeat or post-compaction prompt. `automation_of` names
them, so they are never quoted as the user's words or proposed as their rule.
Formats from OpenClaw's transcripts as public repositories hold them (2026).
"""

from __future__ import annotations

import json
import re

_FENCED = re.compile(r"\A```[a-zA-Z]*\n(?P<body>.*?)\n```[ \t]*(?:\n|\Z)", re.S)
_LABEL = re.compile(r"\A[A-Z][\w .'-]{0,60}(?:\([^)\n]{0,60}\))?:[ \t]*\n")
_CHANNELS = (
    "telegram|slack|discord|whatsapp|signal|imessage|matrix|teams|line|wechat|weixin|sms|email|irc|mattermost|"
    "googlechat|zalo|webchat|feishu|lark|dingtalk|qq|qqbot|wecom"
)
_STAMP = r"\d{4}-\d{2}-\d{2}[ T]\d{1,2}:\d{2}"
# A bracket is an envelope when it names a channel, an id or a date and time; `[User sent a photo]` is not.
# After a channel bracket, the speaker's name on the same line (`[Feishu … GMT+8] user: …`) is envelope too.
_BRACKET = re.compile(
    rf"\A\[(?=[^\]\n]*(?:\b(?:{_CHANNELS})\b|\bid:|{_STAMP}))[^\]\n]{{1,300}}\][ \t:]*"
    r"(?:(?:user|ou_\w+|[\w.\-]*[@\d][\w@.\-]*):[ \t]+(?=\S))?",
    re.I,
)
# OpenClaw's attachment markers and the hint it puts after them (its words, not the person's).
_MEDIA = re.compile(
    r"\A\[(?:media attached(?: \d+/\d+)?:[^\]\n]*|Image|image|Audio|Voice|Video|Document|Sticker|Attached:[^\]\n]*)\]"
    r"[ \t]*(?:\n|(?=\S)|\Z)"
)
# A Telegram bridge's voice note and reply (`<media:audio> [Replying to Flux id:2313] … [/Replying] Transcript: …`):
# the quoted message is the one replied to, often the bot's own; the person's words are the transcript after it.
_TRANSCRIPT = r"(?:\s*Transcript:[ \t]*(?=\S))?"
_MEDIA_TAG = re.compile(rf"\A<media:\w+>{_TRANSCRIPT}[ \t]*(?:\n|(?=\S)|\Z)")
_REPLYING = re.compile(
    rf"\A\[Replying to [^\]\n]{{1,200}}\].{{0,20000}}?\[/Replying\]{_TRANSCRIPT}[ \t]*(?:\n|(?=\S)|\Z)", re.S
)
_REPLY_HINT = re.compile(
    r"\ATo send an image back, prefer the message tool[^\n]*?Keep caption in the text body\.[ \t]*(?:\n|\Z)"
)
_USER_TEXT = re.compile(r"\AUser text:[ \t]*")
# A screenshot pasted into a terminal arrives as its temporary file's path, alone on the first line
# (`'/var/folders/…/Screenshot 2025-11-21 at 01.27.21.png'`): the file is gone; the words after it are the message.
_IMAGE = r"\.(?:png|jpe?g|gif|webp|heic|bmp|tiff?)"
_PASTED_IMAGE = re.compile(
    rf"\A(?:'[^'\n]{{1,400}}{_IMAGE}'|\"[^\"\n]{{1,400}}{_IMAGE}\"|[^\s'\"]{{1,400}}{_IMAGE})[ \t]*(?:\n|\Z)", re.I
)
_QUEUED = re.compile(r"\A\[Queued messages while agent was busy\][ \t]*\n")
_QUEUED_ITEM = re.compile(r"\n*---\nQueued #\d+\n")
_SYSTEM_LINE = re.compile(r"\ASystem:[ \t]*\[[^\]\n]*\][^\n]*(?:\n|\Z)")
_JSON_LINE = re.compile(r"\A(\{[^\n]*\})[ \t]*(?:\n|\Z)")
_HEADER_KEYS = (
    "sender|sender_id|from|to|channel|channel_id|chat|chat_id|conversation|conversation_id|timestamp|time|date|"
    "message_id|msg_id|user|user_id|username|thread|thread_id|platform|source|reply_to|guild|server|account"
)
_HEADER_LINE = re.compile(rf"\A(?:{_HEADER_KEYS})[ \t]*[:=][^\n]*(?:\n|\Z)", re.I)
_MESSAGE_ID = re.compile(r"^[ \t]*\[message_id:[^\]\n]*\][ \t]*\n?", re.M | re.I)


def _is_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _peel(text: str) -> str | None:
    """`text` without its first envelope layer, or None when it does not start with one."""
    label = _LABEL.match(text)
    after_label = text[label.end() :] if label else text
    block = _FENCED.match(after_label)
    if block and _is_object(block.group("body")):
        return after_label[block.end() :]
    # The reply block before the bracket: its opening names an id, as a channel header does.
    for pattern in (_REPLYING, _BRACKET, _MEDIA, _MEDIA_TAG, _REPLY_HINT, _USER_TEXT, _SYSTEM_LINE, _HEADER_LINE):
        match = pattern.match(text)
        if match:
            return text[match.end() :]
    match = _PASTED_IMAGE.match(text)
    if match:
        return text[match.end() :]
    line = _JSON_LINE.match(text)
    if line and _is_object(line.group(1)):
        return text[line.end() :]
    return None


def strip_envelope(text: str) -> str:
    """The message without the leading metadata layers a chat bridge adds (see the module's doc)."""
    queued = _QUEUED.match(text.lstrip())
    if queued:  # a batch of messages sent while the agent was busy: each peeled alone, their words kept in order
        items = [_strip_one(item) for item in _QUEUED_ITEM.split(text.lstrip()[queued.end() :])]
        said = "\n\n".join(item for item in items if item.strip())
        return said if said.strip() else text
    return _strip_one(text)


def _strip_one(text: str) -> str:
    rest = _MESSAGE_ID.sub("", text).lstrip()
    for _ in range(20):  # a handful of layers in practice; bounded whatever the input
        peeled = _peel(rest)
        if peeled is None:
            break
        rest = peeled.lstrip()
    return rest if rest.strip() else text


# A weekday and date-time prefix (`[Wed 2026-02-18 16:43 GMT+1]`) before an automation marker.
_DATED = r"(?:\[[A-Za-z]{3} \d{4}-\d{2}-\d{2}[^\]\n]*\][ \t]*)?"
_AUTOMATION = (
    ("scheduled task", re.compile(_DATED + r"\[cron:[^\]\n]+\]")),
    ("sub-agent task", re.compile(_DATED + r"\[Subagent (?:Context|Task)\]", re.I)),
    (
        "system message",
        re.compile(_DATED + r"(?:\[System Message\]|System \(untrusted\):|\[Post-compaction context refresh\])"),
    ),
    # OpenClaw's prompt after /new or /reset, and Claude Code's built-in /init prompt: the agent's words, sent in the
    # user role (real sessions of bench/labels/knowledge_turns_b.json's tuning half, KNOWLEDGE_SOURCES_B.md).
    ("session startup", re.compile(r"A new session was started via /new or /reset\.")),
    ("agent's built-in prompt", re.compile(r"Please analyze this codebase and create a CLAUDE\.md file")),
)
_SUBAGENT_TASK = re.compile(r"\[Subagent Task\]:?[ \t]*", re.I)
# OpenClaw's heartbeat prompt is found anywhere in the message: the gateway puts its queued system events
# (`System: [time] Exec completed …`, on one line or many) before it, and what the person typed meanwhile after it.
_HEARTBEAT = re.compile(r"Read HEARTBEAT\.md if it exists")


def automation_of(text: str) -> str | None:
    """What wrote a user-role message that is not the person's words (`scheduled task`, `sub-agent task`,
    `system message`, `heartbeat`, `session startup`, `agent's built-in prompt`), or None when it is theirs."""
    start = _MESSAGE_ID.sub("", text).lstrip()
    for name, pattern in _AUTOMATION:
        if pattern.match(start):
            return name
    return "heartbeat" if _HEARTBEAT.search(start) else None


def automation_task(text: str) -> str:
    """The task an automation message carries, without its wrapper: a sub-agent's `[Subagent Task]` part, a
    cron prompt without its `[cron:…]` tag."""
    start = _MESSAGE_ID.sub("", text).lstrip()
    task = _SUBAGENT_TASK.split(start, maxsplit=1)
    if len(task) == 2:
        return task[1].strip()
    return re.sub(_DATED + r"\[cron:[^\]\n]+\][ \t]*", "", start, count=1).strip()
