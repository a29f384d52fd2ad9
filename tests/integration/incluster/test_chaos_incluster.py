"""Chaos against the deployed controller: the chart's 2 replicas in
`jobset sim --data-dir`, JobSets of mixed shapes running, and a seeded schedule of faults
aimed at the leader (`chaos.py`: its pod deleted, its process SIGKILLed, its node drained
and uncordoned, its network to the API server cut while the standby's stays up, the API
server restarted). Across all of it: no Job created twice and no restart attempt run twice
(checked on the server's journal), restart counts exact, every JobSet ends as the JobSet
API defines, and the lease moves to another holder after every fault; the takeover times
are printed (`-s` shows them), not asserted.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kubesim.process import free_port
from tests.integration.incluster.chaos import FAULTS, ChaosCluster, run_chaos
from tests.integration.incluster.conftest import LEADER_ELECTION, current_leader

VALUES = {
    "controller": {"replicas": 2, "leaderElection": LEADER_ELECTION},
    "podDisruptionBudget": {"enabled": True, "minAvailable": 1},
}


@pytest.fixture
def chaos(controller_bin: Path, tmp_path: Path) -> Iterator[ChaosCluster]:
    """A cluster of its own (restartable, `--data-dir`) with the chart installed; stopped
    with everything in it afterwards."""
    chaos = ChaosCluster.start(tmp_path, controller_bin, free_port())
    try:
        release = chaos.cluster.install(VALUES)
        assert release["status"] == "deployed"
        chaos.cluster.rollout()
        current_leader(chaos.cluster)
        yield chaos
    finally:
        chaos.stop()


@pytest.mark.timeout(900)
def test_every_fault_once_loses_nothing(chaos: ChaosCluster) -> None:
    report = run_chaos(chaos, seed=19, rounds=len(FAULTS), total_jobsets=8)
    print("chaos figures:", report.figures())
    assert sorted(report.takeovers) == sorted(FAULTS)


@pytest.mark.soak
@pytest.mark.timeout(3600)
def test_soak_50_jobsets_under_a_seeded_fault_schedule(chaos: ChaosCluster) -> None:
    report = run_chaos(chaos, seed=1919, rounds=3 * len(FAULTS), total_jobsets=50)
    print("chaos figures:", report.figures())
    assert all(len(v) == 3 for v in report.takeovers.values())
