"""The scale benchmark harness runs end to end at a tiny size and writes what it promises.

A smoke test, not a performance test: it asserts the shape of the results (every field the
report, the plots and RESULTS.md read), never a number's value.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks import rate_report, report
from tests.processgroup import own_group

ROOT = Path(__file__).resolve().parents[3]
# How much later than it happened the benchmark may see a phase of an in-place recovery.
OBSERVATION_SKEW = 0.1
SIDE_FIELDS = {
    "seconds",
    "jobs_per_second",
    "cpu_seconds",
    "sim_cpu_seconds",
    "rss_start_mib",
    "rss_peak_mib",
    "rss_end_mib",
    "idle_rss_mib",
    "requests",
    "writes",
    "load_1m",
}
STEADY_FIELDS = {
    "seconds",
    "cpu_seconds",
    "rss_synced_mib",
    "rss_bytes_per_job",
    "requests",
    "writes",
}


def _bench(tmp_path: Path, *flags: str, timeout: float) -> dict[str, Any]:
    """`python -m benchmarks.run` with `flags`, no placement, pod or report sections; its
    JSON result."""
    out = tmp_path / "scale.json"
    fixed = ("--placement", "no", "--pods", "no", "--no-report", "--timeout", "60")
    cmd = [sys.executable, "-m", "benchmarks.run", *flags, *fixed, "--out", str(out)]
    # Its own process group: a run cut short takes its simulators and controllers with it.
    with own_group(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"benchmarks.run still running after {timeout:.0f} s") from None
    assert proc.returncode == 0, stdout[-3000:] + stderr[-3000:]
    result: dict[str, Any] = json.loads(out.read_text())
    return result


@pytest.mark.timeout(90)
def test_restart_scenario_end_to_end(tmp_path: Path) -> None:
    data = _bench(
        tmp_path, "--sizes", "12", "--scenarios", "restart-recreate", "--rate", "no", timeout=80
    )
    assert {"machine", "options", "runs", "skipped", "goals", "wall_seconds"} <= data.keys()
    (run,) = data["runs"]
    assert run["scenario"] == "restart-recreate" and run["jobs"] == 12
    for side in ("baseline", "controller"):
        result = run[side]
        assert SIDE_FIELDS <= result.keys(), result
        assert {"all_deleted", "all_recreated"} <= result["seconds"].keys()
        assert STEADY_FIELDS <= result["steady"].keys()
        # The API work both sides did, as the simulated server counted it.
        assert result["requests"]["create jobs"] == 12
        assert result["requests"]["delete jobs"] == 12
    # A restart over converged state writes nothing, on either side.
    assert run["baseline"]["steady"]["writes"] == 0
    assert run["controller"]["steady"]["writes"] == 0, run["controller"]["steady"]
    assert {"all_recreated", "steady_synced"} <= run["ratio"].keys()
    assert [g["goal"] for g in data["goals"]]

    # The report's pieces accept it: table, goals, plots.
    assert report.table(data).row_count >= 2
    written = report.plots(data, tmp_path, "t")
    assert {p.name for p in written} == {
        "t_throughput.png",
        "t_cpu_per_job.png",
        "t_rss.png",
        "t_ratio.png",
    }


@pytest.mark.soak  # make bench runs it; the restart scenario stays in make test
@pytest.mark.timeout(120)
def test_unthrottled_rate_against_the_minimal_client(tmp_path: Path) -> None:
    """The rate section alone (no scenarios) at two tiny sizes: every phase creates all its
    Jobs, the minimal client sends byte for byte the controller's bodies, and the report's
    goals, table and plot read the result."""
    data = _bench(tmp_path, "--sizes", "12,20", "--scenarios", "", timeout=110)
    runs = data["rate"]["runs"]
    assert [r["jobs"] for r in runs] == [12, 20]
    assert runs[0]["order"] == ["controller", "minimal", "limit"]
    assert runs[1]["order"] == ["minimal", "controller", "limit"]
    for r in runs:
        for side in ("controller", "minimal", "limit"):
            assert r[side]["creates"] == r["jobs"], r[side]
            assert r[side]["jobs_per_second"] > 0 and r[side]["cpu_ms_per_job"] > 0
        # Same bodies: the sim counted the same bytes per Job from both clients.
        assert r["controller"]["bytes_per_job"] == r["minimal"]["bytes_per_job"] > 1000
        assert r["limit"]["clients"] == 3
        assert {
            "rate_controller_over_minimal",
            "cpu_per_job_controller_over_minimal",
            "controller_of_limit",
            "minimal_of_limit",
        } <= r["ratio"].keys()
        # The controller created them unthrottled, and wrote the JobSet's status once.
        assert r["controller"]["requests"]["update jobsets/status"] >= 1
    assert len(rate_report.rows(data)) == 2
    assert [p.name for p in rate_report.plots(data, tmp_path, "t")] == ["t_rate.png"]
    goal_names = [g["goal"] for g in data["goals"]]
    assert any("unthrottled creation rate" in g for g in goal_names)


@pytest.mark.soak  # real agents; make bench runs it
@pytest.mark.timeout(150)
async def test_recovery_and_fairness_at_tiny_sizes() -> None:
    """Recovery (`--sim-level pods`) and fairness end to end at tiny sizes: every field the
    report reads, and the report's goals accept them."""
    from benchmarks import fairness, recovery, tenancy_report
    from benchmarks.harness import Options

    rec = await recovery.run_all(
        ["Recreate", "InPlaceRestart"], Options(timeout=60), jobs=2, pods=2
    )
    simulated, in_place = rec["runs"]
    for run in rec["runs"]:
        assert "error" not in run, run
        assert run["pods"] == 4 and run["fresh_seconds"] > 0 and run["recovery_seconds"] > 0
    assert simulated["pod_processes"] == "simulated"
    # In place: real agents came back at the next attempt, then the controller lifted the
    # barrier, then every worker ran again (a pod killed and restarted, not recreated).
    # Each phase is when the benchmark saw it, through different channels: the pods' watch
    # (read every 20 ms) and the JobSet (polled every 50 ms). One seen up to
    # OBSERVATION_SKEW late can look a few ms later than the next; an order actually
    # reversed (the barrier lifted before the agents were back) would differ by an agent's
    # restart, about a second.
    assert in_place["pod_processes"] == "real (agent + worker)"
    assert in_place["agents_back_seconds"] > 0
    assert in_place["agents_back_seconds"] <= in_place["barrier_lifted_seconds"] + OBSERVATION_SKEW
    assert in_place["barrier_lifted_seconds"] <= in_place["recovery_seconds"] + OBSERVATION_SKEW
    fair = await fairness.run(40, Options(concurrency=2, timeout=60))
    assert [c["large_jobsets"] for c in fair["cases"]] == [1, 3]
    for case in fair["cases"]:
        assert "error" not in case, case
        assert case["small_seconds"] > 0 and case["large_jobs_before"] >= 10
    goals = tenancy_report.goals({"recovery": rec, "fairness": fair})
    assert sum(1 for g in goals if g["goal"].startswith("a 3-Job JobSet")) == 2
    assert any(
        g["goal"].startswith("recovery time") and g["met"] == "measured (no fixed goal)"
        for g in goals
    )
    assert tenancy_report.section({"recovery": rec, "fairness": fair})


