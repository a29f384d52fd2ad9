"""The real-job recovery benchmark's pure parts: the manifests it runs and what it reads."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks import train_recovery as tr


def _step(step: int, t: float) -> dict[str, Any]:
    return {"step": step, "loss": 0.1, "time": t, "attempt": "0"}


def test_timeline_measures_downtime_and_lost_time() -> None:
    progress = [
        {"event": "start", "step": 0, "time": 0.0},
        *(_step(s, s * 0.01) for s in range(1, 151)),  # 100 steps a second until step 150
        {"event": "start", "step": 100, "time": 9.0, "launched": 6.0},
        *(_step(s, 9.0 + (s - 100) * 0.01) for s in range(101, 201)),
    ]
    out = tr.timeline(progress, {"step": 150, "time": 1.5})
    assert out["resumed_from_step"] == 100
    assert out["steps_redone"] == 50
    assert out["downtime_seconds"] == pytest.approx(7.51)  # step 101 at 9.01
    assert out["lost_seconds"] == pytest.approx(8.01)  # step 151 at 9.51
    assert out["steps_per_second"] == pytest.approx(100.0)
    assert out["phases"] == {
        "until_process_started": pytest.approx(4.5),
        "process_start_to_training": pytest.approx(3.0),
        "first_step": pytest.approx(0.01),
    }


def test_steps_the_old_attempt_finished_late_are_not_the_restart() -> None:
    progress = [
        {"event": "start", "step": 0, "time": 0.0},
        _step(1, 0.1),
        _step(2, 0.35),  # the other ranks record the step the failing rank had finished
        {"event": "start", "step": 0, "time": 5.0},
        _step(1, 5.5),
        _step(2, 5.6),
        _step(3, 5.7),
    ]
    out = tr.timeline(progress, {"step": 2, "time": 0.3})
    assert out["downtime_seconds"] == pytest.approx(5.2)
    assert out["lost_seconds"] == pytest.approx(5.4)


def test_timeline_without_a_restart_is_an_error() -> None:
    progress = [{"event": "start", "step": 0, "time": 0.0}, _step(1, 0.1)]
    with pytest.raises(ValueError, match="no attempt started"):
        tr.timeline(progress, {"step": 1, "time": 0.5})


@pytest.mark.parametrize("strategy", tr.STRATEGIES)
def test_manifest_per_strategy(strategy: str) -> None:
    js = tr.jobset_manifest(strategy, processes=3, steps=900, fail_at=400)
    assert js["spec"]["failurePolicy"]["restartStrategy"] == strategy
    job = js["spec"]["replicatedJobs"][0]["template"]["spec"]
    assert job["parallelism"] == job["completions"] == 3
    pod = job["template"]["spec"]
    env = {e["name"]: e for e in pod["containers"][0]["env"]}
    assert env["STEPS"]["value"] == "900"
    assert env["FAIL_ONCE_AT_STEP"]["value"] == "400"
    assert env["FAIL_RANK"]["value"] == "2"
    assert "valueFrom" in env["RESTART_ATTEMPT"] and "value" not in env["RESTART_ATTEMPT"]
    agents = [c["name"] for c in pod.get("initContainers") or []]
    assert agents == (["in-place-restart-agent"] if strategy == "InPlaceRestart" else [])


def test_summary_checks_the_goal() -> None:
    runs = [
        {"strategy": "Recreate", "lost_seconds": 20.0},
        {"strategy": "InPlaceRestart", "lost_seconds": 4.0},
    ]
    assert tr.summary(runs)["in_place_over_recreate"] == 0.2
    assert tr.summary(runs)["goal_met"] is True
    runs[1]["lost_seconds"] = 6.0
    assert tr.summary(runs)["goal_met"] is False


def test_summary_checks_the_restart_phase_goal() -> None:
    runs = [
        {"strategy": "Recreate", "lost_seconds": 10.0, "phases": {"until_process_started": 4.0}},
        {
            "strategy": "InPlaceRestart",
            "lost_seconds": 8.0,
            "phases": {"until_process_started": 2.0},
        },
    ]
    out = tr.summary(runs)
    assert (out["restart_phase_ratio"], out["restart_goal_met"]) == (0.5, True)
    runs[1]["phases"]["until_process_started"] = 2.4
    assert tr.summary(runs)["restart_goal_met"] is False
