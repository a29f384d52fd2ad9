"""The pure planner, pass by pass (upstream jobset_controller.go reconcile)."""

from __future__ import annotations

from typing import Any

from jobset.controllers.plan import Plan, PlanInput, plan

from .helpers import NOW, all_children, child, cond, jobset, rjob, ts


def _plan(js: dict[str, Any], jobs: list[dict[str, Any]] | None = None, **kw: Any) -> Plan:
    kw.setdefault("service_exists", True)
    return plan(PlanInput(jobset=js, jobs=jobs or [], now=NOW, **kw))


def _names(jobs: list[dict[str, Any]]) -> list[str]:
    return sorted(j["metadata"]["name"] for j in jobs)


def _steady_status(js: dict[str, Any], jobs: list[dict[str, Any]]) -> dict[str, Any]:
    """The status the planner converges to, stored back on the JobSet."""
    first = _plan(js, jobs)
    js = {**js, "status": first.status}
    return js


# ------------------------------------------------------------------ skips


def test_deleting_and_foreign_managed_jobsets_are_skipped() -> None:
    js = jobset()
    js["metadata"]["deletionTimestamp"] = ts()
    assert _plan(js).skip == "deleting"
    other = jobset(managedBy="kueue.x-k8s.io/multikueue")
    p = _plan(other)
    assert p.skip is not None and not p.has_writes
    ours = jobset(managedBy="jobset.sigs.k8s.io/jobset-controller")
    assert _plan(ours).skip is None


# ------------------------------------------------------------------ creation


def test_new_jobset_creates_all_jobs_and_service() -> None:
    js = jobset()
    p = _plan(js, service_exists=False)
    assert _names(p.create_jobs) == ["js-a-0", "js-a-1", "js-b-0", "js-b-1"]
    assert p.create_service is not None and p.create_service["metadata"]["name"] == "js"
    assert p.status_changed  # replicatedJobsStatus appears
    assert [s["name"] for s in p.status["replicatedJobsStatus"]] == ["a", "b"]
    assert p.events == []


def test_jobs_created_but_not_yet_cached_are_not_created_again() -> None:
    js = jobset()
    p = _plan(js, awaited_jobs=frozenset({"js-a-0", "js-b-1"}))
    assert _names(p.create_jobs) == ["js-a-1", "js-b-0"]
    # Only creation is affected: the counts still come from the Jobs in the cache.
    assert [s.get("active", 0) for s in p.status["replicatedJobsStatus"]] == [0, 0]


def test_steady_state_plans_nothing() -> None:
    js = jobset()
    jobs = all_children(js, ready=1, active=1)
    js = _steady_status(js, jobs)
    p = _plan(js, jobs)
    assert not p.has_writes, p
    assert p.all_ready


def test_service_not_created_without_dns_hostnames() -> None:
    js = jobset(network={"enableDNSHostnames": False})
    assert _plan(js, service_exists=False).create_service is None


def test_defaults_applied_to_jobsets_stored_without_webhook() -> None:
    js = jobset()
    del js["spec"]["network"]
    del js["spec"]["successPolicy"]
    p = _plan(js, service_exists=False)
    assert p.create_service is not None
    assert p.create_jobs[0]["spec"]["template"]["spec"]["subdomain"] == "js"


def test_missing_pvcs_created() -> None:
    claim = {"metadata": {"name": "c"}, "spec": {"accessModes": ["ReadWriteOnce"]}}
    js = jobset(volumeClaimPolicies=[{"templates": [claim]}])
    assert _names(_plan(js).create_pvcs) == ["c-js"]
    assert _plan(js, existing_pvcs=frozenset({"c-js"})).create_pvcs == []


# ------------------------------------------------------------------ success


def test_success_all() -> None:
    js = jobset()
    p = _plan(js, all_children(js, state="succeeded"))
    completed = cond(p.status, "Completed")
    assert completed is not None
    assert (completed["reason"], completed["message"]) == (
        "AllJobsCompleted",
        "jobset completed successfully",
    )
    assert completed["lastTransitionTime"] == ts()
    assert p.status["terminalState"] == "Completed"
    assert p.finished == "Completed"
    assert p.create_jobs == [] and p.create_service is None


