"""A `jobset sim --sim-level pods` with 4 node pools x 4 nodes, and the controller harness."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kubesim.process import SimProcess, start_sim
from tests.integration.placement.process import HarnessProcess, start_harness

POOL_KEY = "cloud.google.com/gke-nodepool"


@pytest.fixture(scope="module")
def sim_pods(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    s = start_sim(
        tmp_path_factory.mktemp("sim"),
        "--sim-level",
        "pods",
        "--time-scale",
        "0.1",
        "--nodes",
        f"pools=4x4,label={POOL_KEY},cpu=8",
    )
    yield s
    s.stop()


@pytest.fixture(scope="module")
def harness(sim_pods: SimProcess) -> Iterator[HarnessProcess]:
    h = start_harness(sim_pods)
    yield h
    h.stop()
