"""The simulated Job controller's sync decision (kubesim.controllers.jobplan), without a server."""

from __future__ import annotations

from typing import Any

from kubesim.controllers.jobplan import JobPlanner, Memory, Outcome
from kubesim.controllers.jobpolicy import (
    COMPLETION_INDEX_ANNOTATION,
    JOB_TRACKING_FINALIZER,
    Backoff,
)

NOW = 1_700_000_000.0


def job(**spec: Any) -> dict[str, Any]:
    spec.setdefault("template", {"spec": {"containers": [{"name": "c", "image": "i"}]}})
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"namespace": "ns", "name": "j", "uid": "job-uid"},
        "spec": spec,
        "status": {},
    }


def pod(name: str, phase: str, index: int | None = None, ready: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "uid": f"uid-{name}",
        "finalizers": [JOB_TRACKING_FINALIZER],
        "creationTimestamp": "2023-11-14T22:13:20Z",
    }
    if index is not None:
        meta["annotations"] = {COMPLETION_INDEX_ANNOTATION: str(index)}
    status: dict[str, Any] = {"phase": phase}
    if ready:
        status["conditions"] = [{"type": "Ready", "status": "True"}]
    return {"metadata": meta, "spec": {"nodeName": "n"}, "status": status}


def test_new_job_creates_parallelism_pods_and_sets_start_time() -> None:
    planner = JobPlanner(job(parallelism=3, completions=5), [], Memory(), NOW)
    acts = planner.decide()
    assert acts.finish is None
    assert acts.create == [None, None, None]
    assert acts.delete == []
    assert acts.started_at == NOW
    update = planner.status_after(acts, Outcome(created=3))
    assert update.status["active"] == 3
    assert update.status["startTime"] == "2023-11-14T22:13:20Z"
    # No Suspended=False/JobResumed condition: the Job was never suspended.
    assert "conditions" not in update.status


def test_indexed_job_creates_missing_indexes_with_index_names() -> None:
    pods = [pod("j-0-abcde", "Running", index=0), pod("j-2-abcde", "Succeeded", index=2)]
    planner = JobPlanner(
        job(parallelism=4, completions=4, completionMode="Indexed"), pods, Memory(), NOW
    )
    acts = planner.decide()
    assert acts.create == [1, 3]
    assert acts.succeeded_indexes == {2}
    created = planner.pod_for(3)
    assert created["metadata"]["generateName"] == "j-3-"
    assert created["spec"]["hostname"] == "j-3"
    assert created["metadata"]["ownerReferences"][0]["uid"] == "job-uid"
    env = created["spec"]["containers"][0]["env"]
    assert {"name": "JOB_COMPLETION_INDEX", "valueFrom": env[0]["valueFrom"]} == env[0]


def test_backoff_limit_exceeded_fails_the_job_and_deletes_active_pods() -> None:
    pods = [pod("a", "Failed"), pod("b", "Failed"), pod("c", "Running", ready=True)]
    planner = JobPlanner(job(parallelism=1, backoffLimit=1), pods, Memory(), NOW)
    acts = planner.decide()
    assert acts.finish is not None and acts.finish.reason == "BackoffLimitExceeded"
    assert [p["metadata"]["name"] for p in acts.delete] == ["c"]
    assert acts.keep_finalizer  # deleted pods of a failed Job are still counted
    update = planner.status_after(acts, Outcome(deleted=1, deleted_ready=1))
    types = {c["type"]: c["reason"] for c in update.status["conditions"]}
    # A pod is still terminating: only the interim condition, not Failed yet.
    assert types == {"FailureTarget": "BackoffLimitExceeded"}
    # The pod deleted because the Job failed counts as failed too, as upstream counts it.
    assert update.status["failed"] == 3
    assert update.status["terminating"] == 1
    assert sorted(p["metadata"]["name"] for p in update.release) == ["a", "b", "c"]


def test_completions_reached_completes_once_no_pod_is_active() -> None:
    pods = [pod("a", "Succeeded"), pod("b", "Succeeded")]
    planner = JobPlanner(job(parallelism=2, completions=2), pods, Memory(), NOW)
    acts = planner.decide()
    assert acts.create == [] and acts.delete == []
    update = planner.status_after(acts, Outcome())
    conds = {c["type"]: c["status"] for c in update.status["conditions"]}
    assert conds["SuccessCriteriaMet"] == "True" and conds["Complete"] == "True"
    assert update.status["succeeded"] == 2
    assert update.status["completionTime"] == "2023-11-14T22:13:20Z"
    assert update.backoff is not None and update.backoff.failures == 0


def test_replacement_waits_for_the_pod_failure_backoff() -> None:
    memory = Memory(backoff=Backoff(failures=1, last_failure=NOW - 2), time_scale=1.0)
    planner = JobPlanner(job(parallelism=1, completions=1), [], memory, NOW)
    acts = planner.decide()
    assert acts.create == []
    assert acts.requeue_after == [8.0]  # 10 s back-off, 2 s of it already passed


def test_suspended_job_deletes_active_pods_without_counting_them() -> None:
    pods = [pod("a", "Running")]
    planner = JobPlanner(job(parallelism=1, suspend=True), pods, Memory(), NOW)
    acts = planner.decide()
    assert [p["metadata"]["name"] for p in acts.delete] == ["a"]
    assert not acts.keep_finalizer
    update = planner.status_after(acts, Outcome(deleted=1))
    assert {c["type"]: c["reason"] for c in update.status["conditions"]} == {
        "Suspended": "JobSuspended"
    }
    assert "startTime" not in update.status
