"""Shared fixtures: a real `jobset sim` process on a free port.

- `sim`: one pods-level cluster for the session (fast time, 4 pools x 2 nodes).
- `sim_none`: one `--sim-level none` cluster per module (nothing advances Job status; tests
  drive it through `/status`, as upstream's envtest tests do). Directories whose tests need
  the JobSet CRD override it with `tests.sims.start_sim_none(..., jobset_crd=True)`.

`make test` runs on two pytest-xdist workers with `--dist loadgroup`; every test is grouped
by its file, so a module's fixtures start once, and the in-cluster package is one group, so
its image venv is built once and its clusters never run beside each other.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kubesim.process import SimProcess, start_sim
from tests.sims import start_sim_none

__all__ = ["SimProcess", "start_sim", "start_sim_none"]

TESTS = Path(__file__).resolve().parent
INCLUSTER = TESTS / "integration" / "incluster"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The xdist group of each test: its file, or `incluster` for the in-cluster package."""
    for item in items:
        path = Path(item.path).resolve()
        group = "incluster" if path.is_relative_to(INCLUSTER) else str(path.relative_to(TESTS))
        item.add_marker(pytest.mark.xdist_group(group))


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
