"""`jobset submit` validates as a controller with the given feature gates would."""

from __future__ import annotations

from pathlib import Path

from jobset.commands.submit import load_and_check

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "failure-policy-restartjob.yaml"


def test_restart_job_needs_its_gate() -> None:
    text = EXAMPLE.read_text()
    _, errors = load_and_check(text, None)
    assert len(errors) == 1 and "RestartJob feature gate is disabled" in errors[0]
    _, errors = load_and_check(text, None, {"RestartJob": True})
    assert errors == []
