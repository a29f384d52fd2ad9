"""RFC 3339 timestamps as the Kubernetes API writes them (`2024-05-01T10:00:00Z`, optionally
with fractional seconds: metav1.Time and MicroTime), parsed in one place for both packages."""

from __future__ import annotations

from datetime import datetime

__all__ = ["parse_rfc3339"]


def parse_rfc3339(value: object) -> datetime | None:
    """The datetime `value` names, or None when it is empty or not a timestamp (an object
    written by another client may carry anything; callers treat it as unset)."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
