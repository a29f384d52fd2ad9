"""Wall-clock helpers in the formats Kubernetes writes (RFC 3339, second precision)."""

from __future__ import annotations

import datetime as dt
import time


def now_rfc3339(t: float | None = None) -> str:
    stamp = dt.datetime.fromtimestamp(time.time() if t is None else t, tz=dt.UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(s: str) -> float:
    return dt.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
