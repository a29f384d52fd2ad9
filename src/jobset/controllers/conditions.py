"""The JobSet status being built during one reconcile pass, and its condition rules.

Upstream mutates the JobSet in place while it reconciles, flags "status must be written" and
queues events that are only emitted once that write succeeds. `StatusUpdate` is that state
made explicit: the planner works on a private copy of the status, every change sets
`changed`, and every condition change queues its event. Nothing here does I/O.

Condition transitions follow upstream's `updateCondition` exactly:

- same type, other status: replaced (new lastTransitionTime);
- same type and status, other reason or message: replaced, lastTransitionTime kept;
- a condition that does not exist yet is only added when its status is True (so e.g.
  "RestartingJobSet=False" never appears on a JobSet that never restarted);
- StartupPolicyInProgress and StartupPolicyCompleted exclude each other: setting one True
  flips the other, if True, to False (only its status; reason and time stay).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Literal

from jobset.api import constants as c

__all__ = ["NORMAL", "WARNING", "Event", "StatusUpdate", "format_time"]

NORMAL: Final = "Normal"
WARNING: Final = "Warning"

EventType = Literal["Normal", "Warning"]

_EXCLUSIVE: Final = frozenset(
    {c.CONDITION_STARTUP_POLICY_IN_PROGRESS, c.CONDITION_STARTUP_POLICY_COMPLETED}
)


def format_time(t: datetime) -> str:
    """metav1.Time's wire format: RFC 3339 in UTC with second precision."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class Event:
    """A Kubernetes Event about the JobSet, emitted after the status write succeeds."""

    type: EventType
    reason: str
    message: str


