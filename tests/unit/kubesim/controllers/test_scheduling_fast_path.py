"""The scheduler's fast pass (`schedule()` for a pod with nothing but cpu and memory to fit,
over the `free_*` fields of `NodeInfo`, and the snapshot's in-place update of a confirmed
binding) decides exactly as the plugin-by-plugin path (`fast=False`) does: same node, same
message, same scan, same use of the random stream."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from kubesim.base.resources import pod_requests
from kubesim.controllers.scheduler.scheduling import MAX_NODES_TO_SCORE, FilterScan, schedule
from kubesim.controllers.scheduler.snapshot import ClusterSnapshot

TAINTS = [
    {"key": "gpu", "value": "yes", "effect": "NoSchedule"},
    {"key": "spot", "effect": "NoExecute"},
    {"key": "soft", "effect": "PreferNoSchedule"},
]


def random_node(r: random.Random, name: str) -> dict[str, Any]:
    node: dict[str, Any] = {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {},
        "status": {"conditions": [{"type": "Ready", "status": r.choice(["True"] * 9 + ["False"])}]},
    }
    if r.random() < 0.9:
        alloc = {
            "cpu": r.choice(["1", "2", "3500m", "8"]),
            "memory": r.choice(["2Gi", "4Gi", "16Gi"]),
            "pods": r.choice(["2", "4", "110"]),
        }
        if r.random() < 0.3:
            alloc["ephemeral-storage"] = r.choice(["1Gi", "10Gi"])
        if r.random() < 0.1:
            del alloc[r.choice(["cpu", "memory"])]
        node["status"]["allocatable"] = alloc
    if r.random() < 0.2:
        node["spec"]["taints"] = [r.choice(TAINTS)]
    if r.random() < 0.05:
        node["spec"]["unschedulable"] = True
    return node


def random_pod(r: random.Random, name: str) -> dict[str, Any]:
    requests: dict[str, str] = {}
    if r.random() < 0.8:
        requests["cpu"] = r.choice(["250m", "1", "2"])
    if r.random() < 0.8:
        requests["memory"] = r.choice(["512Mi", "1Gi", "3Gi"])
    if r.random() < 0.1:
        requests["ephemeral-storage"] = "2Gi"
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": requests}}],
        "tolerations": [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
        ],
    }
    if r.random() < 0.3:
        spec["tolerations"].append(r.choice([{"key": "gpu", "operator": "Exists"}, {}]))
    if r.random() < 0.05:
        spec["preemptionPolicy"] = "Never"
    return {"metadata": {"name": name, "namespace": "ns", "labels": {"app": "x"}}, "spec": spec}


def shrink(node: dict[str, Any]) -> dict[str, Any]:
    """The node with a smaller capacity, so that its bound pods may overcommit it."""
    out = copy.deepcopy(node)
    out["status"]["allocatable"] = {"cpu": "500m", "memory": "1Gi", "pods": "3"}
    return out


@pytest.mark.parametrize("seed", range(12))
def test_fast_path_decides_as_the_general_path(seed: int) -> None:
    r = random.Random(seed)
    snap = ClusterSnapshot()
    nodes = [random_node(r, f"n{i}") for i in range(r.randint(20, 60))]
    for node in nodes:
        snap.add_node(node)
    bound: list[dict[str, Any]] = []
    fast = 0
    for i in range(250):
        pod = random_pod(r, f"p{i}")
        wanted = r.choice([1, 3, 10, MAX_NODES_TO_SCORE])
        pick_seed = r.randrange(2**32)
        got_rng, want_rng = random.Random(pick_seed), random.Random(pick_seed)
        got_scan, want_scan = FilterScan(), FilterScan()
        got = schedule(pod, snap, got_rng, nodes_to_score=wanted, scan=got_scan)
        want = schedule(pod, snap, want_rng, nodes_to_score=wanted, scan=want_scan, fast=False)
        assert got == want
        assert not want_scan.fast_path
        fast += got_scan.fast_path
        got_scan.fast_path = False
        assert got_scan == want_scan
        assert got_rng.getstate() == want_rng.getstate()
        want_node = want[0]
        if want_node is not None:
            assumed = snap.assume(pod, want_node)
            # The binding's watch event: a new object with the same scheduling facts.
            snap.add_pod({**assumed, "status": {"phase": "Running"}})
            bound.append(assumed)
        churn = r.random()
        if churn < 0.15 and bound:
            snap.remove_pod(bound.pop(r.randrange(len(bound))))
        elif churn < 0.2 and bound:
            done = bound.pop(r.randrange(len(bound)))
            snap.add_pod({**done, "status": {"phase": "Succeeded"}})
        elif churn < 0.25:
            j = r.randrange(len(nodes))
            nodes[j] = shrink(nodes[j]) if r.random() < 0.5 else random_node(r, f"n{j}")
            snap.add_node(nodes[j])
    assert fast > 100  # the fast path was taken, not only compared


def recount(snap: ClusterSnapshot) -> dict[str, tuple[int, int, int]]:
    """Each node's free cpu, memory and pod slots, summed again from its pods."""
    out = {}
    for name, info in snap.nodes.items():
        used = {"cpu": 0, "memory": 0}
        for p in info.pods:
            for k, v in pod_requests(p).items():
                used[k] = used.get(k, 0) + v
        alloc = info.allocatable
        out[name] = (
            alloc.get("cpu", 0) - used["cpu"],
            alloc.get("memory", 0) - used["memory"],
            alloc.get("pods", 0) - len(info.pods),
        )
    return out


