"""Classification of child Jobs and replicatedJobsStatus (upstream getChildJobs and
calculateReplicatedJobStatuses)."""

from __future__ import annotations

from typing import Any

import pytest

from jobset.controllers.classify import (
    all_jobs_ready,
    classify,
    replicated_job_statuses,
    statuses_equal,
)

from .helpers import child, jobset, rjob


def _names(jobs: list[dict[str, Any]]) -> list[str]:
    return [j["metadata"]["name"] for j in jobs]


def test_buckets_by_condition() -> None:
    js = jobset(rjob("a", 4))
    jobs = [
        child(js, "a", 0),
        child(js, "a", 1, state="succeeded"),
        child(js, "a", 2, state="failed"),
        child(js, "a", 3, state="active"),
    ]
    out = classify(js, jobs)
    assert _names(out.active) == ["js-a-0", "js-a-3"]
    assert _names(out.succeeded) == ["js-a-1"]
    assert _names(out.failed) == ["js-a-2"]
    assert out.previous == []


@pytest.mark.parametrize(
    ("label", "restarts", "previous"),
    [("0", 0, False), ("0", 1, True), ("1", 1, False), ("2", 1, False), ("x", 0, True)],
    ids=["current attempt", "older attempt", "next attempt", "attempt ahead", "unparsable label"],
)
def test_restart_attempt_label(label: str, restarts: int, previous: bool) -> None:
    js = jobset(rjob("a", 1), status={"restarts": restarts})
    job = child(js, "a", 0, labels={"jobset.sigs.k8s.io/restart-attempt": label})
    out = classify(js, [job])
    assert bool(out.previous) is previous
    assert bool(out.active) is not previous


def test_missing_restart_attempt_label_is_previous() -> None:
    js = jobset(rjob("a", 1))
    job = child(js, "a", 0)
    del job["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"]
    assert classify(js, [job]).previous == [job]


def _per_job_status(restarts: list[int]) -> dict[str, Any]:
    return {
        "replicatedJobsStatus": [
            {
                "name": "a",
                "ready": 0,
                "succeeded": 0,
                "failed": 0,
                "active": 0,
                "suspended": 0,
                "jobRestarts": restarts,
            }
        ]
    }


@pytest.mark.parametrize(
    ("gate", "job_label", "targets", "previous"),
    [
        (True, "0", [0, 1], True),  # job 1 target is 1, label 0
        (True, "1", [0, 1], False),
        (False, "0", [0, 1], False),  # gate off: per-job attempts ignored
        (True, None, [0, 1], False),  # no label: kept for compatibility
        (True, "bad", [0, 1], True),
        (True, "0", [], False),  # no targets yet: zeros
    ],
    ids=[
        "older job attempt",
        "current job attempt",
        "gate off ignores job attempts",
        "no label kept",
        "unparsable label",
        "no targets yet",
    ],
)
def test_per_job_restart_attempt(
    gate: bool, job_label: str | None, targets: list[int], previous: bool
) -> None:
    js = jobset(rjob("a", 2), status=_per_job_status(targets))
    job = child(js, "a", 1, restart_job=True)
    if job_label is None:
        del job["metadata"]["labels"]["jobset.sigs.k8s.io/job-restart-attempt"]
    else:
        job["metadata"]["labels"]["jobset.sigs.k8s.io/job-restart-attempt"] = job_label
    out = classify(js, [job], restart_job=gate)
    assert bool(out.previous) is previous


def test_per_job_index_out_of_range_is_previous() -> None:
    js = jobset(rjob("a", 2), status=_per_job_status([0, 0]))
    job = child(js, "a", 1, restart_job=True)
    job["metadata"]["labels"]["jobset.sigs.k8s.io/job-index"] = "5"
    assert classify(js, [job], restart_job=True).previous == [job]


def test_replicated_jobs_status_counts() -> None:
    js = jobset(rjob("a", 3, parallelism=2, completions=4), rjob("b", 2), rjob("c", 1))
    jobs = [
        # ready: ready + succeeded >= min(parallelism 2, completions 4) = 2
        child(js, "a", 0, ready=1, succeeded=1, active=1),
        child(js, "a", 1, ready=1, active=2),  # not ready
        child(js, "a", 2, suspend=True),
        child(js, "b", 0, state="succeeded"),
        child(js, "b", 1, state="failed"),
    ]
    statuses = replicated_job_statuses(js, classify(js, jobs))
    assert statuses == [
        {"name": "a", "ready": 1, "succeeded": 0, "failed": 0, "active": 2, "suspended": 1},
        {"name": "b", "ready": 0, "succeeded": 1, "failed": 1, "active": 0, "suspended": 0},
        {"name": "c", "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0},
    ]


def test_completions_lower_than_parallelism_bounds_ready() -> None:
    js = jobset(rjob("a", 1, parallelism=4, completions=2))
    statuses = replicated_job_statuses(js, classify(js, [child(js, "a", 0, ready=2)]))
    assert statuses[0]["ready"] == 1


def test_unset_completions_uses_parallelism() -> None:
    js = jobset(rjob("a", 1, parallelism=3, completions=None))
    jobs = [child(js, "a", 0, ready=2)]
    assert replicated_job_statuses(js, classify(js, jobs))[0]["ready"] == 0
    jobs = [child(js, "a", 0, ready=3)]
    assert replicated_job_statuses(js, classify(js, jobs))[0]["ready"] == 1


def test_previous_and_foreign_rjob_jobs_not_counted() -> None:
    js = jobset(rjob("a", 2), status={"restarts": 1})
    old = child(js, "a", 0, ready=1, labels={"jobset.sigs.k8s.io/restart-attempt": "0"})
    stray = child(js, "a", 1, ready=1, labels={"jobset.sigs.k8s.io/replicatedjob-name": "zz"})
    statuses = replicated_job_statuses(js, classify(js, [old, stray]))
    assert statuses == [
        {"name": "a", "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0}
    ]


def test_job_restarts_carried_over_only_with_gate() -> None:
    status = _per_job_status([0, 2])
    status["replicatedJobsStatus"][0]["jobRestartsCountTowardsMax"] = [0, 1]
    js = jobset(rjob("a", 2), status=status)
    with_gate = replicated_job_statuses(js, classify(js, []), restart_job=True)
    assert with_gate[0]["jobRestarts"] == [0, 2]
    assert with_gate[0]["jobRestartsCountTowardsMax"] == [0, 1]
    without = replicated_job_statuses(js, classify(js, []))
    assert "jobRestarts" not in without[0]


def test_statuses_equal_ignores_order_and_absent_zeroes() -> None:
    a = [{"name": "x", "ready": 1}, {"name": "y", "failed": 0}]
    b = [
        {"name": "y", "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0},
        {"name": "x", "ready": 1, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0},
    ]
    assert statuses_equal(a, b)
    assert not statuses_equal(a, [*b[:1], {"name": "x", "ready": 2}])
    assert not statuses_equal(None, b)


def test_all_jobs_ready_counts_ready_and_succeeded() -> None:
    js = jobset(rjob("a", 2), rjob("b", 1))
    assert all_jobs_ready(
        js, [{"name": "a", "ready": 1, "succeeded": 1}, {"name": "b", "ready": 1}]
    )
    assert not all_jobs_ready(js, [{"name": "a", "ready": 2}, {"name": "b", "failed": 1}])
