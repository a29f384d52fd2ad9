"""The regression guard on the simulator's CPU per pod: which step it reads, how the series
is kept, and when the newest run is flagged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks import cpu_guard

SERVICE = "headless Service (default)"
NO_SERVICE = "no Service"


def _pod_scale(sim_cpu: dict[int, float], completed: bool = True) -> dict[str, Any]:
    steps = [
        {
            "pods": pods,
            "completed": completed,
            "cpu_seconds": {"sim": cpu, "controller": 9.0},
            "load_1m_max": 3.5,
        }
        for pods, cpu in sim_cpu.items()
    ]
    return {"series": [{"series": SERVICE, "steps": steps}]}


def _entry(service: float, no_service: float, pods: int = cpu_guard.GUARD_PODS) -> dict[str, Any]:
    figures = {SERVICE: service, NO_SERVICE: no_service}
    return {"started": "t", "commit": "c", "pods": pods, "sim_cpu_ms_per_pod": figures}


def test_reads_the_simulator_cpu_of_the_guard_size_step_only() -> None:
    n = cpu_guard.GUARD_PODS
    data = _pod_scale({n: 3.0, 4 * n: 40.0})
    assert cpu_guard.ms_per_pod(data) == {SERVICE: round(3000.0 / n, 3)}
    assert cpu_guard.ms_per_pod(_pod_scale({n: 3.0}, completed=False)) == {}
    assert cpu_guard.entry(_pod_scale({4 * n: 40.0}), "abc", "cmd") is None
    new = cpu_guard.entry(data, "abc", "cmd")
    assert new is not None and new["load_1m_max"] == 3.5
    assert "| 3.5 |" in "\n".join(cpu_guard.markdown([new]))


def test_a_rise_over_the_limit_is_flagged_and_one_within_it_is_not() -> None:
    limit = 1.0 + cpu_guard.MAX_RISE
    verdicts = cpu_guard.verdicts(
        [_entry(2.0, 1.0), _entry(2.0 * limit * 1.01, 1.0 * limit * 0.99)]
    )
    by = {v["series"]: v for v in verdicts}
    assert by[SERVICE]["flagged"] is True
    assert by[NO_SERVICE]["flagged"] is False
    assert "REGRESSION" in cpu_guard.verdict_line(by[SERVICE])
    # A fall is never flagged; one run alone has nothing to compare with.
    assert not any(v["flagged"] for v in cpu_guard.verdicts([_entry(4.0, 2.0), _entry(1.0, 1.0)]))
    assert cpu_guard.verdicts([_entry(1.0, 1.0)]) == []
    # Runs at different sizes are not compared.
    assert cpu_guard.verdicts([_entry(1.0, 1.0, pods=1), _entry(9.0, 9.0)]) == []


def test_the_series_is_kept_in_order_and_shown_in_full(tmp_path: Path) -> None:
    path = tmp_path / "series.json"
    cpu_guard.record(_entry(2.0, 1.0), path)
    entries = cpu_guard.record(_entry(3.0, 1.0), path)
    assert cpu_guard.load(path) == entries
    assert [e["sim_cpu_ms_per_pod"][SERVICE] for e in entries] == [2.0, 3.0]
    text = "\n".join(cpu_guard.markdown(entries))
    assert "| 2.00 |" in text and "| 3.00 |" in text
    assert "REGRESSION" in text


def test_a_bench_run_appends_its_figure_and_prints_the_verdict(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from benchmarks import run

    path = tmp_path / "series.json"
    n = cpu_guard.GUARD_PODS
    for sim_cpu in (2.0, 3.0):  # +50 %: flagged
        out = io.StringIO()
        data = {
            "pod_scale": _pod_scale({n: sim_cpu}),
            "commit": "c",
            "command": "x",
            "started": "t",
        }
        run._guard(Console(file=out, width=200), data, path)
    assert len(cpu_guard.load(path)) == 2
    assert "REGRESSION" in out.getvalue()
    assert data["sim_cpu_guard"]["verdicts"][0]["flagged"] is True
    (goal,) = cpu_guard.goals(data)
    assert goal["met"] is False and "+50%" in goal["measured"]
    # A run without the guard's step (--pod-scale none) leaves the series alone.
    run._guard(Console(file=io.StringIO()), {"commit": "c", "command": "x", "started": "t"}, path)
    assert len(cpu_guard.load(path)) == 2
