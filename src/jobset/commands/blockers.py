"""Why a JobSet is not progressing, in a few lines, from its Jobs, pods and events.

`jobset describe` shows them in a "Waiting on" section and `jobset watch` prints them as they
change. Each is what a user would otherwise dig out of `kubectl describe pod` and `kubectl get
events` by hand:

- pods Pending that the scheduler cannot place, with its message (`0/16 nodes are available:
  16 node(s) didn't match Pod's node affinity/selector. ...`), grouped by that message;
- containers that cannot start or keep crashing (ErrImagePull, ImagePullBackOff,
  CreateContainerConfigError, CrashLoopBackOff, ...), grouped by reason;
- Jobs that cannot create their pods (the Job controller's `FailedCreate` Warning: a webhook's
  or a quota's refusal), and the JobSet controller's own Warnings about the JobSet;
- a restart in progress: Jobs of an earlier attempt still being deleted, or not all Jobs of
  the new attempt created yet; a suspended JobSet.

A cause that has passed is not shown: the Warnings of a restart go once the status says the
restart is over (RestartingJobSet False, every Job of the new attempt there).

Pure: it reads the objects as the API returns them (dicts) and the JobSet model.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from jobset.api import constants as c
from jobset.sdk.models import JobSet

__all__ = ["Blocker", "blockers"]

# Waiting reasons that are part of a normal start, not a problem.
_STARTING: Final = frozenset({"ContainerCreating", "PodInitializing", ""})


@dataclass(frozen=True)
class Blocker:
    """One reason, how many objects it holds up (`count`), and a `message` to show."""

    kind: str  # Unschedulable | ContainerWaiting | FailedCreate | Warning | Restarting | Suspended
    message: str
    count: int = 1

    def text(self) -> str:
        return self.message


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _condition(obj: Mapping[str, Any], ctype: str) -> Mapping[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == ctype:
            return cond  # type: ignore[no-any-return]
    return None


def _finished(job: Mapping[str, Any]) -> bool:
    return any((_condition(job, t) or {}).get("status") == "True" for t in ("Complete", "Failed"))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _unschedulable(pods: Iterable[Mapping[str, Any]]) -> list[Blocker]:
    by_message: dict[str, int] = {}
    for pod in pods:
        if (pod.get("status") or {}).get("phase") not in (None, "Pending"):
            continue
        if _meta(pod).get("deletionTimestamp"):
            continue
        cond = _condition(pod, "PodScheduled")
        if cond is None or cond.get("status") != "False":
            continue
        reason = str(cond.get("reason") or "")
        message = str(cond.get("message") or reason)
        if reason == "SchedulingGated":
            message = f"scheduling gated: {message}"
        by_message[message] = by_message.get(message, 0) + 1
    return [
        Blocker("Unschedulable", f"{_plural(n, 'pod')} Pending: {msg}", n)
        for msg, n in sorted(by_message.items(), key=lambda kv: -kv[1])
    ]


def _waiting(pods: Iterable[Mapping[str, Any]]) -> list[Blocker]:
    by_reason: dict[str, tuple[int, str]] = {}
    for pod in pods:
        status = pod.get("status") or {}
        if status.get("phase") in ("Succeeded", "Failed") or _meta(pod).get("deletionTimestamp"):
            continue
        for cs in [
            *(status.get("initContainerStatuses") or ()),
            *(status.get("containerStatuses") or ()),
        ]:
            waiting = (cs.get("state") or {}).get("waiting") or {}
            reason = str(waiting.get("reason") or "")
            if reason in _STARTING:
                continue
            n, example = by_reason.get(reason, (0, ""))
            message = str(waiting.get("message") or "")
            by_reason[reason] = (n + 1, example or message)
            break  # one per pod
    out = []
    for reason, (n, example) in sorted(by_reason.items(), key=lambda kv: -kv[1][0]):
        detail = f" ({example})" if example else ""
        out.append(Blocker("ContainerWaiting", f"{_plural(n, 'pod')} {reason}{detail}", n))
    return out


def _event_time(ev: Mapping[str, Any]) -> str:
    return str(ev.get("lastTimestamp") or ev.get("eventTime") or ev.get("firstTimestamp") or "")


def _failed_creates(
    jobs: Sequence[Mapping[str, Any]], events: Iterable[Mapping[str, Any]]
) -> list[Blocker]:
    """The latest FailedCreate of each unfinished Job (none once it created pods since)."""
    unfinished = {str(_meta(j).get("name")) for j in jobs if not _finished(j)}
    latest: dict[str, Mapping[str, Any]] = {}
    created: dict[str, str] = {}
    for ev in events:
        obj = ev.get("involvedObject") or {}
        name = str(obj.get("name") or "")
        if obj.get("kind") != "Job" or name not in unfinished:
            continue
        if ev.get("reason") == "SuccessfulCreate":
            created[name] = max(created.get(name, ""), _event_time(ev))
        elif ev.get("reason") == "FailedCreate" and _event_time(ev) >= _event_time(
            latest.get(name, {})
        ):
            latest[name] = ev
    out = []
    for name, ev in sorted(latest.items()):
        if created.get(name, "") > _event_time(ev):
            continue
        message = str(ev.get("message") or "").strip()
        out.append(Blocker("FailedCreate", f"Job {name} cannot create pods: {message}"))
    return out


# The Warnings the controller records when a failure policy restarts the JobSet (the
# action's reason, and the RestartingJobSet condition's, `FailurePolicy_<rule>` too).
_RESTART_REASONS: Final = frozenset(
    {
        c.RESTART_JOBSET_ACTION_REASON,
        c.RESTART_JOBSET_AND_IGNORE_MAX_RESTARTS_ACTION_REASON,
        c.RESTART_JOB_ACTION_REASON,
        c.RESTART_JOB_AND_IGNORE_MAX_RESTARTS_ACTION_REASON,
        c.RESTARTING_REASON_DEFAULT_FAILURE_POLICY,
    }
)


def _is_restart_reason(reason: str) -> bool:
    return reason in _RESTART_REASONS or reason.startswith(
        c.RESTARTING_REASON_FAILURE_POLICY_PREFIX
    )


def _restart_over_at(js: JobSet, jobs: Sequence[Mapping[str, Any]]) -> str | None:
    """When the latest restart was over, as its status and Jobs show it: RestartingJobSet
    turned False (the controller does so once every Job is ready again) and every Job is of
    the current attempt, all there. None while a restart is under way (or never was)."""
    cond = js.condition(c.CONDITION_RESTARTING)
    if cond is None or cond.status != "False" or _restart(js, jobs):
        return None
    return (cond.last_transition_time or "")[:19]


def _jobset_warnings(
    js: JobSet, jobs: Sequence[Mapping[str, Any]], events: Iterable[Mapping[str, Any]]
) -> list[Blocker]:
    """The JobSet controller's latest Warning of each reason about this JobSet; a restart's
    Warnings only until that restart is over (`_restart_over_at`)."""
    over = _restart_over_at(js, jobs)
    latest: dict[str, Mapping[str, Any]] = {}
    for ev in events:
        obj = ev.get("involvedObject") or {}
        if obj.get("kind") != "JobSet" or obj.get("name") != js.name:
            continue
        if ev.get("type") != "Warning":
            continue
        reason = str(ev.get("reason") or "")
        if over is not None and _is_restart_reason(reason) and _event_time(ev)[:19] <= over:
            continue  # a cause that has passed
        if _event_time(ev) >= _event_time(latest.get(reason, {})):
            latest[reason] = ev
    return [
        Blocker("Warning", f"{reason}: {str(ev.get('message') or '').strip()}")
        for reason, ev in sorted(latest.items())
    ]


def _restart(js: JobSet, jobs: Sequence[Mapping[str, Any]]) -> list[Blocker]:
    restarts = (js.status.restarts if js.status else None) or 0
    if restarts == 0:
        return []
    old = [
        j
        for j in jobs
        if str((_meta(j).get("labels") or {}).get(c.RESTART_ATTEMPT_KEY, restarts)) != str(restarts)
    ]
    if old:
        return [
            Blocker(
                "Restarting",
                f"restart {restarts} in progress: {_plural(len(old), 'Job')} of earlier "
                "attempts still being deleted",
                len(old),
            )
        ]
    expected = sum(
        c.DEFAULT_REPLICAS if r.replicas is None else r.replicas
        for r in (js.spec.replicated_jobs if js.spec else None) or []
    )
    if len(jobs) < expected:
        return [
            Blocker(
                "Restarting",
                f"restart {restarts} in progress: {len(jobs)} of {expected} Jobs created",
                expected - len(jobs),
            )
        ]
    return []


def blockers(
    js: JobSet,
    jobs: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    events: Sequence[Mapping[str, Any]],
) -> list[Blocker]:
    """What holds `js` up now, most important first; empty once it is finished."""
    if js.is_finished:
        return []
    out: list[Blocker] = []
    if (js.spec is not None and js.spec.suspend) or js.condition_true(c.CONDITION_SUSPENDED):
        out.append(Blocker("Suspended", "suspended (spec.suspend is true)"))
    out += _restart(js, jobs)
    out += _failed_creates(jobs, events)
    out += _unschedulable(pods)
    out += _waiting(pods)
    out += _jobset_warnings(js, jobs, events)
    return out
