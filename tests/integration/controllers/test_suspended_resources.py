"""KEP-1150 end to end: a suspended JobSet's container resources change (as Kueue
right-sizes a queued workload) and its Jobs get them on resume, with the controller's gate
MutablePodResourcesForSuspendedJobSets on.

Two simulated API servers (`--sim-level none`, no webhook: the controller judges the update
by the update rules itself): one with Kubernetes' MutablePodResourcesForSuspendedJobs
(KEP-5440), where the resources reach the Jobs, and one without (Kubernetes' default),
where the Job template stays immutable: the Jobs stay suspended and the JobSet gets a
`FailedResourcePropagation` Warning event, as the KEP decides.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from jobset.api import constants as c
from jobset.resources import JOBSETS
from jobset.runtime.client import EVENTS, Client
from kubesim.process import SimProcess
from tests.eventually import eventually
from tests.sims import start_sim_none

from .conftest import running_controller
from .helpers import Env, jobset, rjob

pytestmark = pytest.mark.timeout(180)

GATES = {c.FEATURE_MUTABLE_POD_RESOURCES: True}
_ns = itertools.count()


@pytest.fixture(scope="module")
def sim_kep5440(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    s = start_sim_none(
        tmp_path_factory.mktemp("sim"),
        "--kube-feature-gates",
        "MutablePodResourcesForSuspendedJobs=true",
        jobset_crd=True,
    )
    yield s
    s.stop()


async def _env(sim: SimProcess) -> AsyncIterator[Env]:
    async with running_controller(sim, GATES) as (_manager, controller):
        client = await Client.connect(str(sim.kubeconfig), qps=500, burst=1000)
        ns = f"r{next(_ns)}"
        await client.create(
            Env.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        )
        try:
            yield Env(client, ns, sim, controller)
        finally:
            await client.close()


@pytest.fixture
async def env_kep5440(sim_kep5440: SimProcess) -> AsyncIterator[Env]:
    async for env in _env(sim_kep5440):
        yield env


@pytest.fixture
async def env_default(sim_none: SimProcess) -> AsyncIterator[Env]:
    async for env in _env(sim_none):
        yield env


def _queued(name: str) -> dict[str, Any]:
    resources = {"requests": {"cpu": "4", "memory": "1Gi"}, "limits": {"memory": "1Gi"}}
    w = rjob("w", 2, container_fields={"resources": resources})
    return jobset(name, w, suspend=True)


async def _resize_and_resume(env: Env, name: str) -> None:
    await env.wait_jobs(name, 2, lambda jobs: all(j["spec"]["suspend"] for j in jobs))
    js = await env.get(name)
    new = copy.deepcopy(js)
    container = new["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "containers"
    ][0]
    container["resources"] = {"requests": {"cpu": "2"}, "limits": {"cpu": "2"}}
    await env.client.update(JOBSETS, new)
    # The controller judged the new generation by the update rules: not failed.
    await env.wait_jobset(name, lambda o: o["metadata"]["generation"] == 2)
    await env.client.patch(JOBSETS, name, {"spec": {"suspend": False}}, env.ns)


def _resources(job: dict[str, Any]) -> dict[str, Any]:
    return dict(job["spec"]["template"]["spec"]["containers"][0]["resources"])


async def test_resumed_jobs_get_the_resources_set_while_suspended(env_kep5440: Env) -> None:
    env = env_kep5440
    await env.create(_queued("sized"))
    await _resize_and_resume(env, "sized")
    jobs = await env.wait_jobs("sized", 2, lambda jobs: not any(j["spec"]["suspend"] for j in jobs))
    for job in jobs:
        assert _resources(job) == {"requests": {"cpu": "2"}, "limits": {"cpu": "2"}}
    js = await env.get("sized")
    assert not any(
        cond["type"] == c.CONDITION_FAILED and cond["status"] == "True"
        for cond in js["status"].get("conditions", [])
    )


async def test_without_kep5440_the_jobs_stay_suspended_with_a_warning(env_default: Env) -> None:
    env = env_default
    await env.create(_queued("stuck"))
    await _resize_and_resume(env, "stuck")

    async def warnings() -> list[dict[str, Any]]:
        out = await env.client.list(EVENTS, env.ns)
        return [e for e in out["items"] if e.get("reason") == c.RESOURCE_PROPAGATION_FAILED_REASON]

    found = await eventually(warnings, within=60, what="FailedResourcePropagation event")
    assert found[0]["type"] == "Warning"
    assert found[0]["involvedObject"]["name"] == "stuck"
    assert "Ensure MutablePodResourcesForSuspendedJobs is enabled" in found[0]["message"]
    for job in await env.jobs("stuck"):
        assert job["spec"]["suspend"] is True
        assert _resources(job)["requests"] == {"cpu": "4", "memory": "1Gi"}
