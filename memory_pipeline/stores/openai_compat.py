"""What the chat and embedding clients share: an OpenAI-compatible llama-server over httpx.

Transient failures (connection errors, timeouts, 5xx, 429) are retried with
exponential backoff; after the last retry `ServerError` names the URL, so a run
never fails with a bare "connection refused". A request the server refuses
(another 4xx: an input over the context, a rejected text) is `RejectedRequest`
at once: the failure of that one item, never of the run.

Every text is measured in the server's own tokens before it is sent: llama-server
counts them (`/tokenize`) and says its context (`/props`); for any other server
the UTF-8 length in bytes is the bound (no tokenizer makes a token of less than
a byte), so what is sent always fits.
"""

from __future__ import annotations

import time
from typing import Any

import httpx


class ServerError(RuntimeError):
    """The server could not be reached or answered with an error, after retries."""


class TimedOut(ServerError):
    """The server took the request but gave no answer within the read timeout: that item's failure (a slow or
    busy server), not the run's; sending the same prompt again at once would only wait as long again."""


class RejectedRequest(ServerError):
    """The server answered and refused this request (4xx other than 429): an item's failure, not the run's."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class OpenAICompatibleClient:
    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        api_key: str | None = None,
        timeout: float = 120.0,
        retries: int = 3,
        backoff: float = 0.5,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._configured_model = model
        self._retries = retries
        self._backoff = backoff
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout, transport=transport, headers=headers)
        self._can_tokenize: bool | None = None  # learnt on the first count
        self._props: dict[str, Any] | None = None
        self._listed_model: str | None = None

    def close(self) -> None:
        self._http.close()

    def __enter__(self):  # noqa: ANN204 - Self needs 3.11 typing_extensions gymnastics
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(
        self, method: str, path: str, json: Any = None, *, read_timeout: float | None = None, slow_fails: bool = False
    ) -> dict[str, Any]:
        """One call, retried on transient failures; the parsed JSON answer. `read_timeout` replaces the
        client's for this call; with `slow_fails`, a read timeout is `TimedOut` at once (not retried)."""
        last: str = ""
        timeout = (
            httpx.Timeout(self._http.timeout.connect, read=read_timeout) if read_timeout else httpx.USE_CLIENT_DEFAULT
        )
        for attempt in range(self._retries + 1):
            try:
                response = self._http.request(method, path, json=json, timeout=timeout)
            except httpx.ReadTimeout as exc:
                if slow_fails:
                    seconds = read_timeout or self._http.timeout.read
                    raise TimedOut(f"{self.base_url}{path} gave no answer within {seconds:.0f}s") from exc
                last = f"{type(exc).__name__}: {exc}"
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code < 400:
                    return response.json()
                last = f"HTTP {response.status_code}: {response.text[:300]}"
                if response.status_code < 500 and response.status_code != 429:
                    raise RejectedRequest(f"{self.base_url}{path} answered {last}", response.status_code)
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
        """The configured model id, or the first one the server lists (never hard-coded), asked once per
        client: a query's embedding is one request, not three."""
        if self._configured_model:
            return self._configured_model
        if self._listed_model is None:
            models = self.request("GET", "/v1/models").get("data") or []
            if not models:
                raise ServerError(f"{self.base_url}/v1/models lists no model")
            self._listed_model = str(models[0]["id"])
        return self._listed_model

    def props(self) -> dict[str, Any]:
        """llama-server's `/props` (empty for servers without it), asked once per client."""
        if self._props is None:
            try:
                self._props = self.request("GET", "/props")
            except RejectedRequest:
                self._props = {}
        return self._props

    def server_version(self) -> str:
        """llama-server's build, when the server is one (other servers: 'unknown')."""
        try:
            return str(self.props().get("build_info") or "unknown")
        except ServerError:
            return "unknown"

    def context_size(self) -> int | None:
        """Tokens one request may hold: llama-server's per-slot context (`/props`), None when not said."""
        n_ctx = (self.props().get("default_generation_settings") or {}).get("n_ctx")
        return int(n_ctx) if n_ctx else None

    def count_tokens(self, text: str, *, add_special: bool = False) -> int:
        """`text` in the server's tokens (`add_special`: with the BOS/CLS/SEP the server adds to an input);
        without a tokenizer endpoint, its UTF-8 length in bytes (plus 2), an upper bound for any tokenizer."""
        if self._can_tokenize is not False:
            try:
                answer = self.request("POST", "/tokenize", json={"content": text, "add_special": add_special})
            except RejectedRequest:
                self._can_tokenize = False
            else:
                if isinstance(answer.get("tokens"), list):
                    self._can_tokenize = True
                    return len(answer["tokens"])
                self._can_tokenize = False  # answered, but not as llama-server does: count bytes
        return len(text.encode()) + (2 if add_special else 0)

    def fit(self, text: str, limit: int, *, add_special: bool = False) -> tuple[str, bool]:
        """`text`, cut at the end to at most `limit` tokens; and whether it was cut. Short texts cost no
        request: a text of no more bytes than `limit` (less the specials) fits any tokenizer."""
        if len(text.encode()) + (2 if add_special else 0) <= limit:
            return text, False
        count = self.count_tokens(text, add_special=add_special)
        if count <= limit:
            return text, False
        if self._can_tokenize is False:
            budget = max(limit - (2 if add_special else 0), 0)
            return text.encode()[:budget].decode(errors="ignore"), True
        while count > limit and text:
            text = text[: max(int(len(text) * limit / count * 0.95), 0)]
            count = self.count_tokens(text, add_special=add_special)
        return text, True
