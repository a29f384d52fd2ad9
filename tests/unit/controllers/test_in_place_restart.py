"""InPlaceRestart's decisions from the pods' attempts (upstream in_place_restart_test.go and
the KEP's integration cases), alone and through the planner."""

from __future__ import annotations

from typing import Any

from jobset.controllers.conditions import StatusUpdate
from jobset.controllers.in_place_restart import (
    expected_pods,
    max_container_restarts,
    pod_attempts,
    reconcile_in_place_restart,
)
from jobset.controllers.plan import PlanInput, plan

from .helpers import NOW, all_children, cond, jobset, rjob

GATE = {"InPlaceRestart": True}
ATTEMPT = "jobset.sigs.k8s.io/in-place-restart-attempt"


def in_place_jobset(status: dict[str, Any] | None = None, max_restarts: int = 3) -> dict[str, Any]:
    """2 Jobs x 2 pods, as the webhook requires for in-place restart."""
    spec = {
        "backoffLimit": 2147483647,
        "podReplacementPolicy": "Failed",
    }
    return jobset(
        rjob("w", 2, parallelism=2, completions=2, job=spec),
        status=status,
        failurePolicy={"maxRestarts": max_restarts, "restartStrategy": "InPlaceRestart"},
    )


def pod(name: str, attempt: int | str | None, phase: str = "Running", restarts: int = 0) -> Any:
    anns = {} if attempt is None else {ATTEMPT: str(attempt)}
    return {
        "metadata": {"name": name, "namespace": "default", "annotations": anns},
        "status": {
            "phase": phase,
            "containerStatuses": [{"name": "worker", "restartCount": restarts}],
        },
    }


def pods(*attempts: int | str | None) -> list[Any]:
    return [pod(f"p{i}", a) for i, a in enumerate(attempts)]


def run(js: dict[str, Any], ps: list[Any]) -> tuple[StatusUpdate, Any]:
    update = StatusUpdate.of(js, NOW)
    update.changed = False
    return update, reconcile_in_place_restart(js, ps, update)


def test_expected_pods_and_attempts() -> None:
    js = in_place_jobset()
    assert expected_pods(js) == 4
    attempts, invalid = pod_attempts(
        [pod("a", 1), pod("b", None), pod("c", 2, phase="Failed"), pod("d", "x"), pod("e", -1)]
    )
    assert (attempts, invalid) == ([1], ["d", "e"])
    assert max_container_restarts([pod("a", 0, restarts=2), pod("b", 0)]) == 2


def test_all_pods_just_in_sync_lift_the_barrier() -> None:
    update, out = run(in_place_jobset(), pods(0, 0, 0, 0))
    assert out.current == 0 and update.status["currentInPlaceRestartAttempt"] == 0
    assert update.changed and not update.events  # the first start is not an event


def test_all_pods_in_sync_again_is_idempotent() -> None:
    js = in_place_jobset({"currentInPlaceRestartAttempt": 2, "previousInPlaceRestartAttempt": 1})
    update, out = run(js, pods(2, 2, 2, 2))
    assert out.current is None and not update.changed


def test_not_all_pods_present_waits() -> None:
    update, out = run(in_place_jobset(), pods(0, 0, 0, None))
    assert out.current is None and out.previous is None and not update.changed


def test_one_pod_restarted_triggers_a_group_restart() -> None:
    js = in_place_jobset({"currentInPlaceRestartAttempt": 0})
    update, out = run(js, pods(1, 0, 0, 0))
    assert out.previous == 0
    assert update.status["previousInPlaceRestartAttempt"] == 0
    assert update.status["currentInPlaceRestartAttempt"] == 0  # barrier stays until all catch up
    assert [e.reason for e in update.events] == ["InPlaceRestartStarted"]


def test_second_pod_reaching_new_attempt_changes_nothing() -> None:
    js = in_place_jobset({"currentInPlaceRestartAttempt": 0, "previousInPlaceRestartAttempt": 0})
    update, out = run(js, pods(1, 1, 0, 0))
    assert out.previous is None and not update.changed


def test_group_restart_completes_when_all_reach_the_attempt() -> None:
    js = in_place_jobset({"currentInPlaceRestartAttempt": 0, "previousInPlaceRestartAttempt": 0})
    update, out = run(js, pods(1, 1, 1, 1))
    assert out.current == 1 and update.status["currentInPlaceRestartAttempt"] == 1
    assert [e.reason for e in update.events] == ["InPlaceRestartCompleted"]


