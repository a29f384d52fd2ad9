"""What `jobset describe` / `watch` say holds a JobSet up (jobset.commands.blockers), from
Jobs, pods and events as the API returns them, without a cluster."""

from __future__ import annotations

from typing import Any

from jobset.api import constants as c
from jobset.commands.blockers import blockers
from jobset.sdk import JobSet, leader_workers

UNSCHEDULABLE = (
    "0/16 nodes are available: 16 node(s) didn't match Pod's node affinity/selector. "
    "preemption: 0/16 nodes are available: 16 Preemption is not helpful for scheduling."
)


def _js(status: dict[str, Any] | None = None, **spec: Any) -> JobSet:
    d = leader_workers("lw", image="i", workers=2).to_dict()
    d["spec"].update(spec)
    if status is not None:
        d["status"] = status
    return JobSet.from_dict(d)


def _pod(name: str, **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"phase": "Pending", **status}}


def _job(name: str, attempt: int = 0, **status: Any) -> dict[str, Any]:
    labels = {c.RESTART_ATTEMPT_KEY: str(attempt)}
    return {"metadata": {"name": name, "labels": labels}, "status": status}


def _event(kind: str, name: str, reason: str, message: str, at: str, type_: str = "Warning") -> dict[str, Any]:  # fmt: skip
    return {"involvedObject": {"kind": kind, "name": name}, "reason": reason, "message": message,
            "type": type_, "lastTimestamp": at}  # fmt: skip


def _texts(js: JobSet, jobs: Any = (), pods: Any = (), events: Any = ()) -> list[str]:
    return [b.text() for b in blockers(js, list(jobs), list(pods), list(events))]


def test_unschedulable_pods_grouped_by_the_schedulers_message() -> None:
    cond = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": UNSCHEDULABLE}  # fmt: skip
    pods = [_pod(f"p{i}", conditions=[cond]) for i in range(3)]
    pods.append(_pod("bound", conditions=[{"type": "PodScheduled", "status": "True"}]))
    assert _texts(_js(), pods=pods) == [f"3 pods Pending: {UNSCHEDULABLE}"]


def test_containers_that_cannot_start_grouped_by_reason() -> None:
    def waiting(reason: str, message: str = "") -> dict[str, Any]:
        return {"containerStatuses": [{"name": "main", "state": {"waiting": {"reason": reason, "message": message}}}]}  # fmt: skip

    pods = [
        _pod("a", **waiting("CreateContainerConfigError", 'configmap "cfg" not found')),
        _pod("b", **waiting("CreateContainerConfigError", 'configmap "cfg" not found')),
        _pod("c", **waiting("ContainerCreating")),
        {**_pod("d", **waiting("CrashLoopBackOff", "back-off 10s")), "status": {
            "phase": "Running", **waiting("CrashLoopBackOff", "back-off 10s")}},
    ]  # fmt: skip
    assert _texts(_js(), pods=pods) == [
        '2 pods CreateContainerConfigError (configmap "cfg" not found)',
        "1 pod CrashLoopBackOff (back-off 10s)",
    ]


def test_failed_create_until_the_job_creates_pods_again() -> None:
    jobs = [_job("lw-workers-0"), _job("lw-leader-0", active=1)]
    refused = _event("Job", "lw-workers-0", "FailedCreate",
                     'Error creating: admission webhook "v" denied the request: no', "T2")  # fmt: skip
    older = _event("Job", "lw-workers-0", "FailedCreate", "Error creating: old", "T1")
    assert _texts(_js(), jobs, events=[older, refused]) == [
        'Job lw-workers-0 cannot create pods: Error creating: admission webhook "v" denied '
        "the request: no"
    ]
    created = _event("Job", "lw-workers-0", "SuccessfulCreate", "Created pod: x", "T3", "Normal")
    assert _texts(_js(), jobs, events=[refused, created]) == []
    finished = [_job("lw-workers-0", conditions=[{"type": "Failed", "status": "True"}])]
    assert _texts(_js(), finished, events=[refused]) == []


def test_restart_in_progress() -> None:
    js = _js({"restarts": 2})
    old = [_job("lw-leader-0", attempt=1), _job("lw-workers-0", attempt=2)]
    assert _texts(js, old) == [
        "restart 2 in progress: 1 Job of earlier attempts still being deleted"
    ]
    assert _texts(js, [_job("lw-leader-0", attempt=2)]) == [
        "restart 2 in progress: 1 of 2 Jobs created"
    ]
    assert _texts(_js(), [_job("lw-leader-0")]) == []  # no restart: Jobs are just being created


def test_jobset_warnings_suspension_and_finished() -> None:
    warn = _event("JobSet", "lw", "JobCreationFailed", "quota exceeded", "T1")
    info = _event("JobSet", "lw", "Created", "ok", "T1", "Normal")
    assert _texts(_js(suspend=True), events=[warn, info]) == [
        "suspended (spec.suspend is true)",
        "JobCreationFailed: quota exceeded",
    ]
    done = _js({"terminalState": "Completed", "conditions": [
        {"type": "Completed", "status": "True"}]})  # fmt: skip
    cond = {"type": "PodScheduled", "status": "False", "message": UNSCHEDULABLE}
    assert _texts(done, pods=[_pod("p", conditions=[cond])], events=[warn]) == []


def test_a_restarts_warnings_go_once_the_restart_is_over() -> None:
    message = "applying RestartJobSet failure policy action (first failed job: lw-workers-0)"
    events = [
        _event("JobSet", "lw", c.RESTARTING_REASON_DEFAULT_FAILURE_POLICY, message, "2024-05-01T10:00:05Z"),
        _event("JobSet", "lw", c.RESTART_JOBSET_ACTION_REASON, message, "2024-05-01T10:00:05Z"),
        _event("JobSet", "lw", "JobCreationFailed", "quota", "2024-05-01T10:00:06Z"),
    ]  # fmt: skip
    jobs = [_job("lw-leader-0", 1), _job("lw-workers-0", 1)]

    def restarting(status: str, at: str) -> JobSet:
        cond = {"type": c.CONDITION_RESTARTING, "status": status, "lastTransitionTime": at,
                "reason": c.RESTARTING_REASON_DEFAULT_FAILURE_POLICY}  # fmt: skip
        return _js({"restarts": 1, "conditions": [cond]})

    during = _texts(restarting("True", "2024-05-01T10:00:05Z"), jobs, events=events)
    assert f"{c.RESTART_JOBSET_ACTION_REASON}: {message}" in during
    assert f"{c.RESTARTING_REASON_DEFAULT_FAILURE_POLICY}: {message}" in during
    # Every Job of the new attempt ready: RestartingJobSet False, the restart is over.
    after = _texts(restarting("False", "2024-05-01T10:00:09Z"), jobs, events=events)
    assert after == ["JobCreationFailed: quota"]
    # Jobs of the earlier attempt still there: not over, whatever the condition says.
    old = [_job("lw-leader-0", 0), *jobs[1:]]
    still = _texts(restarting("False", "2024-05-01T10:00:09Z"), old, events=events)
    assert f"{c.RESTART_JOBSET_ACTION_REASON}: {message}" in still
    # A later restart's Warning is shown again.
    again = [*events, _event("JobSet", "lw", c.RESTART_JOBSET_ACTION_REASON, "again", "2024-05-01T10:01:00Z")]  # fmt: skip
    assert f"{c.RESTART_JOBSET_ACTION_REASON}: again" in _texts(
        restarting("False", "2024-05-01T10:00:09Z"), jobs, events=again
    )
