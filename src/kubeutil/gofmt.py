"""Go's formatting verbs as Kubernetes messages print values, for texts both sides must word
as the Go components do (the controller's webhook denials, the simulated API server's field
errors)."""

from __future__ import annotations

import json

__all__ = ["go_quote"]


def go_quote(s: str) -> str:
    """Go's `%q` (close enough: JSON string syntax without escaping non-ASCII)."""
    return json.dumps(s, ensure_ascii=False)
