"""benchmarks/cli_latency.py: the summary of the samples, the goal and the RESULTS.md
section (the measuring itself needs a running cluster: `make bench`)."""

from __future__ import annotations

from typing import Any

from benchmarks.cli_latency import GOAL_SECONDS, _summary, goal_met, markdown


def _data(get: float, kubectl: float) -> dict[str, Any]:
    return {
        "date": "2026-01-01T00:00:00+00:00",
        "commit": "abc",
        "machine": "x86_64, 2 cpu",
        "runs": 3,
        "load_1m": [1.0, 1.5],
        "commands": {
            "jobset get": _summary([get, get / 2, get * 2]),
            "kubectl get jobsets": _summary([kubectl] * 3),
        },
    }


def test_summary_goal_and_section() -> None:
    assert _summary([0.3, 0.1, 0.2, 0.4]) == {
        "median_seconds": 0.25, "p90_seconds": 0.4, "samples": [0.3, 0.1, 0.2, 0.4]
    }  # fmt: skip
    fast, slow = _data(0.12, 0.9), _data(GOAL_SECONDS + 0.01, 0.05)
    assert goal_met(fast) and not goal_met(slow)  # kubectl's own time is no goal
    text = markdown(fast)
    assert "| `jobset get` | 0.120 | 0.240 |" in text
    assert "| `kubectl get jobsets` | 0.900 | 0.900 |" in text
    assert text.endswith(f"at most {GOAL_SECONDS} s at the median: met.\n")
    assert markdown(slow).endswith(": not met.\n")
