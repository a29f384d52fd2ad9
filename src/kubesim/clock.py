"""Wall-clock helpers in the formats Kubernetes writes (RFC 3339, second precision)."""

from __future__ import annotations

import datetime as dt
import math
import time

# The last second formatted and its text: a write stamps several fields with the same
# second, and formatting a datetime costs more than the rest of the stamp.
_last: list[tuple[int, str]] = [(-1, "")]


def _format(t: float) -> str:
    stamp = dt.datetime.fromtimestamp(t, tz=dt.UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")


def now_rfc3339(t: float | None = None) -> str:
    if t is None:
        t = time.time()
    frac, whole = math.modf(t)
    # `fromtimestamp` rounds to the microsecond (half to even), which can carry into the
    # next second; such instants and negative ones take the plain path.
    if t < 0 or round(frac * 1e6) >= 1_000_000:
        return _format(t)
    second = int(whole)
    last = _last[0]  # one read: another thread may replace the pair meanwhile
    if last[0] == second:
        return last[1]
    text = _format(second)
    _last[0] = (second, text)
    return text


def parse_rfc3339(s: str) -> float:
    return dt.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
