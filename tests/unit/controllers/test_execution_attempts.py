"""KEP-1282 execution attempts in the planner, named after the KEP's unit test plan.

Each pass feeds the status the previous one planned back into the JobSet, as the cache would
after the status write.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from jobset.api import constants as c
from jobset.controllers.jobs import resume_patch
from jobset.controllers.plan import Plan, PlanInput, plan

from .helpers import NOW, all_children, child, cond, jobset, rjob, ts

KEY = c.EXECUTION_ATTEMPT_KEY
ON = {c.FEATURE_EXECUTION_ATTEMPTS_TRACKING: True}
OFF = {c.FEATURE_EXECUTION_ATTEMPTS_TRACKING: False}


def _plan(
    js: dict[str, Any], jobs: list[dict[str, Any]] | None = None, features: Any = None
) -> Plan:
    return plan(
        PlanInput(jobset=js, jobs=jobs or [], now=NOW, service_exists=True, features=features or ON)
    )


def _suspended_condition(status: str = "True") -> dict[str, Any]:
    reason = "SuspendedJobs" if status == "True" else "ResumeJobs"
    return {
        "type": "Suspended",
        "status": status,
        "reason": reason,
        "message": "jobset is suspended",
        "lastTransitionTime": ts(-9),
    }


def _attempts(p: Plan) -> Any:
    return p.status.get("executionAttempts")


def _stamped(job: dict[str, Any]) -> tuple[str | None, str | None]:
    """The execution-attempt annotation of a Job and of its pod template."""
    pod_meta = job["spec"]["template"]["metadata"]
    return (job["metadata"]["annotations"].get(KEY), pod_meta["annotations"].get(KEY))


def _resumed(js: dict[str, Any], p: Plan) -> list[dict[str, Any]]:
    """The Jobs of `p.resume_jobs` as the API server holds them after the patch."""
    out = []
    for r in p.resume_jobs:
        job = child(js, r.job["metadata"]["labels"][c.REPLICATED_JOB_NAME_KEY], 0, suspend=False)
        job["metadata"]["annotations"].update(r.patch["metadata"]["annotations"])
        pod_meta = job["spec"]["template"]["metadata"]
        pod_meta["annotations"].update(r.patch["spec"]["template"]["metadata"]["annotations"])
        out.append(job)
    return out


# ------------------------------------------------------------------ initialization and upgrade


@pytest.mark.parametrize(
    ("status", "jobs_exist", "want"),
    [
        pytest.param({}, False, 0, id="new-jobset-starts-at-zero"),
        pytest.param({"restarts": 2}, True, 2, id="running-with-restarts-migrates-to-restarts"),
        pytest.param({"restarts": 0}, True, 0, id="running-without-restarts-migrates-to-zero"),
        pytest.param({"restarts": 3}, False, 3, id="restarts-without-jobs-migrates-to-restarts"),
    ],
)
def test_initialization_and_upgrade_migration(
    status: dict[str, Any], jobs_exist: bool, want: int
) -> None:
    js = jobset(rjob("a", 1), status=status or None)
    jobs = [child(js, "a", 0, ready=1)] if jobs_exist else []
    p = _plan(js, jobs)
    assert _attempts(p) == want
    assert p.status_changed
    assert p.status.get("restarts", 0) <= _attempts(p)


def test_created_jobs_carry_the_initialized_attempt() -> None:
    js = jobset(rjob("a", 2), status={"restarts": 2})
    p = _plan(js)
    assert [_stamped(j) for j in p.create_jobs] == [("2", "2"), ("2", "2")]


def test_initially_suspended_jobset_stays_unset_until_first_resume() -> None:
    js = jobset(rjob("a", 1), suspend=True)
    p = _plan(js)
    assert "executionAttempts" not in p.status
    # Jobs created suspended carry the value a never-run JobSet defaults to.
    assert [_stamped(j) for j in p.create_jobs] == [("0", "0")]
    stored = jobset(rjob("a", 1), status=p.status)
    resumed = _plan(stored, [child(stored, "a", 0, suspend=True)])
    assert _attempts(resumed) == 0
    assert resumed.resume_jobs[0].patch["metadata"]["annotations"] == {KEY: "0"}


# ------------------------------------------------------------------ increments


def test_increment_on_resume_once_per_suspend_resume_cycle() -> None:
    status = {"restarts": 0, "executionAttempts": 0, "conditions": [_suspended_condition()]}
    js = jobset(rjob("a", 1), status=status)
    p = _plan(js, [child(js, "a", 0, suspend=True)])
    assert _attempts(p) == 1
    assert (cond(p.status, "Suspended") or {}).get("status") == "False"
    # The next passes see the written status: the Job runs, nothing more is counted.
    js = jobset(rjob("a", 1), status=p.status)
    for _ in range(3):
        again = _plan(js, _resumed(js, p))
        assert _attempts(again) == 1
        assert again.resume_jobs == []


def test_increment_idempotency_across_repeated_reconciliation() -> None:
    """A pass whose status write is lost (conflict, crash) is planned again from the same
    stored status: it stamps and counts the same attempt, never one more."""
    status = {"restarts": 1, "executionAttempts": 4, "conditions": [_suspended_condition()]}
    js = jobset(rjob("a", 2), status=status)
    jobs = all_children(js, suspend=True)
    first = _plan(js, jobs)
    # The Jobs were resumed, the status write failed: the cache shows them running.
    retried = _plan(js, [child(js, "a", i, suspend=False, ready=1) for i in range(2)])
    replay = _plan(js, jobs)
    assert _attempts(first) == _attempts(retried) == _attempts(replay) == 5
    assert [r.patch["metadata"]["annotations"][KEY] for r in first.resume_jobs] == ["5", "5"]
    assert first.resume_jobs[0].patch == replay.resume_jobs[0].patch


def test_in_order_resume_stamps_every_replicated_job_with_one_attempt() -> None:
    status = {"executionAttempts": 2, "conditions": [_suspended_condition()]}
    js = jobset(
        rjob("a", 1),
        rjob("b", 1),
        startupPolicy={"startupPolicyOrder": "InOrder"},
        status=status,
    )
    first = _plan(js, [child(js, "a", 0, suspend=True), child(js, "b", 0, suspend=True)])
    # Suspended stays True until every ReplicatedJob started: the count waits with it.
    assert _attempts(first) == 2
    js = {**js, "status": first.status}
    second = _plan(js, [child(js, "a", 0, ready=1, suspend=False), child(js, "b", 0, suspend=True)])
    stamped = [r.patch["metadata"]["annotations"][KEY] for r in first.resume_jobs]
    stamped += [r.patch["metadata"]["annotations"][KEY] for r in second.resume_jobs]
    assert stamped == ["3", "3"]
    assert _attempts(second) == 2
    js = {**js, "status": second.status}
    running = [child(js, name, 0, ready=1, suspend=False) for name in ("a", "b")]
    third = _plan(js, running)
    assert (cond(third.status, "Suspended") or {}).get("status") == "False"
    assert _attempts(third) == 3
    js = {**js, "status": third.status}
    assert _attempts(_plan(js, running)) == 3


def test_increment_on_restart_once_per_restart_event() -> None:
    js = jobset(rjob("a", 2), failurePolicy={"maxRestarts": 3}, status={"executionAttempts": 1})
    jobs = [child(js, "a", 0, state="failed"), child(js, "a", 1, ready=1)]
    p = _plan(js, jobs)
    assert p.status["restarts"] == 1
    assert _attempts(p) == 2
    assert _attempts(_plan(js, jobs)) == 2  # the same pass again counts the same restart
    # Later passes: the previous Jobs go, the new ones carry the new attempt.
    js = {**js, "status": p.status}
    assert _attempts(_plan(js, jobs)) == 2
    recreated = _plan(js, [])
    assert [_stamped(j) for j in recreated.create_jobs] == [("2", "2"), ("2", "2")]
    assert _attempts(recreated) == 2


def test_restart_of_an_untracked_jobset_counts_from_its_restarts() -> None:
    js = jobset(rjob("a", 1), failurePolicy={"maxRestarts": 5}, status={"restarts": 2})
    p = _plan(js, [child(js, "a", 0, state="failed")])
    assert (p.status["restarts"], _attempts(p)) == (3, 3)


def test_failed_jobset_does_not_count_an_attempt() -> None:
    js = jobset(rjob("a", 1), status={"executionAttempts": 0})
    p = _plan(js, [child(js, "a", 0, state="failed")])
    assert p.finished == c.TERMINAL_STATE_FAILED
    assert _attempts(p) == 0


def test_restart_job_action_is_not_an_execution_attempt() -> None:
    policy = {"maxRestarts": 3, "rules": [{"action": "RestartJob"}]}
    js = jobset(rjob("a", 2), failurePolicy=policy, status={"executionAttempts": 0})
    jobs = [child(js, "a", 0, state="failed", restart_job=True), child(js, "a", 1, ready=1)]
    features = {**ON, c.FEATURE_RESTART_JOB: True}
    assert _attempts(_plan(js, jobs, features)) == 0


# ------------------------------------------------------------------ propagation


def test_annotation_propagation_in_job_construction() -> None:
    js = jobset(rjob("a", 2), rjob("b", 1), status={"executionAttempts": 7})
    p = _plan(js)
    assert _attempts(p) == 7
    assert [_stamped(j) for j in p.create_jobs] == [("7", "7")] * 3
    for job in p.create_jobs:  # an annotation, never a label
        assert KEY not in job["metadata"]["labels"]
        assert KEY not in job["spec"]["template"]["metadata"]["labels"]
    # The encoded bodies the controller sends carry it too.
    for new in p.create_jobs.encoded():
        body = orjson.loads(new.body or b"{}")
        assert _stamped(body) == ("7", "7")


def test_resume_patch_sets_the_annotation_with_suspend_false() -> None:
    js = jobset(rjob("a", 1))
    job = child(js, "a", 0, suspend=True)
    patch = resume_patch(job, js["spec"]["replicatedJobs"][0], execution_attempt=3)
    assert patch["spec"]["suspend"] is False
    assert patch["metadata"]["annotations"] == {KEY: "3"}
    assert patch["spec"]["template"]["metadata"]["annotations"][KEY] == "3"
    without_template = resume_patch(job, None, execution_attempt=3)
    assert without_template["spec"]["template"]["metadata"]["annotations"] == {KEY: "3"}


# ------------------------------------------------------------------ gate off


def test_feature_gate_disabled_behavior() -> None:
    status = {"restarts": 1, "conditions": [_suspended_condition()]}
    js = jobset(rjob("a", 1), failurePolicy={"maxRestarts": 3}, status=status)
    resumed = _plan(js, [child(js, "a", 0, suspend=True)], OFF)
    assert "executionAttempts" not in resumed.status
    assert KEY not in resumed.resume_jobs[0].patch.get("metadata", {}).get("annotations", {})
    pod_meta = resumed.resume_jobs[0].patch["spec"]["template"]["metadata"]
    assert KEY not in pod_meta["annotations"]
    created = _plan(jobset(rjob("a", 1)), [], OFF)
    assert "executionAttempts" not in created.status
    assert [_stamped(j) for j in created.create_jobs] == [(None, None)]
    restarted = _plan(js, [child(js, "a", 0, state="failed")], OFF)
    assert restarted.status["restarts"] == 2
    assert "executionAttempts" not in restarted.status


def test_gate_is_off_by_default() -> None:
    assert c.DEFAULT_FEATURE_GATES[c.FEATURE_EXECUTION_ATTEMPTS_TRACKING] is False
    p = plan(PlanInput(jobset=jobset(rjob("a", 1)), jobs=[], now=NOW, service_exists=True))
    assert "executionAttempts" not in p.status
    assert [_stamped(j) for j in p.create_jobs] == [(None, None)]


@pytest.mark.parametrize(
    "stored",
    [
        pytest.param("7", id="string"),
        pytest.param(True, id="bool"),
        pytest.param(-3, id="negative"),
        pytest.param(1.5, id="float"),
        pytest.param({"n": 1}, id="object"),
    ],
)
def test_a_stored_value_that_is_not_a_count_starts_again_from_restarts(stored: Any) -> None:
    """A status written past the schema (by hand, or by another writer) is not a count: the
    counter starts again from `status.restarts`, as the upgrade rule would."""
    js = jobset(rjob("a", 1), status={"restarts": 2, "executionAttempts": stored})
    p = _plan(js, [child(js, "a", 0, ready=1)])
    assert _attempts(p) == 2
    resumed = jobset(
        rjob("a", 1),
        status={"restarts": 2, "executionAttempts": stored, "conditions": [_suspended_condition()]},
    )
    r = _plan(resumed, [child(resumed, "a", 0, suspend=True)])
    assert r.resume_jobs[0].patch["metadata"]["annotations"] == {KEY: "2"}
