"""The Job cache record (`job_record`): small, shared where Jobs agree, and every decision a
reconcile or planned placement makes on it is the one it makes on the full Job."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from jobset.api import constants as c
from jobset.controllers.jobcache import job_record
from jobset.controllers.plan import Plan, PlanInput, plan
from jobset.placement.holdings import holding_of
from jobset.placement.strategy import DOMAIN_KEY, PRIORITY_ANNOTATION, STRATEGY_KEY
from jobset.runtime.cache import index_by_controller_uid, object_key

from .helpers import NOW, all_children, child, jobset, rjob, ts

Job = dict[str, Any]


def _as_stored(job: Job) -> Job:
    """What the API server adds that nobody reads."""
    job = copy.deepcopy(job)
    meta = job["metadata"]
    meta["managedFields"] = [{"manager": "jobset-controller", "fieldsV1": {"f:spec": {}}}]
    meta["generation"] = 1
    meta["creationTimestamp"] = ts()
    meta["labels"]["batch.kubernetes.io/controller-uid"] = meta["uid"]
    job["spec"]["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": meta["uid"]}}
    job["spec"]["podReplacementPolicy"] = "TerminatingOrFailed"
    job["status"]["terminating"] = 0
    job["status"]["uncountedTerminatedPods"] = {}
    job["status"].setdefault("startTime", ts(1))
    for cond in job["status"].get("conditions") or []:
        cond["lastProbeTime"] = ts(2)
    job["status"].setdefault("conditions", []).append(
        {"type": "SuccessCriteriaMet", "status": "False", "lastTransitionTime": ts(3)}
    )
    return job


def test_running_job_record() -> None:
    js = jobset(rjob("a", 2))
    jobs = [_as_stored(child(js, "a", i, ready=1, active=1)) for i in range(2)]
    first, second = (job_record(copy.deepcopy(j)) for j in jobs)
    meta = first["metadata"]
    assert set(meta) == {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "labels",
        "ownerReferences",
    }
    assert set(meta["labels"]) == {
        c.JOBSET_NAME_KEY,
        c.REPLICATED_JOB_NAME_KEY,
        c.RESTART_ATTEMPT_KEY,
        c.JOB_INDEX_KEY,
    }
    assert first["spec"] == {"parallelism": 1, "completions": 1, "suspend": False}
    assert first["status"] == {"active": 1, "ready": 1, "succeeded": 0, "conditions": []}
    assert meta["ownerReferences"] == jobs[0]["metadata"]["ownerReferences"]
    # What the two Jobs have in common is one object.
    for path in (("spec",), ("status",), ("metadata", "ownerReferences")):
        a, b = first, second
        for part in path:
            a, b = a[part], b[part]
        assert a is b, path
    assert meta["namespace"] is second["metadata"]["namespace"]
    assert object_key(first) == object_key(jobs[0])
    assert index_by_controller_uid(first) == index_by_controller_uid(jobs[0])


def test_suspended_job_keeps_what_resume_reads() -> None:
    js = jobset(rjob("a"))
    job = _as_stored(child(js, "a", 0, suspend=True))
    job["spec"]["template"]["spec"]["tolerations"] = [{"key": "t"}]
    slim = job_record(copy.deepcopy(job))
    template = slim["spec"]["template"]
    assert template["metadata"] == {
        k: job["spec"]["template"]["metadata"][k] for k in ("labels", "annotations")
    }
    # Each container's name and resources too (KEP-1150's resume compares them), no more.
    containers = [
        {"name": ct["name"], "resources": ct.get("resources") or {}}
        for ct in job["spec"]["template"]["spec"]["containers"]
    ]
    assert template["spec"] == {"tolerations": [{"key": "t"}], "containers": containers}
    assert slim["status"]["startTime"] == job["status"]["startTime"]
    # Equal containers of two suspended Jobs are one shared copy.
    other = job_record(_as_stored(child(js, "a", 1, suspend=True)))
    assert other["spec"]["template"]["spec"]["containers"] is template["spec"]["containers"]


def test_conditions_kept_are_those_read() -> None:
    js = jobset(rjob("a", 2))
    done = job_record(_as_stored(child(js, "a", 0, state="succeeded", succeeded=1)))
    assert done["status"]["conditions"] == [{"type": "Complete", "status": "True"}]
    failed = job_record(_as_stored(child(js, "a", 1, state="failed", reason="R", message="m")))
    assert failed["status"]["conditions"] == [
        {
            "type": "Failed",
            "status": "True",
            "reason": "R",
            "message": "m",
            "lastTransitionTime": ts(0),
        }
    ]


def test_types_are_not_merged_by_sharing() -> None:
    """`True == 1` in Python: a shared record must still hold the Job's own JSON types."""
    js = jobset(rjob("a"))
    job = _as_stored(child(js, "a", 0))
    one = copy.deepcopy(job)
    one["spec"].update(parallelism=True, completions=1)
    two = copy.deepcopy(job)
    two["spec"].update(parallelism=1, completions=1)
    assert job_record(one)["spec"]["parallelism"] is True
    assert job_record(two)["spec"]["parallelism"] is not True


