"""Startup ordering: `startupPolicy: InOrder` and `replicatedJobs[].dependsOn`.

InOrder (deprecated upstream in favour of dependsOn, still honoured): ReplicatedJobs are
created - and, on resume, unsuspended - one at a time, in spec order; the next starts once
every Job of the previous one is ready, succeeded or failed ("started"). dependsOn: a
ReplicatedJob is created only once each dependency reached its status - `Ready` (ready +
succeeded + failed equals its replicas) or `Complete` (succeeded equals its replicas).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from jobset.api import constants as c
from jobset.api.types import replicas

__all__ = ["all_replicas_started", "dependencies_reached", "find_status", "in_order"]


def in_order(js: Mapping[str, Any]) -> bool:
    """startupPolicy.startupPolicyOrder is InOrder."""
    policy = (js.get("spec") or {}).get("startupPolicy") or {}
    return policy.get("startupPolicyOrder") == c.STARTUP_IN_ORDER


def find_status(statuses: Sequence[Mapping[str, Any]], name: str) -> Mapping[str, Any] | None:
    for s in statuses:
        if s.get("name") == name:
            return s
    return None


def _n(status: Mapping[str, Any] | None, key: str) -> int:
    return int((status or {}).get(key) or 0)


def all_replicas_started(rjob: Mapping[str, Any], status: Mapping[str, Any] | None) -> bool:
    """Every Job of the ReplicatedJob is ready, succeeded or failed."""
    started = _n(status, "failed") + _n(status, "ready") + _n(status, "succeeded")
    return replicas(rjob) == started


def dependencies_reached(
    js: Mapping[str, Any], rjob: Mapping[str, Any], statuses: Sequence[Mapping[str, Any]]
) -> bool:
    """Every dependsOn entry of `rjob` reached its status (vacuously true without any).

    A dependency must come earlier in the spec (validation enforces it); one that does not
    is never reached, as upstream, whose replica map holds only the ReplicatedJobs seen so far.
    """
    earlier: dict[str, int] = {}
    for r in (js.get("spec") or {}).get("replicatedJobs") or []:
        if r.get("name") == rjob.get("name"):
            break
        earlier[str(r.get("name"))] = replicas(r)
    for dep in rjob.get("dependsOn") or []:
        status = find_status(statuses, str(dep.get("name")))
        if status is None:
            return False
        want = earlier.get(str(dep.get("name")), 0)
        if dep.get("status") == c.DEPENDENCY_COMPLETE and want != _n(status, "succeeded"):
            return False
        if dep.get("status") == c.DEPENDENCY_READY and want != (
            _n(status, "failed") + _n(status, "ready") + _n(status, "succeeded")
        ):
            return False
    return True
