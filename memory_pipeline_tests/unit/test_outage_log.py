"""A server outage is one line of log, not one per request (stores/outage.py)."""

from __future__ import annotations

import logging

import pytest

from memory_pipeline.stores.outage import LOGGERS, OnePerOutage, quiet_outages


def _failure(logger: logging.Logger, n: int) -> None:
    try:
        raise ConnectionRefusedError(111, "Connection refused")
    except ConnectionRefusedError:
        logger.warning("Retrying request after failure (attempt %d of 3)", n, exc_info=True)


def test_one_line_per_outage_and_one_when_it_is_back(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("test.outage")
    logger.addFilter(OnePerOutage())
    with caplog.at_level(logging.INFO, logger="test.outage"):
        for n in range(50):
            _failure(logger, n)
        logger.info("POST http://127.0.0.1:9200/_search [status:N/A]")  # below WARNING: untouched
        logger.warning("Node %r has been marked alive after a successful request", "es")
        logger.warning("Node %r has been marked alive after a successful request", "es")  # not down: dropped
        _failure(logger, 0)  # a new outage: one line again
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.getMessage()[:41] for r in warnings] == [
        "Retrying request after failure (attempt 0",
        "Node 'es' has been marked alive after a s",
        "Retrying request after failure (attempt 0",
    ]
    assert all(r.exc_info is None for r in warnings) and "not logged until it is back" in warnings[0].getMessage()
    assert len(caplog.text.splitlines()) == 4  # no traceback lines


def test_installed_once_on_the_clients_loggers() -> None:
    first, second = quiet_outages(), quiet_outages()
    assert first is second
    for name in LOGGERS:
        assert logging.getLogger(name).filters.count(first) == 1