def test_not_completed_while_any_job_runs() -> None:
    js = jobset()
    jobs = all_children(js, state="succeeded")
    jobs[-1] = child(js, "b", 1)
    p = _plan(js, jobs)
    assert cond(p.status, "Completed") is None and p.finished is None


def test_success_all_with_targets_and_any() -> None:
    js = jobset(successPolicy={"operator": "All", "targetReplicatedJobs": ["b"]})
    jobs = [child(js, "a", 0), child(js, "a", 1)]
    jobs += [child(js, "b", i, state="succeeded") for i in range(2)]
    assert _plan(js, jobs).finished == "Completed"
    js_any = jobset(successPolicy={"operator": "Any", "targetReplicatedJobs": ["b"]})
    jobs = [child(js_any, "a", 0, state="succeeded"), child(js_any, "b", 1)]
    assert _plan(js_any, jobs).finished is None
    jobs = [child(js_any, "a", 0), child(js_any, "b", 1, state="succeeded")]
    assert _plan(js_any, jobs).finished == "Completed"
    js_any_all = jobset(successPolicy={"operator": "Any"})
    assert _plan(js_any_all, [child(js_any_all, "a", 1, state="succeeded")]).finished


# ------------------------------------------------------------------ finished


def test_finished_jobset_deletes_active_jobs_only() -> None:
    js = jobset(
        status={"conditions": [{"type": "Failed", "status": "True", "lastTransitionTime": ts()}]}
    )
    jobs = [child(js, "a", 0), child(js, "a", 1, state="failed"), child(js, "b", 0)]
    jobs[2]["metadata"]["deletionTimestamp"] = ts()
    p = _plan(js, jobs)
    assert _names(p.delete_jobs) == ["js-a-0"]
    assert p.create_jobs == [] and not p.delete_jobset and p.requeue_after is None


def test_ttl_requeue_then_delete() -> None:
    status = {
        "conditions": [{"type": "Completed", "status": "True", "lastTransitionTime": ts(-30)}]
    }
    js = jobset(ttlSecondsAfterFinished=100, status=status)
    p = _plan(js)
    assert p.requeue_after == 70 and not p.delete_jobset
    js = jobset(ttlSecondsAfterFinished=10, status=status)
    p = _plan(js)
    assert p.delete_jobset and p.requeue_after is None


# ------------------------------------------------------------------ failure and restarts


def test_restart_then_previous_jobs_deleted_and_recreated() -> None:
    js = jobset(failurePolicy={"maxRestarts": 3})
    jobs = all_children(js, ready=1)
    jobs[0] = child(js, "a", 0, state="failed")
    p = _plan(js, jobs)
    assert p.status["restarts"] == 1 and p.failure is not None
    assert p.create_jobs == [] and p.delete_jobs == []  # the restart is only a counter
    # Next pass: all four are previous and are deleted; none recreated while they exist.
    js = {**js, "status": p.status}
    p2 = _plan(js, jobs)
    assert _names(p2.delete_jobs) == ["js-a-0", "js-a-1", "js-b-0", "js-b-1"]
    assert p2.create_jobs == []
    assert p2.status["restarts"] == 1
    # Recreate: as soon as one is gone it is recreated with the new attempt.
    p3 = _plan(js, jobs[1:])
    assert _names(p3.create_jobs) == ["js-a-0"]
    labels = p3.create_jobs[0]["metadata"]["labels"]
    assert labels["jobset.sigs.k8s.io/restart-attempt"] == "1"


def test_previous_jobs_already_deleted_by_an_earlier_pass_are_not_deleted_again() -> None:
    js = jobset(failurePolicy={"maxRestarts": 3})
    old = all_children(js, active=1)  # restart attempt 0: previous once restarts is 1
    js = {**js, "status": {"restarts": 1}}
    for i, job in enumerate(old):
        job["metadata"]["uid"] = f"uid-{i}"
    first = _plan(js, old)
    assert len(first.delete_jobs) == len(old)
    p = _plan(js, old, deleted_jobs=frozenset({"uid-0", "uid-2"}))
    assert sorted(j["metadata"]["uid"] for j in p.delete_jobs) == ["uid-1", "uid-3"]


