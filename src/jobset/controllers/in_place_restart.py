"""InPlaceRestart (KEP-467, alpha, feature gate `InPlaceRestart`): group restarts that keep
the pods, orchestrated through two status fields and one pod annotation.

The protocol, as upstream runs it (`pkg/controllers/in_place_restart.go` and the agent,
`jobset in-place-restart-agent`, see `jobset.commands.inplace_agent`):

- Every worker pod runs the agent. When it starts it reads its JobSet and writes its pod's
  attempt, annotation `jobset.sigs.k8s.io/in-place-restart-attempt`: 0 when
  `status.currentInPlaceRestartAttempt` is unset (first start), else current + 1. Its
  worker waits behind a barrier (the agent's startup probe, or the agent starts the
  worker itself in main-container mode).
- This module, on every pass of such a JobSet: when every expected pod (replicas x
  parallelism of every ReplicatedJob) is at the same attempt, `currentInPlaceRestartAttempt`
  becomes that attempt - the agents lift their barriers. Otherwise, when some pod is ahead
  (it restarted: its worker failed, the kubelet restarted all its containers and the
  agent came back at current + 1), `previousInPlaceRestartAttempt` becomes the highest
  attempt - 1 - every agent at or below it exits with its restart exit code, the kubelet
  restarts its pod in place, and it comes back at the new attempt. Previous never goes down.
- Failed pods are ignored (their replacements count), as are pods not annotated yet.
- The JobSet fails with `ReachedMaxRestarts` once an attempt, minus the full restarts that
  do not count toward the maximum, exceeds `failurePolicy.maxRestarts`, or once some
  container of its pods has restarted more than `maxRestarts` times (a worker failing
  before any barrier lifts never raises an attempt).

A failed Job is handled by the failure policy as `Recreate` does (the fall-back: the Jobs
are recreated, and their new pods join at the next attempt). Pure: no I/O; unit-tested in
tests/unit/controllers/test_in_place_restart.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jobset.api import constants as c
from jobset.controllers.conditions import NORMAL, StatusUpdate

__all__ = [
    "InPlaceOutcome",
    "expected_pods",
    "is_in_place_restart",
    "max_container_restarts",
    "pod_attempts",
    "reconcile_in_place_restart",
]


@dataclass(frozen=True)
class InPlaceOutcome:
    """What one pass decided: the attempt written as current (barriers lifted) or as
    previous (a group restart began), whether the JobSet failed, and pods whose annotation
    could not be read (for the controller's log)."""

    current: int | None = None
    previous: int | None = None
    failed: bool = False
    invalid_pods: tuple[str, ...] = field(default_factory=tuple)


def is_in_place_restart(js: Mapping[str, Any]) -> bool:
    policy = (js.get("spec") or {}).get("failurePolicy") or {}
    return policy.get("restartStrategy") == c.RESTART_STRATEGY_IN_PLACE_RESTART


def max_container_restarts(pods: Iterable[Mapping[str, Any]]) -> int:
    """The highest restartCount of any container (init or regular) of the pods."""
    highest = 0
    for pod in pods:
        status = pod.get("status") or {}
        for cs in [
            *(status.get("initContainerStatuses") or ()),
            *(status.get("containerStatuses") or ()),
        ]:
            highest = max(highest, int(cs.get("restartCount") or 0))
    return highest


def pod_attempts(pods: Iterable[Mapping[str, Any]]) -> tuple[list[int], list[str]]:
    """The attempts of the pods that count (not Failed, annotated), and the names of pods
    whose annotation is not a non-negative integer."""
    attempts: list[int] = []
    invalid: list[str] = []
    for pod in pods:
        if (pod.get("status") or {}).get("phase") == "Failed":
            continue  # its replacement may exist already
        meta = pod.get("metadata") or {}
        raw = (meta.get("annotations") or {}).get(c.IN_PLACE_RESTART_ATTEMPT_KEY)
        if raw is None:
            continue  # created, its agent has not written the annotation yet
        try:
            value = int(str(raw))
        except ValueError:
            value = -1
        if value < 0:
            invalid.append(str(meta.get("name") or ""))
            continue
        attempts.append(value)
    return attempts, invalid


def expected_pods(js: Mapping[str, Any]) -> int | None:
    """replicas x parallelism over the ReplicatedJobs; None when some ReplicatedJob does not
    set completions == parallelism (validation requires it for in-place restart)."""
    total = 0
    for rjob in (js.get("spec") or {}).get("replicatedJobs") or ():
        spec = (rjob.get("template") or {}).get("spec") or {}
        parallelism, completions = spec.get("parallelism"), spec.get("completions")
        if parallelism is None or completions is None or parallelism != completions:
            return None
        total += int(rjob.get("replicas", 1)) * int(parallelism)
    return total


def _exceeded_max_restarts(js: Mapping[str, Any], status: Mapping[str, Any], top: int) -> bool:
    max_restarts = int(((js.get("spec") or {}).get("failurePolicy") or {}).get("maxRestarts") or 0)
    uncounted = int(status.get("restarts") or 0) - int(status.get("restartsCountTowardsMax") or 0)
    return top - uncounted > max_restarts


def reconcile_in_place_restart(
    js: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], update: StatusUpdate
) -> InPlaceOutcome:
    """One pass of the protocol above over the JobSet's pods, writing into `update`."""
    max_restarts = int(((js.get("spec") or {}).get("failurePolicy") or {}).get("maxRestarts") or 0)
    if max_container_restarts(pods) > max_restarts:
        update.set_failed(c.REACHED_MAX_RESTARTS_REASON, c.REACHED_MAX_RESTARTS_MESSAGE)
        return InPlaceOutcome(failed=True)
    attempts, invalid = pod_attempts(pods)
    top = max(attempts, default=0)
    if _exceeded_max_restarts(js, update.status, top):
        update.set_failed(c.REACHED_MAX_RESTARTS_REASON, c.REACHED_MAX_RESTARTS_MESSAGE)
        return InPlaceOutcome(failed=True, invalid_pods=tuple(invalid))
    expected = expected_pods(js)
    if expected is None:
        return InPlaceOutcome(invalid_pods=tuple(invalid))
    if attempts and len(attempts) == expected and len(set(attempts)) == 1:
        current = attempts[0]
        if update.status.get(c.STATUS_CURRENT_IN_PLACE_RESTART_ATTEMPT) == current:
            return InPlaceOutcome(invalid_pods=tuple(invalid))
        update.set_field(c.STATUS_CURRENT_IN_PLACE_RESTART_ATTEMPT, current)
        if current > 0:
            update.add_event(
                NORMAL,
                c.IN_PLACE_RESTART_COMPLETED_REASON,
                f"all {expected} pods reached in-place restart attempt {current}: barriers lifted",
            )
        return InPlaceOutcome(current=current, invalid_pods=tuple(invalid))
    if top == 0:
        return InPlaceOutcome(invalid_pods=tuple(invalid))  # the first start, still gathering
    previous = top - 1
    old = update.status.get(c.STATUS_PREVIOUS_IN_PLACE_RESTART_ATTEMPT)
    if old is not None and previous <= int(old):
        # never lowered: the pod at the top attempt may be one being replaced
        return InPlaceOutcome(invalid_pods=tuple(invalid))
    update.set_field(c.STATUS_PREVIOUS_IN_PLACE_RESTART_ATTEMPT, previous)
    update.add_event(
        NORMAL,
        c.IN_PLACE_RESTART_STARTED_REASON,
        f"a pod reached in-place restart attempt {top}: pods at attempt {previous} or "
        "below restart in place",
    )
    return InPlaceOutcome(previous=previous, invalid_pods=tuple(invalid))
