"""structlog configuration: JSON lines for clusters (log collectors parse them), console for
people. Every runtime module logs through `get_logger(component)` with key=value context
(controller, key, resource), the way controller-runtime's logr loggers carry it.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, Literal, TextIO

import structlog

__all__ = ["LogFormat", "configure_logging", "get_logger"]

LogFormat = Literal["json", "console"]


def configure_logging(
    fmt: LogFormat = "json", level: str | int = "INFO", stream: TextIO | None = None
) -> None:
    """Configure structlog (and the stdlib root logger libraries use) once per process."""
    numeric = logging.getLevelName(level.upper()) if isinstance(level, str) else level
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r}")
    out = stream or sys.stderr
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: Any
    if fmt == "json":
        shared.append(structlog.processors.format_exc_info)
        renderer = structlog.processors.JSONRenderer()
    elif fmt == "console":
        # Plain tracebacks: the default (rich, when installed) prints every frame's local
        # variables, which hold request bodies, tokens and keys.
        renderer = structlog.dev.ConsoleRenderer(
            colors=False, exception_formatter=structlog.dev.plain_traceback
        )
    else:
        raise ValueError(f"--log-format must be json or console, not {fmt!r}")
    structlog.configure(
        processors=[*shared, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(out),
        cache_logger_on_first_use=False,
    )
    logging.basicConfig(stream=out, level=max(numeric, logging.WARNING), force=True)


def get_logger(component: str, /, **context: Any) -> Any:
    """A bound logger for one runtime component (`reflector`, `controller`, ...)."""
    return structlog.get_logger(component).bind(logger=component, **context)
