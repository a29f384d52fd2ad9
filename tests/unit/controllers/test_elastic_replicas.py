"""The planner after an elastic change of `replicas` (gate ElasticReplicas; the update rules
are in tests/unit/api/test_elastic_replicas.py): new indexes are created at the current
restart attempt, Jobs beyond the new count are deleted and count for nothing."""

from __future__ import annotations

import copy
from typing import Any

from jobset.api import constants as c
from jobset.controllers.plan import Plan, PlanInput, plan

from .helpers import NOW, child, cond, jobset, rjob


def _plan(js: dict[str, Any], jobs: list[dict[str, Any]], **kw: Any) -> Plan:
    return plan(PlanInput(jobset=js, jobs=jobs, now=NOW, service_exists=True, **kw))


def _scaled(js: dict[str, Any], rjob_name: str, replicas: int) -> dict[str, Any]:
    out = copy.deepcopy(js)
    for r in out["spec"]["replicatedJobs"]:
        if r["name"] == rjob_name:
            r["replicas"] = replicas
    return out


def _names(jobs: Any) -> list[str]:
    return sorted(j["metadata"]["name"] for j in jobs)


def test_scale_up_creates_the_new_indexes_at_the_current_restart_attempt() -> None:
    js = jobset(rjob("w", 2), status={"restarts": 3})
    jobs = [child(js, "w", i) for i in range(2)]
    bigger = _scaled(js, "w", 4)
    p = _plan(bigger, jobs)
    assert _names(p.create_jobs) == ["js-w-2", "js-w-3"]
    for job in p.create_jobs:
        labels = job["metadata"]["labels"]
        assert labels[c.RESTART_ATTEMPT_KEY] == "3"
        assert labels[c.REPLICATED_JOB_REPLICAS_KEY] == "4"
    assert p.delete_jobs == []


def test_scale_down_deletes_the_highest_indexes_and_stops_counting_them() -> None:
    js = jobset(rjob("w", 4))
    jobs = [child(js, "w", i, ready=1) for i in range(4)]
    smaller = _scaled(js, "w", 2)
    p = _plan(smaller, jobs)
    assert _names(p.delete_jobs) == ["js-w-2", "js-w-3"]
    assert len(p.create_jobs) == 0
    (status,) = p.status["replicatedJobsStatus"]
    assert status["ready"] == 2
    assert p.all_ready


def test_success_policy_counts_only_the_jobs_that_remain() -> None:
    js = jobset(rjob("w", 3), successPolicy={"operator": "All", "targetReplicatedJobs": ["w"]})
    jobs = [child(js, "w", 0, state="succeeded"), child(js, "w", 1), child(js, "w", 2)]
    assert cond(_plan(js, jobs).status, c.CONDITION_COMPLETED) is None
    assert cond(_plan(_scaled(js, "w", 1), jobs).status, c.CONDITION_COMPLETED) is not None
    # Any: a succeeded Job beyond the new count is being deleted; it does not count.
    anyjs = jobset(rjob("w", 3), successPolicy={"operator": "Any"})
    jobs = [child(anyjs, "w", 0), child(anyjs, "w", 1), child(anyjs, "w", 2, state="succeeded")]
    assert cond(_plan(anyjs, jobs).status, c.CONDITION_COMPLETED) is not None
    assert cond(_plan(_scaled(anyjs, "w", 2), jobs).status, c.CONDITION_COMPLETED) is None


def test_depends_on_waits_for_the_new_count() -> None:
    js = jobset(rjob("a", 1), rjob("b", 1, dependsOn=[{"name": "a", "status": c.DEPENDENCY_READY}]))
    jobs = [child(js, "a", 0, ready=1)]
    assert _names(_plan(js, jobs).create_jobs) == ["js-b-0"]
    # Two Jobs of `a` now: `b` waits until the new one is ready too.
    p = _plan(_scaled(js, "a", 2), jobs)
    assert _names(p.create_jobs) == ["js-a-1"]


def test_per_job_restart_counters_follow_the_new_count() -> None:
    status = {
        "replicatedJobsStatus": [
            {"name": "w", "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0,
             "jobRestarts": [1, 2], "jobRestartsCountTowardsMax": [1, 0]},
        ]
    }  # fmt: skip
    js = jobset(rjob("w", 2), status=status)
    jobs = [child(js, "w", i, restart_job=True) for i in range(2)]
    for job, attempt in zip(jobs, ("1", "2"), strict=True):
        job["metadata"]["labels"][c.JOB_RESTART_ATTEMPT_KEY] = attempt
    up = _plan(_scaled(js, "w", 3), jobs, features={c.FEATURE_RESTART_JOB: True})
    assert _names(up.create_jobs) == ["js-w-2"]  # not deleted as a "previous" attempt
    assert up.delete_jobs == []
    (entry,) = up.status["replicatedJobsStatus"]
    assert entry["jobRestarts"] == [1, 2, 0]
    assert entry["jobRestartsCountTowardsMax"] == [1, 0, 0]
    down = _plan(_scaled(js, "w", 1), jobs, features={c.FEATURE_RESTART_JOB: True})
    assert _names(down.delete_jobs) == ["js-w-1"]
    (entry,) = down.status["replicatedJobsStatus"]
    assert entry["jobRestarts"] == [1] and entry["jobRestartsCountTowardsMax"] == [1]
