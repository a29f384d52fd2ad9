"""Fixtures of the reliability suite: an in-process simulated cluster with a fault plan and
the invariant checker on its store, and the controller processes a test starts."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import pytest

from jobset.controllers.crd import apply_crds
from jobset.runtime.client import Client
from kubesim.cluster import SimCluster, SimOptions

from .harness import Controllers, Invariants, controllers_fixture

ClusterFactory = Callable[..., AbstractAsyncContextManager[tuple[SimCluster, Invariants]]]


@pytest.fixture
def controllers() -> Iterator[Controllers]:
    yield from controllers_fixture()


@pytest.fixture
def cluster_factory(tmp_path: Path) -> ClusterFactory:
    @asynccontextmanager
    async def make(
        faults: str | None = None, nodes: str = "8", **options: object
    ) -> AsyncIterator[tuple[SimCluster, Invariants]]:
        plan = None
        if faults is not None:
            plan = tmp_path / "faults.yaml"
            plan.write_text(faults)
        cluster = SimCluster(
            SimOptions(
                kubeconfig=str(tmp_path / "kubeconfig"),
                sim_level=str(options.pop("sim_level", "pods")),
                nodes=nodes,
                faults=str(plan) if plan else None,
                **options,  # type: ignore[arg-type]
            )
        )
        invariants = Invariants()
        cluster.store.listeners.append(invariants)
        # Install the CRD before the plan's faults can hit it: arm the plan afterwards.
        await cluster.start()
        try:
            # The CRD through a client that retries whatever the plan injects.
            for _ in range(50):
                client = await Client.connect(cluster.kubeconfig)
                try:
                    await apply_crds(client)
                    break
                except Exception:
                    continue
                finally:
                    await client.close()
            yield cluster, invariants
        finally:
            await cluster.stop()

    return make
