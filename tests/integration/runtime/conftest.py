"""Fixtures: one `jobset sim --sim-level none` process per module, and a runtime client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from jobset.runtime.client import Client
from jobset.runtime.metrics import RuntimeMetrics
from kubesim.process import SimProcess, start_sim


@pytest.fixture(scope="module")
def sim_none(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    s = start_sim(tmp_path_factory.mktemp("sim"), "--sim-level", "none")
    yield s
    s.stop()


@pytest.fixture
async def client(sim_none: SimProcess) -> AsyncIterator[Client]:
    c = await Client.connect(str(sim_none.kubeconfig), qps=200, burst=400, metrics=RuntimeMetrics())
    yield c
    await c.close()