# ------------------------------------------------------------------ same decisions


def _summary(p: Plan) -> dict[str, Any]:
    """Everything a pass does, as comparable data."""
    return {
        "skip": p.skip,
        "delete": [(j["metadata"]["name"], j["metadata"]["uid"]) for j in p.delete_jobs],
        "create": list(p.create_jobs),
        "scale": [(j["metadata"]["name"], patch) for j, patch in p.scale_jobs],
        "suspend": [j["metadata"]["name"] for j in p.suspend_jobs],
        "resume": [(r.job["metadata"]["name"], r.patch, r.clear_start_time) for r in p.resume_jobs],
        "status": p.status,
        "status_changed": p.status_changed,
        "events": p.events,
        "finished": p.finished,
        "all_ready": p.all_ready,
        "failure": p.failure,
        "requeue_after": p.requeue_after,
    }


def _cases() -> list[tuple[str, dict[str, Any], list[Job], dict[str, bool]]]:
    restart = {c.FEATURE_RESTART_JOB: True}
    elastic = {c.FEATURE_ELASTIC_JOBSET: True}
    cases: list[tuple[str, dict[str, Any], list[Job], dict[str, bool]]] = []

    js = jobset(rjob("a", 3), rjob("b", 2))
    jobs = all_children(js, ready=1, active=1)
    jobs[1]["status"].update(ready=0)
    cases.append(("running", js, jobs, {}))

    js = jobset(rjob("a", 2), rjob("b", 1))
    jobs = all_children(js, state="succeeded", succeeded=1)
    cases.append(("completed", js, jobs, {}))

    js = jobset(
        rjob("a", 3),
        failurePolicy={
            "maxRestarts": 3,
            "rules": [
                {
                    "name": "oom",
                    "action": "FailJobSet",
                    "onJobFailureReasons": ["PodFailurePolicy"],
                    "onJobFailureMessagePatterns": ["OOM"],
                }
            ],
        },
    )
    jobs = [
        child(
            js, "a", 0, state="failed", reason="PodFailurePolicy", message="OOMKilled", failed_at=5
        ),
        child(js, "a", 1, state="failed", failed_at=2),
        child(js, "a", 2, ready=1, active=1),
    ]
    cases.append(("failure policy", js, jobs, {}))

    js = jobset(
        rjob("a", 2),
        failurePolicy={"maxRestarts": 3, "rules": [{"name": "r", "action": "RestartJob"}]},
    )
    jobs = [
        child(js, "a", 0, state="failed", restart_job=True),
        child(js, "a", 1, restart_job=True),
    ]
    cases.append(("restart job", js, jobs, restart))

    js = jobset(rjob("a", 3), status={"restarts": 1})
    jobs = [child(js, "a", i) for i in range(3)]
    for job in jobs[:2]:
        job["metadata"]["labels"][c.RESTART_ATTEMPT_KEY] = "0"
    jobs[0]["metadata"]["deletionTimestamp"] = ts(1)
    cases.append(("previous attempt", js, jobs, {}))

    js = jobset(rjob("a", 2), failurePolicy={"maxRestarts": 3}, status={"restarts": 1})
    js["spec"]["failurePolicy"]["restartStrategy"] = c.RESTART_STRATEGY_BLOCKING_RECREATE
    jobs = [child(js, "a", 0)]
    jobs[0]["metadata"]["labels"][c.RESTART_ATTEMPT_KEY] = "0"
    cases.append(("blocking recreate", js, jobs, {}))

    js = jobset(rjob("a", 2), suspend=True)
    cases.append(("suspend", js, all_children(js, ready=1, active=1), {}))

    js = jobset(rjob("a", 2))
    js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"] = {
        "labels": {"kueue": "flavor"},
        "annotations": {"a": "b"},
    }
    js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["nodeSelector"] = {
        "pool": "x"
    }
    jobs = all_children(js, suspend=True)
    jobs[0]["status"]["startTime"] = ts(1)
    jobs[1]["spec"]["template"]["spec"]["tolerations"] = [{"key": "t"}]
    cases.append(("resume", js, jobs, {}))

    js = jobset(rjob("a", 2, parallelism=4, completions=4))
    jobs = all_children(js, ready=1, active=1)
    for job in jobs:
        job["spec"].update(parallelism=2, completions=2)
    cases.append(("elastic", js, jobs, elastic))

    js = jobset(rjob("a", 2), rjob("b", 2, dependsOn=[{"name": "a", "status": "Ready"}]))
    jobs = [child(js, "a", 0, ready=1, active=1), child(js, "a", 1)]
    cases.append(("depends on", js, jobs, {}))
    return cases