def free(snap: ClusterSnapshot) -> dict[str, tuple[int, int, int]]:
    return {n: (i.free_cpu, i.free_memory, i.free_pods) for n, i in snap.nodes.items()}


def test_free_capacity_follows_binds_updates_and_removals() -> None:
    r = random.Random(7)
    snap = ClusterSnapshot()
    for i in range(8):
        snap.add_node(random_node(r, f"n{i}"))
    pods = []
    for i in range(40):
        pod = random_pod(r, f"p{i}")
        node, _ = schedule(pod, snap, r)
        if node is not None:
            pods.append(snap.assume(pod, node))
        assert free(snap) == recount(snap)
    confirmed = {**pods[0], "status": {"phase": "Running"}}
    snap.add_pod(confirmed)
    assert any(p is confirmed for p in snap.nodes[confirmed["spec"]["nodeName"]].pods)
    assert free(snap) == recount(snap)
    bigger = copy.deepcopy(pods[1])
    bigger["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "3", "memory": "5Gi"}}
    snap.add_pod(bigger)  # a changed request is counted again, not swapped in
    assert free(snap) == recount(snap)
    snap.add_pod({**pods[2], "status": {"phase": "Failed"}})
    snap.remove_pod(pods[3])
    snap.add_node(shrink(snap.nodes[pods[4]["spec"]["nodeName"]].node))
    snap.remove_node(pods[5]["spec"]["nodeName"])
    assert free(snap) == recount(snap)
    assert [info.name for info in snap.infos] == snap.order


def test_pod_not_asking_for_cpu_fits_an_overcommitted_node() -> None:
    """NodeResourcesFit checks only what the pod asks for: a node already past its cpu still
    takes a pod that asks for memory alone."""
    snap = ClusterSnapshot()
    node = random_node(random.Random(0), "n")
    node["status"]["allocatable"] = {"cpu": "2", "memory": "8Gi", "pods": "10"}
    snap.add_node(node)
    hog = random_pod(random.Random(0), "hog")
    hog["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "2"}}
    snap.assume(hog, "n")
    snap.add_node(shrink(node))
    assert snap.nodes["n"].free_cpu < 0
    light = random_pod(random.Random(0), "light")
    light["spec"]["containers"][0]["resources"] = {"requests": {"memory": "100Mi"}}
    scan = FilterScan()
    assert schedule(light, snap, random.Random(0), scan=scan) == ("n", "")
    assert scan.fast_path
    heavy = random_pod(random.Random(0), "heavy")
    heavy["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m"}}
    node_name, message = schedule(heavy, snap, random.Random(0))
    assert node_name is None
    assert message.startswith("0/1 nodes are available: 1 Insufficient cpu.")


def test_a_confirmed_binding_goes_last_among_its_nodes_pods() -> None:
    """Swapping in the API server's bound object keeps the node's pods in the order that
    removing and adding the pod gives (gang preemption reads them in that order)."""
    snap = ClusterSnapshot()
    node = random_node(random.Random(0), "n")
    node["status"]["allocatable"] = {"cpu": "8", "memory": "8Gi", "pods": "10"}
    snap.add_node(node)
    first = snap.assume(random_pod(random.Random(1), "a"), "n")
    second = snap.assume(random_pod(random.Random(2), "b"), "n")
    confirmed = {**first, "status": {"phase": "Running"}}
    snap.add_pod(confirmed)
    assert snap.nodes["n"].pods == [second, confirmed]
    assert snap.nodes["n"].pods[1] is confirmed
    assert free(snap) == recount(snap)