def test_previous_is_never_lowered() -> None:
    js = in_place_jobset({"currentInPlaceRestartAttempt": 2, "previousInPlaceRestartAttempt": 2})
    update, out = run(js, pods(2, 2, 3, None))  # a replacement pod not annotated yet
    assert out.previous is None and not update.changed


def test_failed_pods_do_not_count() -> None:
    js = in_place_jobset({"currentInPlaceRestartAttempt": 0})
    ps = [*pods(1, 1, 1), pod("old", 0, phase="Failed"), pod("new", 1)]
    _update, out = run(js, ps)
    assert out.current == 1


def test_attempt_over_max_restarts_fails_the_jobset() -> None:
    js = in_place_jobset({"currentInPlaceRestartAttempt": 2}, max_restarts=2)
    update, out = run(js, pods(3, 2, 2, 2))
    assert out.failed
    failed = cond(update.status, "Failed")
    assert failed is not None and failed["reason"] == "ReachedMaxRestarts"


def test_uncounted_full_restarts_do_not_count_toward_max() -> None:
    js = in_place_jobset(
        {"currentInPlaceRestartAttempt": 2, "restarts": 1, "restartsCountTowardsMax": 0},
        max_restarts=2,
    )
    _update, out = run(js, pods(3, 2, 2, 2))
    assert not out.failed and out.previous == 2


def test_container_restarting_too_often_fails_the_jobset() -> None:
    """A worker failing before any barrier lifts never raises an attempt: its container
    restart count is the limit then."""
    js = in_place_jobset(max_restarts=1)
    ps = [pod("a", 0, restarts=2), *pods(0, 0, 0)]
    _update, out = run(js, ps)
    assert out.failed


def _plan(js: dict[str, Any], ps: list[Any], features: dict[str, bool] | None = None) -> Any:
    jobs = all_children(js, ready=2, active=2)
    return plan(
        PlanInput(
            jobset=js,
            jobs=jobs,
            now=NOW,
            service_exists=True,
            features=GATE if features is None else features,
            pods=ps,
        )
    )


def test_plan_writes_attempts_and_counts_in_place_restart() -> None:
    js = in_place_jobset({"currentInPlaceRestartAttempt": 0})
    p = _plan(js, pods(1, 0, 0, 0))
    assert p.in_place is not None and p.in_place.previous == 0
    assert p.status["previousInPlaceRestartAttempt"] == 0 and p.status_changed
    assert p.create_jobs == [] and p.delete_jobs == []  # no Job is touched


def test_plan_fails_jobset_over_max_restarts() -> None:
    js = in_place_jobset({"currentInPlaceRestartAttempt": 3}, max_restarts=3)
    p = _plan(js, pods(4, 3, 3, 3))
    assert p.finished == "Failed"


def test_plan_ignores_in_place_logic_without_the_gate_or_strategy() -> None:
    js = in_place_jobset({"currentInPlaceRestartAttempt": 0})
    # gate off: nothing runs in place (validation refuses the strategy without the gate)
    p = _plan(js, pods(1, 0, 0, 0), features={})
    assert p.in_place is None
    recreate = jobset(failurePolicy={"maxRestarts": 3})
    p = plan(PlanInput(jobset=recreate, jobs=[], now=NOW, features=GATE, pods=pods(1, 0)))
    assert p.in_place is None


def test_failed_job_falls_back_to_recreate() -> None:
    """A Job that fails despite the max backoffLimit (a deadline, a FailJob rule) restarts
    the JobSet as Recreate does; the in-place logic does not run on that pass."""
    from .helpers import child

    js = in_place_jobset({"currentInPlaceRestartAttempt": 1})
    jobs = all_children(js, ready=2, active=2)
    jobs[0] = child(js, "w", 0, state="failed", reason="DeadlineExceeded")
    p = plan(
        PlanInput(
            jobset=js, jobs=jobs, now=NOW, service_exists=True, features=GATE, pods=pods(2, 1)
        )
    )
    assert p.status["restarts"] == 1 and p.failure is not None
    assert p.in_place is None
