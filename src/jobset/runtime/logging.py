"""structlog configuration: JSON lines for clusters (log collectors parse them), console for
people. Every runtime module logs through `get_logger(component)` with key=value context
(controller, key, resource), the way controller-runtime's logr loggers carry it.

One writer for the whole process: structlog's events and the standard library's records
(aiohttp, asyncio, kubernetes_asyncio, `warnings` through `logging.captureWarnings`) all
end in one `logging.StreamHandler` whose formatter is structlog's `ProcessorFormatter`. So
under `--log-format json` every line is one JSON object, whoever logged it, and lines from
threads never interleave (one handler, one lock):

- structlog events: context variables, `level`, `timestamp`, then handed to the stdlib
  logger `jobset` (level `--log-level`);
- stdlib records: the same fields plus `logger` (the record's logger name); libraries are
  heard from WARNING up (their INFO is per-request noise: aiohttp's access log);
- tracebacks as structured fields (`exception`: a list of {exc_type, exc_value, frames}),
  structlog's `dict_tracebacks` without frame locals (they hold request bodies and tokens);
- orjson as the serializer;
- uncaught exceptions (the main thread and other threads) logged as `critical` records, not
  printed as a bare traceback;
- a command's status lines (`jobset dev ready: ...`) are written whatever the level, on
  stdout, and as JSON objects under json (`status_line`).
"""

from __future__ import annotations

import logging
import sys
import threading
from types import TracebackType
from typing import Any, Literal, TextIO

import orjson
import structlog
from structlog.tracebacks import ExceptionDictTransformer

__all__ = ["OWN_LOGGER", "LogFormat", "configure_logging", "get_logger", "status_line"]

LogFormat = Literal["json", "console"]

# The stdlib logger every structlog event is handed to (its level is --log-level; the root
# logger's, which the libraries inherit, is at least WARNING).
OWN_LOGGER = "jobset"

# Structured tracebacks without local variables: structlog's `dict_tracebacks` shows them by
# default, and a reconcile or webhook frame's locals hold object bodies and tokens.
_dict_tracebacks = structlog.processors.ExceptionRenderer(
    ExceptionDictTransformer(show_locals=False)
)


# Keys that are not strings (a dict of ints in an event) are written as strings, as
# json.dumps does, instead of failing the line.
_ORJSON_OPTIONS = orjson.OPT_NON_STR_KEYS
_timestamper = structlog.processors.TimeStamper(fmt="iso", utc=True)


def _orjson_dumps(obj: Any, **kw: Any) -> str:
    """structlog's JSONRenderer serializer: orjson, as a str for the stdlib formatter.

    A line that orjson refuses (an int beyond 64 bits: `default` is not consulted for those)
    is not lost: each value it refuses is logged as its repr.
    """
    default = kw.get("default")
    try:
        return orjson.dumps(obj, default=default, option=_ORJSON_OPTIONS).decode()
    except TypeError:  # orjson.JSONEncodeError
        safe = {str(k): _value_or_repr(v, default) for k, v in obj.items()}
        return orjson.dumps(safe, default=default, option=_ORJSON_OPTIONS).decode()


def _value_or_repr(value: Any, default: Any) -> Any:
    try:
        orjson.dumps(value, default=default, option=_ORJSON_OPTIONS)
    except TypeError:
        return repr(value)
    return value


def _formatter(fmt: LogFormat) -> structlog.stdlib.ProcessorFormatter:
    tail: list[Any]
    if fmt == "json":
        tail = [_dict_tracebacks, structlog.processors.JSONRenderer(_orjson_dumps)]
    elif fmt == "console":
        # Plain tracebacks: the default (rich, when installed) prints every frame's local
        # variables, which hold request bodies, tokens and keys.
        tail = [
            structlog.dev.ConsoleRenderer(
                colors=False, exception_formatter=structlog.dev.plain_traceback
            )
        ]
    else:
        raise ValueError(f"--log-format must be json or console, not {fmt!r}")
    return structlog.stdlib.ProcessorFormatter(
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *tail],
        foreign_pre_chain=[
            structlog.contextvars.merge_contextvars,
            structlog.stdlib.add_log_level,
            structlog.stdlib.add_logger_name,
            _timestamper,
        ],
    )


def configure_logging(
    fmt: LogFormat = "json", level: str | int = "INFO", stream: TextIO | None = None
) -> None:
    """Configure structlog and the stdlib root logger the libraries use, once per process
    (again to change them: the previous handlers are replaced)."""
    numeric = logging.getLevelName(level.upper()) if isinstance(level, str) else level
    if not isinstance(numeric, int):
        raise ValueError(
            f"--log-level must be DEBUG, INFO, WARNING, ERROR or CRITICAL, not {level!r}"
        )
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(_formatter(fmt))
    root = logging.getLogger()
    for old in root.handlers[:]:
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(max(numeric, logging.WARNING))
    own = logging.getLogger(OWN_LOGGER)
    own.setLevel(numeric)
    # warnings.warn(...) as `py.warnings` records. Off first: captureWarnings(True) does
    # nothing when it was on once, even if something restored `warnings.showwarning` since.
    logging.captureWarnings(False)
    logging.captureWarnings(True)

    def own_logger(*_args: Any) -> logging.Logger:
        return own

    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            _timestamper,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=own_logger,
        cache_logger_on_first_use=False,
    )
    _install_excepthooks(fmt == "json")


def _log_uncaught(
    exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None, where: str
) -> None:
    get_logger("python").critical(f"uncaught exception in {where}", exc_info=(exc_type, exc, tb))


def _excepthook(
    exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
) -> None:
    if issubclass(exc_type, KeyboardInterrupt):
        sys.__excepthook__(exc_type, exc, tb)
        return
    _log_uncaught(exc_type, exc, tb, "the main thread")


def _threading_excepthook(args: threading.ExceptHookArgs) -> None:
    if args.exc_value is None or issubclass(args.exc_type, SystemExit):
        return
    name = args.thread.name if args.thread is not None else "a thread"
    _log_uncaught(args.exc_type, args.exc_value, args.exc_traceback, f"thread {name}")


def _install_excepthooks(json_lines: bool) -> None:
    """Under JSON, an uncaught exception is a log record too (Python prints a bare traceback
    otherwise); under console the interpreter's own hooks print it for a person."""
    if json_lines:
        sys.excepthook = _excepthook
        threading.excepthook = _threading_excepthook
    else:
        if sys.excepthook is _excepthook:
            sys.excepthook = sys.__excepthook__
        if threading.excepthook is _threading_excepthook:
            threading.excepthook = threading.__excepthook__


def status_line(
    fmt: LogFormat,
    message: str,
    *,
    level: str = "info",
    stream: TextIO | None = None,
    **fields: Any,
) -> None:
    """A command's status line (`jobset dev ready: ...`), on stdout unless told otherwise and
    whatever the log level (scripts wait for it): the text as it is for a person, a record
    with that text as its `event` under json, where every line must be JSON."""
    if fmt == "json":
        record = {"event": message, "level": level, "logger": "cli", **fields}
        line = _orjson_dumps(_timestamper(None, level, record))
    else:
        line = message
    print(line, file=stream or sys.stdout, flush=True)


def get_logger(component: str, /, **context: Any) -> Any:
    """A bound logger for one runtime component (`reflector`, `controller`, ...)."""
    return structlog.get_logger(component).bind(logger=component, **context)