def test_blocking_recreate_waits_for_all_previous_jobs() -> None:
    js = jobset(
        failurePolicy={"maxRestarts": 3, "restartStrategy": "BlockingRecreate"},
        status={"restarts": 1},
    )
    old = all_children(js, labels={"jobset.sigs.k8s.io/restart-attempt": "0"})
    assert _plan(js, old[1:]).create_jobs == []
    assert len(_plan(js, []).create_jobs) == 4


def test_previous_jobs_being_deleted_are_not_deleted_again() -> None:
    js = jobset(status={"restarts": 1})
    old = child(js, "a", 0, labels={"jobset.sigs.k8s.io/restart-attempt": "0"})
    old["metadata"]["deletionTimestamp"] = ts()
    assert _plan(js, [old]).delete_jobs == []


def test_restarting_condition_turns_false_when_jobs_ready() -> None:
    status = {
        "restarts": 1,
        "conditions": [
            {
                "type": "RestartingJobSet",
                "status": "True",
                "reason": "FailurePolicy_Rule1",
                "message": "m",
                "lastTransitionTime": ts(-5),
            }
        ],
    }
    js = jobset(status=status)
    half = all_children(js, ready=0)
    assert cond(_plan(js, half).status, "RestartingJobSet")["status"] == "True"  # type: ignore[index]
    p = _plan(js, all_children(js, ready=1))
    restarting = cond(p.status, "RestartingJobSet")
    assert restarting is not None
    assert (restarting["status"], restarting["reason"], restarting["message"]) == (
        "False",
        "JobsReady",
        "all jobs are ready",
    )
    assert [e.reason for e in p.events] == ["JobsReady"]


def test_failed_jobset_ends_restarting_condition() -> None:
    status = {
        "conditions": [
            {
                "type": "RestartingJobSet",
                "status": "True",
                "reason": "DefaultFailurePolicy",
                "message": "m",
                "lastTransitionTime": ts(-5),
            }
        ]
    }
    js = jobset(status=status)
    p = _plan(js, [child(js, "a", 0, state="failed")])
    assert p.finished == "Failed"
    assert cond(p.status, "RestartingJobSet")["reason"] == "JobSetFailed"  # type: ignore[index]


# ------------------------------------------------------------------ validation


def test_invalid_jobset_fails_once_with_warning() -> None:
    js = jobset()
    p = _plan(js, invalid_message='JobSet.jobset.x-k8s.io "js" is invalid: boom')
    failed = cond(p.status, "Failed")
    assert failed is not None and failed["reason"] == "ValidationFailed"
    assert p.events[0].type == "Warning" and p.create_jobs == []
    js = {**js, "status": p.status}
    p2 = _plan(js, [child(js, "a", 0)], invalid_message="again")
    assert _names(p2.delete_jobs) == ["js-a-0"]  # finished: clean up, no new condition
    assert not p2.status_changed


# ------------------------------------------------------------------ startup ordering


def test_in_order_creates_one_replicated_job_at_a_time() -> None:
    js = jobset(rjob("a", 2), rjob("b", 1), startupPolicy={"startupPolicyOrder": "InOrder"})
    p = _plan(js)
    assert _names(p.create_jobs) == ["js-a-0", "js-a-1"]
    in_progress = cond(p.status, "StartupPolicyInProgress")
    assert in_progress is not None and in_progress["reason"] == "InOrderStartupPolicyInProgress"
    jobs = [child(js, "a", 0, ready=1), child(js, "a", 1)]
    assert _plan(js, jobs).create_jobs == []
    jobs = [child(js, "a", 0, ready=1), child(js, "a", 1, ready=1)]
    p = _plan({**js, "status": p.status}, jobs)
    assert _names(p.create_jobs) == ["js-b-0"]
    jobs.append(child(js, "b", 0, ready=1))
    p = _plan({**js, "status": p.status}, jobs)
    completed = cond(p.status, "StartupPolicyCompleted")
    assert completed is not None and completed["status"] == "True"
    assert cond(p.status, "StartupPolicyInProgress")["status"] == "False"  # type: ignore[index]