@pytest.mark.parametrize(("name", "js", "jobs", "features"), _cases(), ids=lambda v: v)
def test_plan_is_the_same_on_records(
    name: str, js: dict[str, Any], jobs: list[Job], features: dict[str, bool]
) -> None:
    full = [_as_stored(j) for j in jobs]
    slim = [job_record(copy.deepcopy(j)) for j in full]
    converged = plan(PlanInput(js, full, NOW, True, features=features)).status
    for js_state in (js, {**js, "status": converged}):
        on_full = plan(PlanInput(js_state, full, NOW, True, features=features))
        on_slim = plan(PlanInput(js_state, slim, NOW, True, features=features))
        assert _summary(on_slim) == _summary(on_full), name


def test_placement_reads_the_same_on_records() -> None:
    js = jobset(rjob("a", 2))
    job = _as_stored(child(js, "a", 0, ready=1, active=1))
    job["metadata"]["labels"][DOMAIN_KEY] = "rack-1"
    job["metadata"]["annotations"][c.EXCLUSIVE_KEY] = "topology.kubernetes.io/rack"
    job["metadata"]["annotations"][PRIORITY_ANNOTATION] = "100"
    job["metadata"]["annotations"][DOMAIN_KEY] = "rack-1"
    job["metadata"]["annotations"][STRATEGY_KEY] = "planned"
    slim = job_record(copy.deepcopy(job))

    def held(j: Any) -> Any:
        return holding_of(j, lambda ns, name, uid: (ns, name) == ("default", "js"))

    assert held(slim) == held(job) is not None
    assert slim["metadata"]["creationTimestamp"] == job["metadata"]["creationTimestamp"]
    assert slim["metadata"]["labels"][c.JOBSET_NAME_KEY] == "js"
    done = copy.deepcopy(job)
    done["status"]["conditions"] = [{"type": "Complete", "status": "True"}]
    assert held(job_record(copy.deepcopy(done))) is None and held(done) is None


def test_shared_status_keeps_the_shape_of_each_job() -> None:
    js = jobset(rjob("a", 2))
    without = child(js, "a", 0, ready=1, active=1)
    other = child(js, "a", 1, ready=1, active=1)
    other["status"]["conditions"] = [{"type": "SuccessCriteriaMet", "status": "False"}]
    assert "conditions" not in job_record(copy.deepcopy(without))["status"]
    assert job_record(copy.deepcopy(other))["status"]["conditions"] == []
    assert "conditions" not in job_record(copy.deepcopy(without))["status"]
