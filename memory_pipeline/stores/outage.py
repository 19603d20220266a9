"""A server outage is one line in a log, not one per request.

With Elasticsearch down, its client logs every retry and every failed node with a whole traceback: 4 MCP calls
wrote 3,068 lines to stderr, burying the one that matters. Every surface already says which server is down and
how to start it (`search.open.unavailable`), so the log needs only when the outage began and when it ended:
the first warning of an outage is kept (as one line, its traceback left out) and the rest dropped until the
client reports the server answering again, which is let through too.
"""

from __future__ import annotations

import logging
import threading

# The loggers of the Elasticsearch client that speak of failures (`elastic_transport.node` does not propagate).
LOGGERS = ("elastic_transport.transport", "elastic_transport.node_pool")
_BACK = "marked alive"  # elastic_transport's warning when a failed node answered a request again


class OnePerOutage(logging.Filter):
    """Lets the first failure warning of an outage through (without its traceback), then none until the server
    is back; what is below WARNING passes untouched."""

    def __init__(self) -> None:
        super().__init__()
        self._down = False
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        with self._lock:
            if _BACK in record.getMessage():
                was_down, self._down = self._down, False
                return was_down
            if self._down:
                return False
            self._down = True
        record.msg = f"{record.getMessage()} (a server is down: further failures are not logged until it is back)"
        record.args = ()
        record.exc_info = record.exc_text = None
        return True


_INSTALLED: OnePerOutage | None = None


def quiet_outages() -> OnePerOutage:
    """Installs the filter on the client's loggers, once per process (every surface calls it: idempotent)."""
    global _INSTALLED
    if _INSTALLED is None:
        _INSTALLED = OnePerOutage()
        for name in LOGGERS:
            logging.getLogger(name).addFilter(_INSTALLED)
    return _INSTALLED
