"""Fixtures shared by the simulated API server's tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kubesim.cluster import SimCluster, SimOptions


@pytest.fixture
async def plain_cluster(tmp_path: Path) -> AsyncIterator[SimCluster]:
    """An in-process simulated cluster at sim level none, plain HTTP on a free port: for
    tests that talk to the server with a bare HTTP client."""
    sim = SimCluster(
        SimOptions(kubeconfig=str(tmp_path / "kc"), sim_level="none", tls=False, port=0)
    )
    await sim.start()
    yield sim
    await sim.stop()
