"""Shared fixtures: a real `jobset sim` process on a free port.

- `sim`: one pods-level cluster for the session (fast time, 4 pools x 2 nodes).
- `sim_none`: one `--sim-level none` cluster per module (nothing advances Job status; tests
  drive it through `/status`, as upstream's envtest tests do). Directories whose tests need
  the JobSet CRD override it with `tests.sims.start_sim_none(..., jobset_crd=True)`.

`make test` runs on two pytest-xdist workers with `--dist loadfile`: a file's tests run in
order on one worker, so module fixtures start once and tests that build on the ones before
them still can. Session and package fixtures (`sim`, the in-cluster image venv) start once
per worker.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kubesim.process import SimProcess, start_sim
from tests.sims import start_sim_none

__all__ = ["SimProcess", "start_sim", "start_sim_none"]


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


@pytest.fixture(scope="module")
def sim_none(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    """A `--sim-level none` cluster for one module, without the JobSet CRD."""
    s = start_sim_none(tmp_path_factory.mktemp("sim"))
    yield s
    s.stop()