def test_in_place_runs_as_many_jobs_as_real_pods_fit() -> None:
    """The simulator's pod network holds 1,021 real pods: the in-place case of 32 x 8 runs in
    full, 128 x 8 runs 127 Jobs and says so; simulated strategies run the size asked for."""
    from benchmarks import in_place, recovery, tenancy_report

    assert in_place.MAX_REAL_PODS == 1021
    assert recovery.sized("InPlaceRestart", 32, 8) == 32
    assert recovery.sized("InPlaceRestart", 128, 8) == 127
    assert recovery.sized("InPlaceRestart", 2, 2) == 2
    assert recovery.sized("Recreate", 128, 8) == 128
    run = {
        "strategy": "InPlaceRestart",
        "jobs": 127,
        "requested_jobs": 128,
        "pods": 1016,
        "fresh_seconds": 2.0,
        "recovery_seconds": 1.0,
        "fresh_over_recovery": 2.0,
    }
    text = "\n".join(tenancy_report.section({"recovery": {"runs": [run]}}))
    assert "ran 127 Jobs instead of 128: the simulator's pod network holds 1021" in text
    # make bench's smaller in-place case is a budget choice, not the network's limit.
    run |= {"jobs": 4, "requested_jobs": 32, "pods": 32}
    text = "\n".join(tenancy_report.section({"recovery": {"runs": [run]}}))
    assert "ran 4 Jobs instead of 32: its real agents are started at this size" in text
