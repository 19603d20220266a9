"""Names that come from session files, made safe before they become ids or file names.

A session header's id, an entry id and a project path are whatever the file
says: 600 characters, `../../tmp/x`, `..`, or two paths that differ only in
punctuation (`/work/a-b`, `/work/a/b`). Every file or folder named after one
gets `safe_name` (a readable slug plus a short hash of the exact text, so
distinct inputs never share a name and nothing can climb out of its folder);
every id that goes into a document id gets `safe_id` (kept as it is when it
is already a plain, short id, as pi's UUIDs and 8-hex entry ids are).
"""

from __future__ import annotations

import hashlib
import re

# pi's session UUIDs, 8-hex entry ids, our v1 `L000012` and renamed duplicates `abc#L12` all fit.
_PLAIN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_:#.-]{0,95}")
_SLUG_CHARS = re.compile(r"[^A-Za-z0-9._-]+")
SLUG_CHARS = 48


def short_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:10]


def slug(text: str, limit: int = SLUG_CHARS) -> str:
    """The readable part: ASCII letters, digits, `._-`; no leading dots, so never `.` or `..`."""
    return _SLUG_CHARS.sub("-", text).strip("-.")[:limit].strip("-.")


def safe_name(text: str) -> str:
    """A file or folder name for `text`: `slug-hash`, distinct for distinct texts, at most 59 characters."""
    return f"{slug(text) or 'x'}-{short_hash(text)}"


def safe_id(raw: str) -> str:
    """`raw` when it is a plain id; otherwise its `safe_name` (the same input always gives the same id)."""
    return raw if _PLAIN_ID.fullmatch(raw) and ".." not in raw else safe_name(raw)
