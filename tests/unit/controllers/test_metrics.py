"""JobSet metrics: bounded labels by default, the phase gauge counted at scrape time."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from jobset.controllers.jobset_controller import jobset_phase
from jobset.controllers.metrics import JobSetMetrics, JobSetPhaseCollector

from .helpers import jobset, rjob


def test_counters_drop_jobset_name_unless_asked() -> None:
    reg = CollectorRegistry()
    m = JobSetMetrics(reg)
    m.jobset_failed("a", "ns")
    m.jobset_failed("b", "ns")
    assert reg.get_sample_value("jobset_failed_total", {"jobset_name": "", "namespace": "ns"}) == 2
    reg2 = CollectorRegistry()
    m2 = JobSetMetrics(reg2, per_jobset_names=True)
    m2.jobset_completed("a", "ns")
    m2.jobset_restarted("a", "ns", "job")
    assert (
        reg2.get_sample_value("jobset_completed_total", {"jobset_name": "a", "namespace": "ns"})
        == 1
    )
    assert (
        reg2.get_sample_value(
            "jobset_restarts_total", {"jobset_name": "a", "namespace": "ns", "scope": "job"}
        )
        == 1
    )


def test_phase_gauge_counts_at_scrape_time() -> None:
    reg = CollectorRegistry()
    counts = {("ns", "Running"): 2}
    JobSetPhaseCollector(reg, lambda: counts)
    assert reg.get_sample_value("jobset_jobsets", {"namespace": "ns", "phase": "Running"}) == 2
    counts[("ns", "Failed")] = 1
    assert reg.get_sample_value("jobset_jobsets", {"namespace": "ns", "phase": "Failed"}) == 1
    assert b'jobset_jobsets{namespace="ns",phase="Running"} 2.0' in generate_latest(reg)


@pytest.mark.parametrize(
    ("conditions", "suspend", "phase"),
    [
        ([], False, "Running"),
        ([], True, "Suspended"),
        ([{"type": "RestartingJobSet", "status": "True"}], False, "Restarting"),
        ([{"type": "Completed", "status": "True"}], True, "Completed"),
        ([{"type": "Failed", "status": "True"}], False, "Failed"),
    ],
    ids=["running", "suspended", "restarting", "completed wins over suspend", "failed"],
)
def test_jobset_phase(conditions: list[dict[str, str]], suspend: bool, phase: str) -> None:
    js = jobset(rjob("a"), suspend=suspend, status={"conditions": conditions})
    assert jobset_phase(js) == phase
