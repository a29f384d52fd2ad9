"""Wording of the user commands' columns, phases and trees, without a cluster."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from typing import Any

import pytest

from jobset.commands.common import Out, error_line, plain_table
from jobset.commands.inspect import JobView, PodView, Snapshot
from jobset.commands.summary import (
    age,
    human_duration,
    job_state,
    phase,
    pod_domain,
    progress,
    progress_text,
)
from jobset.commands.tree import lines
from jobset.runtime.client import ApiError
from jobset.sdk import JobSet, leader_workers


def _js(status: dict[str, Any] | None = None, **spec: Any) -> JobSet:
    d = leader_workers("lw", image="i", workers=2).to_dict()
    d["spec"].update(spec)
    if status is not None:
        d["status"] = status
    return JobSet.from_dict(d)


def _cond(t: str, s: str = "True") -> dict[str, str]:
    return {"type": t, "status": s}


@pytest.mark.parametrize(
    ("status", "spec", "expected"),
    [
        (None, {}, "Pending"),
        ({"replicatedJobsStatus": [{"name": "leader", "ready": 1}]}, {}, "Running"),
        ({"conditions": [_cond("RestartingJobSet")]}, {}, "Restarting"),
        (
            {"conditions": [_cond("RestartingJobSet", "False")], "replicatedJobsStatus": []},
            {},
            "Pending",
        ),
        (None, {"suspend": True}, "Suspended"),
        ({"conditions": [_cond("Completed")]}, {}, "Completed"),
        ({"terminalState": "Failed"}, {"suspend": True}, "Failed"),
    ],
    ids=[
        "no status",
        "a job ready",
        "restarting",
        "restart over, nothing ready",
        "suspended",
        "completed",
        "failed wins over suspend",
    ],
)
def test_phase(status: dict[str, Any] | None, spec: dict[str, Any], expected: str) -> None:
    assert phase(_js(status, **spec)) == expected


def test_progress_follows_spec_order_and_defaults_missing_counts() -> None:
    js = _js(
        {"replicatedJobsStatus": [{"name": "workers", "ready": 1, "succeeded": 0, "failed": 2}]}
    )
    items = progress(js)
    assert [(p.name, p.replicas, p.ready, p.failed) for p in items] == [
        ("leader", 1, 0, 0),
        ("workers", 1, 1, 2),
    ]
    assert progress_text(items) == "leader 0/0/0 of 1, workers 1/0/2 of 1"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (119, "119s"), (125, "2m5s"), (600, "10m"), (3 * 3600 + 120, "3h2m"),
     (9 * 3600, "9h"), (50 * 3600, "2d2h"), (30 * 86400, "30d"), (800 * 86400, "2y")], ids=['zero', 'under two minutes', 'minutes and seconds', 'whole minutes', 'hours and minutes', 'whole hours', 'days and hours', 'whole days', 'years'])  # fmt: skip
def test_human_duration(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


def test_age() -> None:
    now = datetime(2024, 5, 1, 10, 0, 30, tzinfo=UTC)
    assert age("2024-05-01T10:00:00Z", now) == "30s"
    assert age(None) == "<unknown>" and age("garbage") == "<unknown>"


def test_job_state() -> None:
    job: dict[str, Any] = {"metadata": {"labels": {"jobset.sigs.k8s.io/restart-attempt": "1"}}}
    assert job_state(job, 1) == "Active"
    assert job_state(job, 2) == "Previous"
    assert job_state({**job, "spec": {"suspend": True}}, 1) == "Suspended"
    assert job_state({**job, "status": {"conditions": [_cond("Complete")]}}, 1) == "Succeeded"
    assert job_state({**job, "status": {"conditions": [_cond("Failed")]}}, 5) == "Failed"


def test_pod_domain_prefers_the_exclusive_key() -> None:
    nodes = {"n1": {"metadata": {"labels": {"rack": "r7", "cloud.google.com/gke-nodepool": "p1"}}}}
    pod = {"spec": {"nodeName": "n1"}}
    assert pod_domain(pod, nodes, "rack") == "r7"
    assert pod_domain(pod, nodes, None) == "p1"
    assert pod_domain({"spec": {}}, nodes, "rack") == ""


def test_plain_table_and_out_modes() -> None:
    assert plain_table(("A", "LONGER"), [["xx", "1"], ["y", ""]]) == ["A    LONGER", "xx   1", "y"]
    buf = io.StringIO()
    Out(buf, tty=False).table(("NAME", "X"), [["[bold]a", "1"]], indent=2)
    assert buf.getvalue() == "  NAME      X\n  [bold]a   1\n"
    rich_buf = io.StringIO()
    Out(rich_buf, tty=True).table(("NAME",), [["[bold]a"]])
    assert "[bold]a" in rich_buf.getvalue()  # cells are text, never markup


def test_tree_lines() -> None:
    pod = PodView("p-0", "0", "Running", "n1", "pool-1", 0)
    jobs = [
        JobView("lw-leader-0", "leader", "0", "Active", "0", 1, 1, 0, 0, [pod]),
        JobView("lw-workers-0", "workers", "0", "Active", "0", 0, 0, 0, 0, []),
    ]
    js = _js()
    assert js.metadata is not None
    js.metadata.namespace = "ns"
    assert lines(Snapshot(js, jobs, [])) == [
        "JobSet ns/lw (Pending)",
        "├── Job lw-leader-0 (Active, 1 active, 0 succeeded, 0 failed)",
        "│   └── Pod p-0 (Running, n1) [pool-1]",
        "└── Job lw-workers-0 (Active, 0 active, 0 succeeded, 0 failed)",
    ]


def test_error_line() -> None:
    assert error_line(ApiError(404, "NotFound", 'jobsets.jobset.x-k8s.io "x" not found')) == (
        'Error: jobsets.jobset.x-k8s.io "x" not found'
    )
    assert error_line(ApiError(500, "Internal", "")) == "Error: 500 Internal"
    assert error_line(ValueError("bad\nsecond line")) == "Error: bad"
