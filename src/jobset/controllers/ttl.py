"""ttlSecondsAfterFinished: delete a finished JobSet once its TTL after finishing elapsed.

The finish time is the lastTransitionTime of the True `Completed` or `Failed` condition.
Until the TTL expires the JobSet is requeued for exactly the time left; once expired it is
deleted with foreground propagation (children first). A finished JobSet without a usable
finish time is left alone (upstream returns an error there; retrying cannot fix it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from jobset.api import constants as c
from kubeutil.rfc3339 import parse_rfc3339

__all__ = ["TtlDecision", "finish_time", "ttl_decision"]


@dataclass(frozen=True, slots=True)
class TtlDecision:
    """Delete now, or look again after `requeue_after` seconds (None: nothing to do)."""

    delete: bool = False
    requeue_after: float | None = None


def finish_time(js: Mapping[str, Any]) -> datetime | None:
    for cond in (js.get("status") or {}).get("conditions") or []:
        if cond.get("type") in (c.CONDITION_COMPLETED, c.CONDITION_FAILED) and (
            cond.get("status") == "True"
        ):
            return parse_rfc3339(cond.get("lastTransitionTime"))
    return None


def ttl_decision(js: Mapping[str, Any], now: datetime) -> TtlDecision:
    ttl = (js.get("spec") or {}).get("ttlSecondsAfterFinished")
    if ttl is None or (js.get("metadata") or {}).get("deletionTimestamp"):
        return TtlDecision()
    finished = finish_time(js)
    if finished is None:
        return TtlDecision()
    remaining = finished.timestamp() + int(ttl) - now.timestamp()
    if remaining <= 0:
        return TtlDecision(delete=True)
    return TtlDecision(requeue_after=remaining)
