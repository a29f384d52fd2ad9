"""Fixtures: one `jobset sim --sim-level none` process per module, and a runtime client."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from jobset.runtime.client import Client
from jobset.runtime.metrics import RuntimeMetrics
from kubesim.process import SimProcess


@pytest.fixture
async def client(sim_none: SimProcess) -> AsyncIterator[Client]:
    c = await Client.connect(str(sim_none.kubeconfig), qps=200, burst=400, metrics=RuntimeMetrics())
    yield c
    await c.close()
