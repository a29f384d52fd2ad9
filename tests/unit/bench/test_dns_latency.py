"""benchmarks/dns_latency.py: the summary of the samples, the goal and the RESULTS.md
section (the measuring itself needs a running cluster: `make bench`)."""

from __future__ import annotations

from typing import Any

from benchmarks.dns_latency import GOAL_RATIO, GOAL_SLACK_MS, _summary, goal_met, markdown


def _data(idle_ms: float, loaded_ms: float) -> dict[str, Any]:
    return {
        "date": "2026-01-01T00:00:00+00:00",
        "commit": "abc",
        "machine": "x86_64, 2 cpu",
        "queries": 4,
        "clients": 2,
        "concurrency": 8,
        "load_requests_per_second": 120.0,
        "load_1m": [1.0, 1.5],
        "unloaded": _summary([idle_ms / 1000] * 4),
        "loaded": _summary([loaded_ms / 1000] * 4),
    }


def test_summary_goal_and_section() -> None:
    assert _summary([0.004, 0.001, 0.002, 0.003]) == {
        "median_ms": 2.5, "p90_ms": 4.0, "p99_ms": 4.0, "max_ms": 4.0
    }  # fmt: skip
    near = _data(1.0, 1.0 * GOAL_RATIO + GOAL_SLACK_MS)
    far = _data(1.0, 1.0 * GOAL_RATIO + GOAL_SLACK_MS + 0.5)
    assert goal_met(near) and not goal_met(far)
    text = markdown(near)
    assert "| idle | 1.00 | 1.00 | 1.00 | 1.00 |" in text
    assert "120.0 API requests/s" in text
    assert text.endswith(": met.\n") and markdown(far).endswith(": not met.\n")
