"""The pod-scale climb's pure parts: when it predicts a step is out of reach, how its goal is
judged against the anchor, and how a py-spy profile is charged to the simulator's parts."""

from __future__ import annotations

from typing import Any

from benchmarks import pod_scale, pod_scale_report, profiling


def _step(pods: int, running: float | None, completed: bool = True) -> dict[str, Any]:
    step: dict[str, Any] = {
        "pods": pods,
        "jobs": pods // 8,
        "pods_per_job": 8,
        "nodes": pods // 6,
        "completed": completed,
        "seconds": {} if running is None else {"running": running},
        "wall_seconds": running or 600.0,
        "pods_per_second": pods / (running or 600.0),
        "ratio_to_anchor": pods / (running or 600.0) / pod_scale.ANCHOR_RATE,
        "cpu_share": {"controller": 0.2, "sim": 0.9, "harness": 0.05},
        "cpu_seconds": {"controller": 1.0, "sim": 5.0, "harness": 0.2},
        "rss_peak_mib": {"controller": 100.0, "sim": 300.0},
    }
    if not completed:
        step["stopped"] = "time limit: not all Running after 600 s"
    return step


def test_prediction_follows_the_growth_of_the_last_two_steps() -> None:
    assert pod_scale.predict([_step(1000, 5.0)], 4000) is None
    # Quadratic growth from 1k to 4k: 16 x the time at 16k.
    t, k = pod_scale.predict([_step(1000, 5.0), _step(4000, 80.0)], 16000) or (0, 0)
    assert round(k, 2) == 2.0 and round(t) == 1280
    # Sub-linear growth (fixed costs) is taken as linear, never as faster than linear.
    t, k = pod_scale.predict([_step(1000, 5.0), _step(4000, 10.0)], 16000) or (0, 0)
    assert k == 1.0 and round(t) == 40


def _series(steps: list[dict[str, Any]]) -> dict[str, Any]:
    return pod_scale.summarize_series(steps, dns_hostnames=False, skipped=None)


def _goal(ser: dict[str, Any]) -> dict[str, Any]:
    goal, _time = pod_scale_report.goals({"pod_scale": {"series": [ser]}})
    return goal


def _time_goal(steps: list[dict[str, Any]], *, service: bool) -> dict[str, Any]:
    ser = pod_scale.summarize_series(steps, dns_hostnames=service, skipped=None)
    _anchor, goal = pod_scale_report.goals({"pod_scale": {"series": [ser]}})
    return goal


def test_time_goal_is_judged_at_50k_pods_per_series() -> None:
    # 50 s: within the Service series' 60 s, not within the no-Service series' 45 s.
    with_service = _time_goal([_step(16000, 20.0), _step(50000, 50.0)], service=True)
    assert with_service["met"] is True
    assert "< 60 s" in with_service["goal"] and "headless Service" in with_service["goal"]
    assert "all Running in 50.0 s; simulator 0.10 ms CPU per pod" in with_service["measured"]
    without = _time_goal([_step(50000, 50.0)], service=False)
    assert without["met"] is False and "< 45 s" in without["goal"]
    assert _time_goal([_step(50000, 44.9)], service=False)["met"] is True
    stopped = _time_goal([_step(50000, None, completed=False)], service=False)
    assert stopped["met"] is False and "did not complete: time limit" in stopped["measured"]
    assert _time_goal([_step(16000, 20.0)], service=True)["met"] is None


def test_goal_met_when_50k_pods_run_within_120_s() -> None:
    goal = _goal(_series([_step(16000, 30.0), _step(50000, 110.0)]))
    assert goal["met"] is True
    assert "largest 50,000 pods (6,250 Jobs x 8)" in goal["measured"]
    assert "busiest process sim (0.90 core)" in goal["measured"]


def test_goal_not_met_when_50k_pods_take_longer_or_the_climb_stops_before() -> None:
    assert _goal(_series([_step(50000, 250.0)]))["met"] is False
    # A larger step completed too: the goal names both, judged at 50k.
    goal = _goal(_series([_step(50000, 250.0), _step(100000, 400.0)]))
    assert goal["met"] is False and "largest 100,000 pods" in goal["measured"]
    assert "50,000 pods (6,250 Jobs x 8): all Running in 250.0 s" in goal["measured"]
    goal = _goal(_series([_step(16000, 300.0), _step(50000, None, completed=False)]))
    assert goal["met"] is False
    assert "largest 16,000 pods" in goal["measured"]
    assert "stopped at 50,000 pods: time limit" in goal["measured"]


def test_goal_not_measured_when_the_run_stops_short_of_50k_by_choice() -> None:
    goal = _goal(_series([_step(1000, 3.0)]))
    assert goal["met"] is None and "make bench-large" in goal["measured"]


def test_table_marks_a_step_that_did_not_complete() -> None:
    ser = _series([_step(1000, 3.0), _step(4000, None, completed=False)])
    text = pod_scale_report.section({"pod_scale": {"series": [ser]}}, "t", with_plots=False)
    lines = "\n".join(text).splitlines()
    rows = [line for line in lines if line.startswith("| no Service")]
    assert len(rows) == 2
    assert "| > 600 |" in rows[1] and "no: time limit" in rows[1]
    assert any("stopped at 4,000 pods: time limit" in line for line in lines)


RAW = """\
<module> (jobset/cli.py:154);run_forever (asyncio/base_events.py:607);Handle._run (asyncio/events.py:80);Controller._worker (kubesim/base/controller.py:90);EndpointsController.sync (kubesim/controllers/endpoints.py:420);slice_groups (kubesim/controllers/endpoints.py:200) 6
<module> (jobset/cli.py:154);run_forever (asyncio/base_events.py:607);Handle._run (asyncio/events.py:80);Scheduler._run (kubesim/controllers/scheduler/loop.py:243);schedule (kubesim/controllers/scheduler/scheduling.py:328) 3
<module> (jobset/cli.py:154);run_forever (asyncio/base_events.py:607);EpollSelector.select (selectors.py:468) 1
"""


def test_profile_samples_go_to_the_component_whose_task_ran() -> None:
    summary = profiling.summarise(RAW, ("kubesim", "jobset"))
    assert summary["samples"] == 10
    # The shared controller loop and the entry point are not components.
    assert summary["by_component"] == {
        "kubesim/controllers/endpoints": 0.6,
        "kubesim/controllers/scheduler": 0.3,
        "other (event loop, aiohttp, ssl, idle)": 0.1,
    }
    assert next(iter(summary["hottest_frames"])) == (
        "slice_groups (kubesim/controllers/endpoints.py)"
    )


def test_the_largest_profiled_step_shows_the_simulators_ms_per_pod_by_part() -> None:
    small, large = _step(1000, 3.0), _step(4000, 9.0)  # sim CPU 5 s each: 1.25 ms/pod at 4k
    for step in (small, large):
        step["profile"] = {"sim": {"by_part": {"scheduler: filter": 0.6, "kubelet": 0.4}}}
    ser = _series([small, large])
    text = "\n".join(pod_scale_report.section({"pod_scale": {"series": [ser]}}, "t", False))
    assert "no Service, 4,000 pods" in text and "no Service, 1,000 pods" not in text
    assert "| scheduler: filter | 60% | 0.75 |" in text
    assert "| kubelet | 40% | 0.50 |" in text
    assert "| all | 100% | 1.25 |" in text
