"""The pod-scale climb (`benchmarks/pod_scale.py`) end to end at a tiny size: a real `jobset
sim --sim-level pods` and `jobset controller`, every pod Running on the harness's watch.

A smoke test, not a performance test: it asserts the shape of the results (every field the
report, the plot and RESULTS.md read) and that the climb stops at a step that does not
complete, never a number's value.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import pod_scale, pod_scale_report, report

STEP_FIELDS = {
    "jobs",
    "pods_per_job",
    "pods",
    "nodes",
    "dns_hostnames",
    "completed",
    "seconds",
    "wall_seconds",
    "pods_running",
    "pods_per_second",
    "ratio_to_anchor",
    "cpu_seconds",
    "cpu_share",
    "rss_peak_mib",
    "load_1m",
    "controller_reconciles",
    "controller_requests",
}


@pytest.mark.timeout(120)
async def test_both_series_bring_every_pod_up_at_a_tiny_size(tmp_path: Path) -> None:
    data = await pod_scale.run([40], step_limit=60)
    assert [ser["dns_hostnames"] for ser in data["series"]] == [True, False]
    for ser in data["series"]:
        (step,) = ser["steps"]
        assert STEP_FIELDS <= step.keys(), step
        assert step["completed"], step.get("stopped")
        assert (step["jobs"], step["pods"]) == (5, 40)
        # Every pod was seen created, bound and Running, in that order.
        assert step["pods_running"] == step["pods_scheduled"] == step["pods_seen"] == 40
        secs = step["seconds"]
        assert 0 < secs["created"] <= secs["scheduled"] <= secs["running"], secs
        assert 0 < secs["jobs_created"] <= secs["created"], secs
        assert step["jobs_created"] == 5
        # The controller's own requests (the harness has its own user agent): 5 Jobs, and a
        # Service only when the JobSet asks for DNS hostnames.
        requests = step["controller_requests"]
        assert requests["create jobs"] == 5 and "create jobsets" not in requests
        assert requests.get("create services", 0) == (1 if ser["dns_hostnames"] else 0)
        assert step["controller_reconciles"] >= 1
        assert set(step["cpu_seconds"]) == {"controller", "sim", "harness"}
        assert step["cpu_seconds"]["sim"] > 0 and step["rss_peak_mib"]["sim"] > 0
        assert ser["largest"]["pods"] == 40 and ser["stopped"] is None
        # 40 pods say nothing about 50,000: not met, not failed - not measured.
        assert ser["anchor_size_within_anchor_time"] is None
    goals = pod_scale_report.goals({"pod_scale": data})
    # Per series: the anchor's goal and the simulator's time goal at 50,000 pods.
    assert len(goals) == 4 and all(g["met"] is None for g in goals), goals
    assert all("not tried in this run" in g["measured"] for g in goals)
    text = "\n".join(pod_scale_report.section({"pod_scale": data}, "t"))
    assert "Scale at `--sim-level pods`" in text and "| headless Service (default) |" in text
    assert [p.name for p in pod_scale_report.plots({"pod_scale": data}, tmp_path, "t")] == [
        "t_pod_scale.png"
    ]
    # The whole report takes it as one of its sections and goals.
    assert any(g["goal"].startswith("largest JobSet") for g in report.goals({"pod_scale": data}))


@pytest.mark.timeout(120)
async def test_a_step_past_its_time_limit_stops_the_climb() -> None:
    """A step that cannot get every pod Running within the limit is kept with how far it
    got, and no larger step runs. 0.3 s cannot suffice on any machine: the simulated
    kubelet takes at least 0.75 s from binding to Running (`STARTUP_DELAY` at time scale 1)."""
    data = await pod_scale.run([40, 80], series=[False], step_limit=0.3)
    (ser,) = data["series"]
    (step,) = ser["steps"]
    assert not step["completed"] and step["stopped"].startswith("time limit"), step
    assert step["pods_running"] < 40
    assert ser["largest"] is None and ser["stopped"]["pods"] == 40
    goal, time_goal = pod_scale_report.goals({"pod_scale": data})
    assert goal["measured"].startswith("failed: time limit")
    assert time_goal["met"] is None  # the 50,000-pod step was never tried
