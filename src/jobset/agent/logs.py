"""The agent's structured logs: JSON (default) or console lines on stderr, as the
controller writes them (`jobset.runtime.logging`). Configured here rather than through
`jobset.runtime.logging` because importing any module of `jobset.runtime` loads the whole
runtime package (its client among it), which the agent's start-up should not pay
(`apiclient.py`)."""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog

__all__ = ["configure", "logger"]


def configure(fmt: str = "json", level: str = "INFO") -> None:
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r}")
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(
            colors=False, exception_formatter=structlog.dev.plain_traceback
        )
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=False,
    )


def logger(**context: Any) -> Any:
    return structlog.get_logger("in-place-restart-agent").bind(
        logger="in-place-restart-agent", **context
    )
