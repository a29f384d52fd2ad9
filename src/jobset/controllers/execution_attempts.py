"""Execution attempts (KEP-1282, feature gate `ExecutionAttemptsTracking`): one counter per run.

`status.restarts` grows only when the failure policy recreates every Job. A JobSet that a
queue (Kueue) suspends and later resumes runs again on new pods under the same restart
attempt, so logs of two runs share one identifier. `status.executionAttempts` grows on both,
and every Job and pod template carries it as the `jobset.sigs.k8s.io/execution-attempt`
annotation. The KEP's rules, all pure functions of the status being planned:

- Unset means the JobSet never ran (or the gate was off). A JobSet found running with it
  unset - created unsuspended, or running when the controller was upgraded - starts at
  `status.restarts` (0 for a new one), so `executionAttempts >= restarts` always holds.
- A resume adds one. A resume is pending while the stored `Suspended` condition is True and
  `spec.suspend` is false; the counter is written in the pass that turns the condition
  False, so a retried pass, a failed status write or many Jobs count it once. The Jobs a
  pending resume unsuspends carry the new value in the same patch that clears their
  `suspend`. An unset counter is not incremented: the first resume of a JobSet created
  suspended starts it at `status.restarts`.
- A JobSet-wide restart by the failure policy adds one, in the write that counts the
  restart; the recreated Jobs carry it.
- Gate off: the counter is neither read nor written, and Jobs carry no annotation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobset.api import constants as c
from jobset.controllers.conditions import StatusUpdate

__all__ = ["attempt_for_pass", "record_restart", "record_running", "stored_attempts"]


def stored_attempts(status: Mapping[str, Any]) -> int | None:
    """`status.executionAttempts`, None when unset or not a count (a status written by
    hand, past the schema's minimum): it then starts again from the restarts."""
    value = status.get(c.STATUS_EXECUTION_ATTEMPTS)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def attempt_for_pass(update: StatusUpdate, *, suspended: bool) -> int:
    """The attempt stamped on the Jobs this pass creates or resumes.

    Suspended, Jobs are created for the attempt stored (0 when unset, as upstream's
    constructJob); their resume stamps the next one."""
    stored = stored_attempts(update.original)
    if suspended:
        return 0 if stored is None else stored
    if stored is None:
        return update.restarts
    if _resume_pending(update):
        return stored + 1
    return stored


def record_running(update: StatusUpdate, attempt: int) -> None:
    """Write `attempt` once the JobSet runs: not while a resume is still pending (with the
    InOrder startup policy `Suspended` stays True until every ReplicatedJob has started)."""
    if not update.condition_true(c.CONDITION_SUSPENDED):
        update.set_field(c.STATUS_EXECUTION_ATTEMPTS, attempt)


def record_restart(update: StatusUpdate) -> None:
    """Count a JobSet-wide restart the failure policy just planned, if it planned one."""
    before = int(update.original.get("restarts") or 0)
    if update.restarts <= before:
        return
    stored = stored_attempts(update.original)
    base = before if stored is None else stored
    update.set_field(c.STATUS_EXECUTION_ATTEMPTS, base + 1)


def _resume_pending(update: StatusUpdate) -> bool:
    for cond in update.original.get("conditions") or ():
        if cond.get("type") == c.CONDITION_SUSPENDED:
            return bool(cond.get("status") == "True")
    return False
