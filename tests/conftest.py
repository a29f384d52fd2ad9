"""Shared fixtures: a real `jobset sim` process on a free port."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kubesim.process import SimProcess, start_sim

__all__ = ["SimProcess", "start_sim"]


@pytest.fixture(scope="session")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    """One simulated cluster (pods level, 4 pools x 2 nodes, fast time) shared by a session."""
    tmp = tmp_path_factory.mktemp("sim")
    s = start_sim(
        tmp,
        "--sim-level",
        "pods",
        "--time-scale",
        "0.05",
        "--nodes",
        "pools=4x2,label=cloud.google.com/gke-nodepool",
    )
    yield s
    s.stop()