def test_depends_on_ready_and_complete() -> None:
    js = jobset(
        rjob("a", 2),
        rjob("b", 1, dependsOn=[{"name": "a", "status": "Ready"}]),
        rjob("c", 1, dependsOn=[{"name": "b", "status": "Complete"}]),
    )
    assert _names(_plan(js).create_jobs) == ["js-a-0", "js-a-1"]
    jobs = [child(js, "a", 0, ready=1), child(js, "a", 1)]
    assert _plan(js, jobs).create_jobs == []  # a is not Ready yet
    jobs = [child(js, "a", 0, ready=1), child(js, "a", 1, ready=1)]
    assert _names(_plan(js, jobs).create_jobs) == ["js-b-0"]
    jobs.append(child(js, "b", 0, ready=1))
    assert _plan(js, jobs).create_jobs == []
    jobs[-1] = child(js, "b", 0, state="succeeded")
    assert _names(_plan(js, jobs).create_jobs) == ["js-c-0"]


# ------------------------------------------------------------------ suspend / resume


def test_suspend_running_jobset() -> None:
    js = jobset(suspend=True)
    jobs = all_children(js, suspend=False, ready=1)
    p = _plan(js, jobs)
    assert _names(p.suspend_jobs) == ["js-a-0", "js-a-1", "js-b-0", "js-b-1"]
    suspended = cond(p.status, "Suspended")
    assert suspended is not None
    assert (suspended["status"], suspended["reason"], suspended["message"]) == (
        "True",
        "SuspendedJobs",
        "jobset is suspended",
    )


def test_created_suspended_jobs_are_suspended() -> None:
    p = _plan(jobset(suspend=True))
    assert all(j["spec"]["suspend"] is True for j in p.create_jobs)
    assert p.suspend_jobs == []


def test_resume_clears_start_time_and_sets_resumed() -> None:
    status = {
        "conditions": [
            {
                "type": "Suspended",
                "status": "True",
                "reason": "SuspendedJobs",
                "message": "jobset is suspended",
                "lastTransitionTime": ts(-9),
            }
        ]
    }
    js = jobset(status=status)
    jobs = all_children(js, suspend=True)
    jobs[0]["status"]["startTime"] = ts(-60)
    p = _plan(js, jobs)
    assert _names([r.job for r in p.resume_jobs]) == ["js-a-0", "js-a-1", "js-b-0", "js-b-1"]
    assert [r.clear_start_time for r in p.resume_jobs] == [True, False, False, False]
    resumed = cond(p.status, "Suspended")
    assert resumed is not None
    assert (resumed["status"], resumed["reason"]) == ("False", "ResumeJobs")


def test_resume_in_order_one_replicated_job_at_a_time() -> None:
    js = jobset(rjob("a", 1), rjob("b", 1), startupPolicy={"startupPolicyOrder": "InOrder"})
    jobs = [child(js, "a", 0, suspend=True), child(js, "b", 0, suspend=True)]
    p = _plan(js, jobs)
    assert _names([r.job for r in p.resume_jobs]) == ["js-a-0"]
    assert cond(p.status, "StartupPolicyInProgress") is not None
    jobs = [child(js, "a", 0, ready=1, suspend=False), child(js, "b", 0, suspend=True)]
    p = _plan(js, jobs)
    assert _names([r.job for r in p.resume_jobs]) == ["js-b-0"]


def test_suspend_in_order_keeps_all_jobs_created_and_suspended() -> None:
    js = jobset(
        rjob("a", 1), rjob("b", 1), startupPolicy={"startupPolicyOrder": "InOrder"}, suspend=True
    )
    p = _plan(js)
    assert _names(p.create_jobs) == ["js-a-0", "js-b-0"]
    assert cond(p.status, "StartupPolicyInProgress") is None


# ------------------------------------------------------------------ elastic


def test_elastic_scaling_behind_gate() -> None:
    r = rjob("a", 1, parallelism=4, completions=4)
    js = jobset(r)
    job = child(js, "a", 0, ready=1)
    job["spec"]["parallelism"] = 2
    job["spec"]["completions"] = 2
    assert _plan(js, [job]).scale_jobs == []
    p = _plan(js, [job], features={"ElasticJobSet": True})
    assert p.scale_jobs == [(job, {"spec": {"parallelism": 4, "completions": 4}})]
