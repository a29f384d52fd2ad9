"""The placement table of benchmarks/RESULTS.md (`benchmarks/report.py`): the kube-scheduler
evaluations beside the times, and runs recorded before the cost model still render."""

from __future__ import annotations

from benchmarks.report import _placement_row


def test_row_shows_evaluations_per_pod_term_tests_and_ratio() -> None:
    summary = {
        "median_seconds_to_all_scheduled": 1.236,
        "median_pods_per_second": 103.6,
        "ratio_to_none": 1.37,
        "one_job_per_domain": True,
        "kube_scheduler_evaluations": 52192,
        "evaluations_per_pod": 407.8,
        "affinity_checks_per_pod": 31.8,
        "evaluations_ratio_to_none": 1.59,
    }
    assert _placement_row("affinity", summary) == [
        "affinity",
        "1.24",
        "104",
        "1.37",
        "408",
        "31.8",
        "1.59",
        "True",
    ]


def test_row_of_a_run_without_evaluations_shows_dashes() -> None:
    old = {
        "median_seconds_to_all_scheduled": 0.8,
        "median_pods_per_second": 638,
        "ratio_to_none": 1.0,
        "one_job_per_domain": False,
    }
    assert _placement_row("none", old) == ["none", "0.80", "638", "1.00", "-", "-", "-", "False"]
