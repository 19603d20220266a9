"""The CLI's way to ask the running service: a command that reads memory asks it when there is one over the
same memory (about 0.3 s, where loading the search in-process takes seconds). The standard library's HTTP
client only: importing httpx alone would cost a quarter of the second this path has."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request

from memory_pipeline.ports import SERVICE_PORT

# MEMORY_SERVICE_URL names it, as for the pi extension.
SERVICE_URL = f"http://127.0.0.1:{SERVICE_PORT}"
DEGRADED_HEADER = "X-Memory-Degraded"  # why ranking fell back to BM25, or how the question was cut


class ServiceRefused(Exception):
    """The service refused a read, or a server behind it is down: the reason, as it said it."""


class Answer:
    """A read's answer from the service: its text, its JSON, its headers."""

    def __init__(self, text: str, headers: dict[str, str]) -> None:
        self.text, self.headers = text, headers

    def json(self) -> dict:
        return json.loads(self.text)


def running_service(memory_id: str) -> str | None:
    """The base URL of the running service when it serves the memory `memory_id`; None otherwise (the command
    then searches in-process)."""
    base = os.environ.get("MEMORY_SERVICE_URL", SERVICE_URL).rstrip("/")
    try:
        with urllib.request.urlopen(f"{base}/health", timeout=2) as answer:  # noqa: S310 - a local http URL
            same = json.loads(answer.read()).get("memory") == memory_id
    except (OSError, ValueError):  # refused, timed out, not JSON: no service to ask
        return None
    return base if same else None


def tell(base: str, path: str, body: dict[str, object], token: str) -> dict[str, object]:
    """A write to the service (JSON, with its token); its JSON answer. Raises `ServiceRefused` with its reason."""
    request = urllib.request.Request(  # noqa: S310 - a local http URL
        f"{base}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "X-Memory-Token": token},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - a local http URL
            return json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as exc:
        raise ServiceRefused(f"memory service: {exc.read().decode(errors='replace')}") from None


def ask(base: str, path: str, params: dict[str, object]) -> Answer:
    """The service's answer to a read. Raises `ServiceRefused` with its reason."""
    sent = [
        (k, str(item))
        for k, v in params.items()
        if v not in (None, ())
        for item in (v if isinstance(v, tuple | list) else [v])
    ]
    url = f"{base}{path}?{urllib.parse.urlencode(sent)}"
    try:
        with urllib.request.urlopen(url, timeout=120) as answer:  # noqa: S310 - a local http URL
            return Answer(answer.read().decode(), dict(answer.headers))
    except urllib.error.HTTPError as exc:
        body = exc.read().decode(errors="replace")
        try:
            detail = json.loads(body).get("detail", body)
        except ValueError:
            detail = body
        raise ServiceRefused(f"memory service: {detail}") from None