@dataclass
class StatusUpdate:
    """A copy of a JobSet's status being changed by the planner, with its queued events."""

    status: dict[str, Any]
    now: datetime
    changed: bool = False
    events: list[Event] = field(default_factory=list)
    # The status as read (not changed by the planner): what `only_counts_changed` compares to.
    original: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, js: dict[str, Any], now: datetime) -> StatusUpdate:
        original = js.get("status") or {}
        update = cls(copy.deepcopy(original), now, original=original)
        if "restarts" not in update.status:
            # Upstream serialises `restarts` always (no omitempty): `kubectl get jobsets`
            # shows 0 in RESTARTS for a JobSet that never restarted, not an empty cell.
            update.status["restarts"] = 0
            update.changed = True
        return update

    def only_counts_changed(self) -> bool:
        """Changed, but only in the Job counts of `replicatedJobsStatus` (ready, active,
        succeeded, failed, suspended): no condition, counter, per-Job restart or event."""
        return (
            self.changed
            and not self.events
            and _without_counts(self.status) == _without_counts(self.original)
        )

    # ------------------------------------------------------------------ scalar fields

    @property
    def restarts(self) -> int:
        return int(self.status.get("restarts") or 0)

    @property
    def restarts_count_towards_max(self) -> int:
        return int(self.status.get("restartsCountTowardsMax") or 0)

    def set_field(self, name: str, value: Any) -> None:
        if self.status.get(name) != value:
            self.status[name] = value
            self.changed = True

    def conditions(self) -> list[dict[str, Any]]:
        conds: list[dict[str, Any]] | None = self.status.get("conditions")
        if conds is None:
            conds = []
            self.status["conditions"] = conds
        return conds

    def condition(self, ctype: str) -> dict[str, Any] | None:
        for cond in self.status.get("conditions") or []:
            if cond.get("type") == ctype:
                return cond  # type: ignore[no-any-return]
        return None

    def condition_true(self, ctype: str) -> bool:
        cond = self.condition(ctype)
        return cond is not None and cond.get("status") == "True"

    # ------------------------------------------------------------------ conditions

    def set_condition(
        self, ctype: str, status: bool, reason: str, message: str, event_type: EventType
    ) -> bool:
        """Apply upstream's condition rules; queue an event when something changed."""
        want = "True" if status else "False"
        new = {
            "type": ctype,
            "status": want,
            "reason": reason,
            "message": message,
            "lastTransitionTime": format_time(self.now),
        }
        changed = False
        found = False
        conds = self.conditions()
        for i, cur in enumerate(conds):
            if cur.get("type") == ctype:
                found = True
                if cur.get("status") != want:
                    conds[i] = new
                    changed = True
                elif cur.get("reason") != reason or cur.get("message") != message:
                    new["lastTransitionTime"] = cur.get(
                        "lastTransitionTime", new["lastTransitionTime"]
                    )
                    conds[i] = new
                    changed = True
            elif (
                ctype in _EXCLUSIVE
                and cur.get("type") in _EXCLUSIVE
                and cur.get("status") == "True"
                and status
            ):
                cur["status"] = "False"
                changed = True
        if not found and status:
            conds.append(new)
            changed = True
        if not conds:
            self.status.pop("conditions", None)
        if changed:
            self.changed = True
            self.events.append(Event(event_type, reason, message))
        return changed

    def add_event(self, event_type: EventType, reason: str, message: str) -> None:
        self.events.append(Event(event_type, reason, message))

    # ------------------------------------------------------------------ composite transitions

    def set_restarting_false(self, reason: str, message: str) -> None:
        self.set_condition(c.CONDITION_RESTARTING, False, reason, message, NORMAL)

    def set_failed(self, reason: str, message: str) -> None:
        """Failed=True, RestartingJobSet=False (JobSetFailed), terminalState Failed."""
        self.set_condition(c.CONDITION_FAILED, True, reason, message, WARNING)
        self.set_restarting_false(
            c.RESTARTING_REASON_JOBSET_FAILED, c.RESTARTING_MESSAGE_JOBSET_FAILED
        )
        self.set_field("terminalState", c.TERMINAL_STATE_FAILED)

    def set_completed(self) -> None:
        """Completed=True, RestartingJobSet=False (JobSetCompleted), terminalState Completed."""
        self.set_condition(
            c.CONDITION_COMPLETED,
            True,
            c.ALL_JOBS_COMPLETED_REASON,
            c.ALL_JOBS_COMPLETED_MESSAGE,
            NORMAL,
        )
        self.set_restarting_false(
            c.RESTARTING_REASON_JOBSET_COMPLETED, c.ALL_JOBS_COMPLETED_MESSAGE
        )
        self.set_field("terminalState", c.TERMINAL_STATE_COMPLETED)

    def set_suspended(self) -> None:
        self.set_condition(
            c.CONDITION_SUSPENDED,
            True,
            c.JOBSET_SUSPENDED_REASON,
            c.JOBSET_SUSPENDED_MESSAGE,
            NORMAL,
        )
        self.set_restarting_false(c.RESTARTING_REASON_JOBSET_SUSPENDED, c.JOBSET_SUSPENDED_MESSAGE)

    def set_resumed(self) -> None:
        self.set_condition(
            c.CONDITION_SUSPENDED, False, c.JOBSET_RESUMED_REASON, c.JOBSET_RESUMED_MESSAGE, NORMAL
        )

    def set_startup_in_progress(self) -> None:
        self.set_condition(
            c.CONDITION_STARTUP_POLICY_IN_PROGRESS,
            True,
            c.IN_ORDER_STARTUP_POLICY_IN_PROGRESS_REASON,
            c.IN_ORDER_STARTUP_POLICY_IN_PROGRESS_MESSAGE,
            NORMAL,
        )

    def set_startup_completed(self) -> None:
        self.set_condition(
            c.CONDITION_STARTUP_POLICY_COMPLETED,
            True,
            c.IN_ORDER_STARTUP_POLICY_COMPLETED_REASON,
            c.IN_ORDER_STARTUP_POLICY_COMPLETED_MESSAGE,
            NORMAL,
        )


_COUNTS: Final = frozenset({"ready", "active", "succeeded", "failed", "suspended"})


def _without_counts(status: dict[str, Any]) -> dict[str, Any]:
    """The status with the Job counts taken out (an entry holding nothing else vanishes)."""
    out = {k: v for k, v in status.items() if k != "replicatedJobsStatus"}
    out.setdefault("restarts", 0)  # a missing `restarts` written as 0 is no news either
    rest: dict[str, dict[str, Any]] = {}
    for rjs in status.get("replicatedJobsStatus") or ():
        kept = {k: v for k, v in rjs.items() if k not in _COUNTS and k != "name"}
        if kept:
            rest[str(rjs.get("name") or "")] = kept
    out["replicatedJobsStatus"] = rest
    return out
