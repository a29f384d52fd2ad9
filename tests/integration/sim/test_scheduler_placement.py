"""The simulated scheduler, end to end: pods created over HTTPS land where Kubernetes would put them."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client, config

from kubesim.cluster import SimCluster, SimOptions

POOL = "cloud.google.com/gke-nodepool"
# Two plain pools of 2 nodes, two GPU pools of 2 nodes (2 GPUs each) tainted for GPU pods only.
NODES = "prefix=cpu,2x2;prefix=gpu,2x2,gpu=2,taint=nvidia.com/gpu=present:NoSchedule"


@pytest.fixture
async def core(tmp_path: Path) -> AsyncIterator[client.CoreV1Api]:
    sim = SimCluster(
        SimOptions(kubeconfig=str(tmp_path / "kc"), sim_level="pods", nodes=NODES, time_scale=0.01)
    )
    await sim.start()
    cfg = client.Configuration()
    await config.load_kube_config(config_file=sim.kubeconfig, client_configuration=cfg)
    async with client.ApiClient(cfg) as api:
        yield client.CoreV1Api(api)
    await sim.stop()


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    labels = spec.pop("labels", {})
    container: dict[str, Any] = {"name": "c", "image": "busybox", "command": ["sleep", "infinity"]}
    if "resources" in spec:
        container["resources"] = spec.pop("resources")
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [container], **spec},
    }


async def _settle(core: client.CoreV1Api, ns: str, names: list[str]) -> dict[str, Any]:
    """Wait until each pod is bound or marked unschedulable; return them by name."""
    pods: dict[str, Any] = {}
    for _ in range(100):
        listed = await core.list_namespaced_pod(ns)
        pods = {p.metadata.name: p for p in listed.items}
        done = all(
            n in pods
            and (
                pods[n].spec.node_name
                or any(
                    c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable"
                    for c in pods[n].status.conditions or []
                )
            )
            for n in names
        )
        if done:
            return pods
        await asyncio.sleep(0.1)
    raise AssertionError(f"pods did not settle: {pods}")


async def _nodes(core: client.CoreV1Api) -> dict[str, dict[str, str]]:
    return {n.metadata.name: n.metadata.labels for n in (await core.list_node()).items}


async def _namespace(core: client.CoreV1Api) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    await core.create_namespace({"metadata": {"name": name}})
    return name


async def test_node_selector_and_taints(core: client.CoreV1Api) -> None:
    ns = await _namespace(core)
    await core.create_namespaced_pod(ns, _pod("pinned-dict", nodeSelector={POOL: "cpu-1"}))
    for i in range(6):
        await core.create_namespaced_pod(ns, _pod(f"plain-{i}"))
    names = ["pinned-dict"] + [f"plain-{i}" for i in range(6)]
    pods = await _settle(core, ns, names)
    nodes = await _nodes(core)
    assert nodes[pods["pinned-dict"].spec.node_name][POOL] == "cpu-1"
    # Pods without the toleration never land on the tainted GPU nodes.
    assert {nodes[pods[f"plain-{i}"].spec.node_name][POOL] for i in range(6)} <= {"cpu-0", "cpu-1"}
    # Spread over several nodes (score ties are broken at random, as kube-scheduler does).
    assert len({pods[f"plain-{i}"].spec.node_name for i in range(6)}) >= 2


async def test_extended_resource_capacity(core: client.CoreV1Api) -> None:
    ns = await _namespace(core)
    toleration = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    gpus = {"limits": {"nvidia.com/gpu": "2"}}
    names = [f"trainer-{i}" for i in range(5)]
    for name in names:
        await core.create_namespaced_pod(ns, _pod(name, tolerations=toleration, resources=gpus))
    pods = await _settle(core, ns, names)
    bound = [p for p in pods.values() if p.spec.node_name]
    nodes = await _nodes(core)
    assert len(bound) == 4  # 4 GPU nodes x 2 GPUs, 2 per pod
    assert {nodes[p.spec.node_name][POOL] for p in bound} == {"gpu-0", "gpu-1"}
    waiting = [p for p in pods.values() if not p.spec.node_name]
    message = next(c.message for c in waiting[0].status.conditions if c.type == "PodScheduled")
    assert "Insufficient nvidia.com/gpu" in message and message.startswith(
        "0/8 nodes are available"
    )


async def test_required_anti_affinity_gives_one_pod_per_domain(core: client.CoreV1Api) -> None:
    ns = await _namespace(core)
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"group": "exclusive"}}, "topologyKey": POOL}
            ]
        }
    }
    names = [f"member-{i}" for i in range(3)]
    for name in names:
        await core.create_namespaced_pod(
            ns, _pod(name, labels={"group": "exclusive"}, affinity=anti)
        )
    pods = await _settle(core, ns, names)
    nodes = await _nodes(core)
    bound = [p for p in pods.values() if p.spec.node_name]
    # Only the two untainted pools are usable: two pods, in two different pools.
    assert len(bound) == 2
    assert len({nodes[p.spec.node_name][POOL] for p in bound}) == 2
    waiting = next(p for p in pods.values() if not p.spec.node_name)
    message = next(c.message for c in waiting.status.conditions if c.type == "PodScheduled")
    assert "anti-affinity" in message
