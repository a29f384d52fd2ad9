"""The agent's decisions, one view of its JobSet at a time (upstream's agent `Reconcile`).

- Bypass: the JobSet carries `jobset.sigs.k8s.io/disable-in-place-restart` or does not use
  the `InPlaceRestart` strategy: lift the barrier at once and do nothing else (the agent is
  then a no-op, e.g. after a downgrade to a controller without in-place restart).
- Start-up (no attempt written yet by this run of the agent): write the pod's attempt, 0 if
  the JobSet has no `currentInPlaceRestartAttempt` yet (its first start), else current + 1
  (the pod restarted: it waits at the barrier until the others catch up).
- The pod's attempt is at or below `previousInPlaceRestartAttempt`: exit with the in-place
  restart exit code, so that the kubelet restarts the pod in place.
- The pod's attempt equals `currentInPlaceRestartAttempt`: lift the barrier (once).

Pure: unit-tested in tests/unit/agent/test_decide.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jobset.api import constants as c

__all__ = ["AgentState", "Step", "bypasses_barrier", "decide"]


@dataclass
class AgentState:
    """What this run of the agent knows: the attempt it wrote, and whether the barrier is
    still up."""

    attempt: int | None = None
    barrier_up: bool = True


@dataclass(frozen=True)
class Step:
    """What to do now: write this attempt on the pod first, then exit to restart the pod
    in place, or lift the barrier."""

    write_attempt: int | None = None
    restart: bool = False
    lift: bool = False


def bypasses_barrier(js: Mapping[str, Any]) -> bool:
    annotations = (js.get("metadata") or {}).get("annotations") or {}
    if c.DISABLE_IN_PLACE_RESTART_KEY in annotations:
        return True
    policy = (js.get("spec") or {}).get("failurePolicy") or {}
    return policy.get("restartStrategy") != c.RESTART_STRATEGY_IN_PLACE_RESTART


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def decide(state: AgentState, js: Mapping[str, Any]) -> Step:
    """The step for one view of the JobSet. The caller applies it in order and records in
    `state` what succeeded (`attempt` once written, `barrier_up` once lifted)."""
    if bypasses_barrier(js):
        return Step(lift=state.barrier_up)
    status = js.get("status") or {}
    current = _int(status.get(c.STATUS_CURRENT_IN_PLACE_RESTART_ATTEMPT))
    previous = _int(status.get(c.STATUS_PREVIOUS_IN_PLACE_RESTART_ATTEMPT))
    if state.attempt is None:
        return Step(write_attempt=0 if current is None else current + 1)
    if previous is not None and state.attempt <= previous:
        return Step(restart=True)
    if state.barrier_up and current is not None and state.attempt == current:
        return Step(lift=True)
    return Step()
