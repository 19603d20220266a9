"""What the chat and embedding clients share: an OpenAI-compatible llama-server over httpx.

Transient failures (connection errors, timeouts, 5xx, 429) are retried with
exponential backoff; anything else is an error at once. After the last retry the
error names the URL, so a run never fails with a bare "connection refused".
"""

from __future__ import annotations

import time
from typing import Any

import httpx


class ServerError(RuntimeError):
    """The server could not be reached or answered with an error, after retries."""


class OpenAICompatibleClient:
    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        timeout: float = 120.0,
        retries: int = 3,
        backoff: float = 0.5,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._configured_model = model
        self._retries = retries
        self._backoff = backoff
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout, transport=transport)

    def close(self) -> None:
        self._http.close()

    def __enter__(self):  # noqa: ANN204 - Self needs 3.11 typing_extensions gymnastics
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(self, method: str, path: str, json: Any = None) -> dict[str, Any]:
        """One call, retried on transient failures; the parsed JSON answer."""
        last: str = ""
        for attempt in range(self._retries + 1):
            try:
                response = self._http.request(method, path, json=json)
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code < 400:
                    return response.json()
                last = f"HTTP {response.status_code}: {response.text[:300]}"
                if response.status_code < 500 and response.status_code != 429:
                    raise ServerError(f"{self.base_url}{path} answered {last}")
            if attempt < self._retries:
                time.sleep(self._backoff * 2**attempt)
        raise ServerError(f"{self.base_url}{path} failed after {self._retries + 1} attempts: {last}")

    def health(self) -> str:
        """'ok' when the model is loaded; llama-server answers 503 while loading."""
        try:
            response = self._http.get("/health", timeout=5)
        except httpx.TransportError as exc:
            return f"unreachable ({type(exc).__name__})"
        if response.status_code == 200:
            return "ok"
        return f"HTTP {response.status_code}"

    def model_id(self) -> str:
        """The configured model id, or the first one the server lists (never hard-coded)."""
        if self._configured_model:
            return self._configured_model
        models = self.request("GET", "/v1/models").get("data") or []
        if not models:
            raise ServerError(f"{self.base_url}/v1/models lists no model")
        return str(models[0]["id"])

    def server_version(self) -> str:
        """llama-server's build, when the server is one (other servers: 'unknown')."""
        try:
            props = self.request("GET", "/props")
        except ServerError:
            return "unknown"
        return str(props.get("build_info") or "unknown")
