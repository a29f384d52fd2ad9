"""The affinity strategy's pod reconciler against a real API server (`--sim-level none`).

Pods are written directly (no webhooks, no job controller), the way a stale follower
admission would leave them: the leader bound in pool-0, one follower pinned to pool-1.
The reconciler must mark every follower `DisruptionTarget`/`ExclusivePlacementViolation`
and delete them, and leave a correctly placed Job alone.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from jobset.api import constants as c
from jobset.placement.caches import POD_INDEXERS, PlacementCaches
from jobset.placement.pod_controller import PodReconciler
from jobset.runtime.client import JOBS, NODES, PODS, ApiError, Client
from jobset.runtime.controller import Request
from jobset.runtime.informer import Informer
from kubesim.process import SimProcess, start_sim

POOL = "cloud.google.com/gke-nodepool"
pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    s = start_sim(
        tmp_path_factory.mktemp("sim"), "--sim-level", "none", "--nodes", f"pools=2x1,label={POOL}"
    )
    yield s
    s.stop()


@pytest.fixture
async def client(sim: SimProcess) -> AsyncIterator[Client]:
    c_ = await Client.connect(str(sim.kubeconfig))
    yield c_
    await c_.close()


async def owner(client: Client, name: str) -> str:
    """A real Job to own the pods (the garbage collector deletes pods of a missing owner)."""
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}
            }
        },
    }
    return str((await client.create(JOBS, job, "default"))["metadata"]["uid"])


def pod(job: str, index: int, uid: str, *, node: str = "", selector: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}]}
    if node:
        spec["nodeName"] = node
    if selector:
        spec["nodeSelector"] = {POOL: selector}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{job}-{index}-abcde",
            "namespace": "default",
            "labels": {
                c.JOBSET_NAME_KEY: job.split("-")[0],
                c.REPLICATED_JOB_NAME_KEY: "w",
                c.JOB_INDEX_KEY: "0",
                c.JOB_KEY: f"key-{job}",
            },
            "annotations": {
                c.JOBSET_NAME_KEY: job.split("-")[0],
                c.EXCLUSIVE_KEY: POOL,
                c.JOB_COMPLETION_INDEX_ANNOTATION: str(index),
            },
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": job,
                    "uid": uid,
                    "controller": True,
                }
            ],
        },
        "spec": spec,
    }


async def test_misplaced_followers_are_marked_and_deleted(client: Client) -> None:
    nodes = (await client.list(NODES))["items"]
    by_pool = {n["metadata"]["labels"][POOL]: n["metadata"]["name"] for n in nodes}
    pools = sorted(by_pool)
    bad, good = await owner(client, "bad-w-0"), await owner(client, "good-w-0")
    for p in (
        pod("bad-w-0", 0, bad, node=by_pool[pools[0]]),
        pod("bad-w-0", 1, bad, selector=pools[0]),
        pod("bad-w-0", 2, bad, selector=pools[1]),
        pod("good-w-0", 0, good, node=by_pool[pools[1]]),
        pod("good-w-0", 1, good, selector=pools[1]),
    ):
        await client.create(PODS, p, "default")
    pods = Informer(client, PODS, label_selector=c.JOBSET_NAME_KEY, indexers=POD_INDEXERS)
    node_inf = Informer(client, NODES)
    for inf in (pods, node_inf):
        inf.start()
        await inf.wait_for_sync(10)
    try:
        reconciler = PodReconciler(client, PlacementCaches(pods, node_inf))
        await reconciler.reconcile(Request("default", "good-w-0-0-abcde"))
        assert reconciler.deleted == 0
        await reconciler.reconcile(Request("default", "bad-w-0-0-abcde"))
        assert reconciler.deleted == 2
        for name in ("bad-w-0-1-abcde", "bad-w-0-2-abcde"):
            with pytest.raises(ApiError) as err:
                await client.get(PODS, name, "default")
            assert err.value.not_found
        await client.get(PODS, "bad-w-0-0-abcde", "default")  # the leader stays
        await client.get(PODS, "good-w-0-1-abcde", "default")
    finally:
        for inf in (pods, node_inf):
            await inf.stop()


async def test_the_violation_condition_is_written_before_deletion(client: Client) -> None:
    nodes = (await client.list(NODES))["items"]
    pools = sorted({n["metadata"]["labels"][POOL] for n in nodes})
    leader_node = next(
        n["metadata"]["name"] for n in nodes if n["metadata"]["labels"][POOL] == pools[0]
    )
    uid = await owner(client, "cond-w-0")
    follower = pod("cond-w-0", 1, uid, selector=pools[1])
    follower["metadata"]["finalizers"] = ["test/hold"]  # keep it around to inspect
    await client.create(PODS, pod("cond-w-0", 0, uid, node=leader_node), "default")
    await client.create(PODS, follower, "default")
    pods = Informer(client, PODS, label_selector=c.JOBSET_NAME_KEY, indexers=POD_INDEXERS)
    node_inf = Informer(client, NODES)
    for inf in (pods, node_inf):
        inf.start()
        await inf.wait_for_sync(10)
    try:
        await PodReconciler(client, PlacementCaches(pods, node_inf)).reconcile(
            Request("default", "cond-w-0-0-abcde")
        )
        got = await client.get(PODS, "cond-w-0-1-abcde", "default")
        assert got["metadata"].get("deletionTimestamp")
        cond = next(x for x in got["status"]["conditions"] if x["type"] == "DisruptionTarget")
        assert cond["status"] == "True" and cond["reason"] == c.EXCLUSIVE_PLACEMENT_VIOLATION_REASON
    finally:
        for inf in (pods, node_inf):
            await inf.stop()
        await client.patch(PODS, "cond-w-0-1-abcde", {"metadata": {"finalizers": None}}, "default")
