"""RESULTS.md holds only the latest run of each benchmark (`benchmarks/report.py`): a result
file whose every measurement a newer file also made is left out, and each run is shown with
the commit it measured."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.report import latest, write_all


def _run(started: str, command: str, rows: list[tuple[str, int]], **extra: Any) -> dict[str, Any]:
    return {
        "benchmark": "scale",
        "started": started,
        "command": command,
        "options": {},
        "runs": [{"scenario": s, "jobs": n} for s, n in rows],
        **extra,
    }


def test_an_older_run_whose_measurements_a_newer_run_repeats_is_stale() -> None:
    runs = {
        "scale": _run("2026-01-03", "make bench", [("wide", 1000), ("wide", 16000)]),
        "scale_64k": _run("2026-01-01", "partial", [("wide", 16000)]),
        "scale_large": _run("2026-01-02", "make bench-large", [("wide", 64000)]),
    }
    assert latest(runs) == ["scale", "scale_large"]


def test_an_older_run_with_a_measurement_of_its_own_is_kept() -> None:
    runs = {
        "scale": _run("2026-01-03", "make bench", [("wide", 1000)]),
        "scale_rate": _run("2026-01-01", "rate only", [], rate={"runs": [{"jobs": 16000}]}),
    }
    assert latest(runs) == ["scale", "scale_rate"]


def test_results_md_shows_only_the_latest_run_and_its_commit(tmp_path: Path) -> None:
    new = _run("2026-01-03", "make bench", [("wide", 1000)], commit="abc1234")
    old = _run("2026-01-01", "python -m benchmarks.run --old", [("wide", 1000)])
    (tmp_path / "scale.json").write_text(json.dumps(new))
    (tmp_path / "scale_old.json").write_text(json.dumps(old))
    out = tmp_path / "RESULTS.md"
    write_all(tmp_path, out)
    text = out.read_text()
    assert "## `make bench`" in text
    assert "at commit abc1234" in text
    assert "--old" not in text
