"""Reading a controller's log in tests, in either format.

`--log-format json` (the default of `jobset controller`, the chart's and config/'s) writes
one JSON object a line with tracebacks as a structured `exception` field, so no line holds
the word "Traceback"; `--log-format console` prints them as text. A test that asserts "no
traceback in the log" asks `traceback_lines`, which knows both.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["json_records", "traceback_lines"]


def _record(line: str) -> dict[str, Any] | None:
    if not line.startswith("{"):
        return None
    try:
        rec = json.loads(line)
    except ValueError:
        return None
    return rec if isinstance(rec, dict) else None


def traceback_lines(text: str) -> list[str]:
    """Lines that carry a traceback: a JSON record with an `exception` field, or printed text
    (console format, or anything written past the logger)."""
    out: list[str] = []
    for line in text.splitlines():
        rec = _record(line)
        if (rec is not None and "exception" in rec) or (rec is None and "Traceback" in line):
            out.append(line)
    return out


def json_records(text: str) -> list[dict[str, Any]]:
    """Every line of a JSON log, parsed; fails naming the first line that is not a JSON
    object (under `--log-format json` every line must be one)."""
    records: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), 1):
        rec = _record(line)
        assert rec is not None, f"line {number} is not a JSON object: {line[:500]!r}"
        records.append(rec)
    return records
