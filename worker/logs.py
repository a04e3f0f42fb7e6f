"""structlog set-up, done once at process start: on stderr, UTC timestamps, readable lines
on a terminal and JSON lines otherwise.

A build worker process sets itself up as the process that started it did (`configured_level`).
"""

from __future__ import annotations

import logging
import sys

import structlog

_configured: list[str] = []
"""The level this process's logging was set up with, once it was."""


def configure_logging(level: str = "info") -> None:
    """Log to stderr: readable lines on a terminal, one JSON object per line otherwise (UTC
    timestamps either way); call once, at start-up."""
    numeric = logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            structlog.dev.ConsoleRenderer(colors=False)
            if sys.stderr.isatty()
            else structlog.processors.JSONRenderer(sort_keys=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.WriteLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    _configured[:] = [level]


def configured_level() -> str | None:
    """The level `configure_logging` set this process up with; None if it never ran."""
    return _configured[0] if _configured else None
