"""Fixtures: one `jobset sim --sim-level none` per module with the JobSet CRD installed, and
a JobSet controller (in this test's event loop) per test, with the feature gates it asks for.

At sim-level none nothing advances Job status: tests do it through `/status`, exactly like
upstream's envtest integration tests, while garbage collection and foreground deletion work
as in a real cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Iterator

import pytest

from jobset.controllers.jobset_controller import JobSetController
from jobset.runtime import Manager, ManagerOptions
from jobset.runtime.client import Client
from jobset.runtime.metrics import RuntimeMetrics, new_registry
from kubesim.process import SimProcess
from tests.sims import start_sim_none

from .helpers import Env

_ns_counter = itertools.count()


@pytest.fixture(scope="module")
def sim_none(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    s = start_sim_none(tmp_path_factory.mktemp("sim"), jobset_crd=True)
    yield s
    s.stop()


@contextlib.asynccontextmanager
async def running_controller(
    sim: SimProcess, features: dict[str, bool] | None = None, **kwargs: object
) -> AsyncIterator[tuple[Manager, JobSetController]]:
    """A manager + JobSet controller against `sim`, running until the block exits."""
    metrics = RuntimeMetrics(new_registry(process_metrics=False))
    client = await Client.connect(str(sim.kubeconfig), qps=500, burst=1000, metrics=metrics)
    options = ManagerOptions(
        kubeconfig=str(sim.kubeconfig),
        metrics_port=None,
        health_port=None,
        concurrency=4,
        graceful_shutdown_timeout=5,
    )
    manager = Manager(client, options, metrics)
    controller = JobSetController(manager, features=features, **kwargs)  # type: ignore[arg-type]
    task = asyncio.create_task(manager.run())
    try:
        for inf in manager.informers.values():
            await asyncio.wait_for(inf.wait_for_sync(), 30)
        yield manager, controller
    finally:
        manager.stop()
        await asyncio.wait_for(task, 30)


@pytest.fixture
def features() -> dict[str, bool]:
    """Feature gates of the controller under test (override per test module/function)."""
    return {}


@pytest.fixture
async def env(sim_none: SimProcess, features: dict[str, bool]) -> AsyncIterator[Env]:
    async with running_controller(sim_none, features) as (_manager, controller):
        client = await Client.connect(str(sim_none.kubeconfig), qps=500, burst=1000)
        ns = f"t{next(_ns_counter)}"
        await client.create(
            Env.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        )
        try:
            yield Env(client, ns, sim_none, controller)
        finally:
            await client.close()
