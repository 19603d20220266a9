"""`bench needs --serve`: deliveries through the memory service's own `POST /api/v1/recall`, the app
`memory-pipeline serve` runs (its routes, its recall, its injection ledger deciding which lines a session was
not given yet), served by uvicorn from the bench's process on a free 127.0.0.1 port over the bench's settings
and the running Elasticsearch, each event an HTTP request timed from the client's side.

The one thing the bench decides for the service is which store it searches while a session is replayed: the
search the row gives that replay (`AsOf`: the store as of the session's day, as the in-process rows have it,
so the history is ingested once; or, with `--day-by-day`, the live store a day at a time). A `memory-pipeline
serve` subprocess could only search the live store, which holds the whole history after one ingestion.
"""

from __future__ import annotations

import threading
import time
from contextlib import nullcontext
from pathlib import Path

import uvicorn

from memory_pipeline.search.engine import MemorySearch
from memory_pipeline.service.app import create_app
from memory_pipeline.settings import Settings
from testkit.needs import Delivery, service
from testkit.servers import free_port


class _Current:
    """The service's search: whichever the replay under way was given (set before its first request)."""

    def __init__(self, owner: ServedHere) -> None:
        self._owner = owner

    def __getattr__(self, name: str) -> object:
        if self._owner.search is None:
            raise RuntimeError("no replay under way: the bench's service has no search to answer from")
        return getattr(self._owner.search, name)


class ServedHere:
    """A `DeliveryMaker` through the service in this process: the first call (and a call with another state
    folder: another row's settings) starts it over that call's settings; every call's search is the one the
    service answers from until the next call. `close` stops it."""

    def __init__(self) -> None:
        self.search: MemorySearch | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._state: Path | None = None
        self._url, self._token = "", ""

    def __call__(self, search: MemorySearch, settings: Settings) -> Delivery:
        if self._state != settings.memory_pipeline_state_dir:
            self.close()
            self._start(settings)
        self.search = search
        return service(self._url, self._token)(search, settings)

    def _start(self, settings: Settings) -> None:
        app = create_app(settings, open_search_for=lambda _: nullcontext(_Current(self)))  # type: ignore[arg-type,return-value]
        port = free_port()
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        thread = threading.Thread(target=server.run, name="needs-service", daemon=True)
        thread.start()
        deadline = time.monotonic() + 60
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise SystemExit(f"--serve: the memory service did not start on 127.0.0.1:{port}")
            time.sleep(0.05)
        self._server, self._thread, self._state = server, thread, settings.memory_pipeline_state_dir
        self._url, self._token = f"http://127.0.0.1:{port}", settings.service_token()

    def close(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(30)
        self._server = self._thread = self._state = None
