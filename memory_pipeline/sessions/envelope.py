"""The user's own words, without the envelope a chat bridge wraps them in.

pi embedded in a chat bot (OpenClaw, pi's `mom` Slack bot, Telegram bridges)
receives each message with hundreds of characters of metadata first: labelled
JSON blocks ("Conversation info (untrusted metadata):" + a fenced object),
bracketed channel headers (`[Telegram Alice (@alice) id:42 +2m 2026-01-31 10:00 UTC]`),
`System: [timestamp] …` lines, `[message_id: 1234]` markers, `Sender: …` header
lines. Clipped to a few hundred characters, such a message says nothing. This
peels those layers off the start (and drops message-id markers anywhere); if
nothing would be left, the text is kept as it was.
"""

from __future__ import annotations

import json
import re

_FENCED = re.compile(r"\A```[a-zA-Z]*\n(?P<body>.*?)\n```[ \t]*(?:\n|\Z)", re.S)
_LABEL = re.compile(r"\A[A-Z][\w .'-]{0,60}(?:\([^)\n]{0,60}\))?:[ \t]*\n")
_CHANNELS = (
    "telegram|slack|discord|whatsapp|signal|imessage|matrix|teams|line|wechat|sms|email|irc|mattermost|"
    "googlechat|zalo|webchat"
)
_STAMP = r"\d{4}-\d{2}-\d{2}[ T]\d{1,2}:\d{2}"
# A bracket is an envelope when it names a channel, an id or a date and time; `[User sent a photo]` is not.
_BRACKET = re.compile(rf"\A\[(?=[^\]\n]*(?:\b(?:{_CHANNELS})\b|\bid:|{_STAMP}))[^\]\n]{{1,300}}\][ \t:]*", re.I)
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
    for pattern in (_BRACKET, _SYSTEM_LINE, _HEADER_LINE):
        match = pattern.match(text)
        if match:
            return text[match.end() :]
    line = _JSON_LINE.match(text)
    if line and _is_object(line.group(1)):
        return text[line.end() :]
    return None


def strip_envelope(text: str) -> str:
    """The message without the leading metadata layers a chat bridge adds (see the module's doc)."""
    rest = _MESSAGE_ID.sub("", text).lstrip()
    for _ in range(20):  # a handful of layers in practice; bounded whatever the input
        peeled = _peel(rest)
        if peeled is None:
            break
        rest = peeled.lstrip()
    return rest if rest.strip() else text
