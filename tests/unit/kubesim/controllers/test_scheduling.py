"""Unit tests for the simulated scheduler (kubesim.controllers.scheduler)."""

from __future__ import annotations

import copy
import random
from fractions import Fraction
from typing import Any

import pytest

from kubesim.base.resources import pod_requests, resource_units
from kubesim.controllers.scheduler.scheduling import (
    NO_NODES_MESSAGE,
    SCHEDULING_GATED_MESSAGE,
    needs_scheduling,
    schedule,
)
from kubesim.controllers.scheduler.snapshot import ClusterSnapshot
from kubeutil.quantity import parse_quantity

POOL = "cloud.google.com/gke-nodepool"
JOB_KEY = "jobset.sigs.k8s.io/job-key"

# ---------------------------------------------------------------------------------------------
# helpers


def node(
    name: str,
    labels: dict[str, str] | None = None,
    alloc: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    ready: str | None = "True",
    unschedulable: bool = False,
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {},
        "status": {},
    }
    if alloc is not None:
        obj["status"]["allocatable"] = alloc
    if taints:
        obj["spec"]["taints"] = taints
    if unschedulable:
        obj["spec"]["unschedulable"] = True
    if ready is not None:
        obj["status"]["conditions"] = [{"type": "Ready", "status": ready}]
    return obj


def pod(
    name: str,
    labels: dict[str, str] | None = None,
    requests: dict[str, str] | None = None,
    namespace: str = "default",
    **spec: Any,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "busybox"}
    if requests:
        container["resources"] = {"requests": requests}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {"containers": [container], **spec},
    }


def term(
    topology_key: str,
    match_labels: dict[str, str] | None = None,
    exprs: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    selector: dict[str, Any] = {}
    if match_labels:
        selector["matchLabels"] = match_labels
    if exprs:
        selector["matchExpressions"] = exprs
    return {"labelSelector": selector, "topologyKey": topology_key, **extra}


def affinity(
    aff: list[dict[str, Any]] | None = None, anti: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if aff:
        out["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": aff}
    if anti:
        out["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": anti}
    return out


def snapshot(*nodes: dict[str, Any]) -> ClusterSnapshot:
    snap = ClusterSnapshot()
    for n in nodes:
        snap.add_node(n)
    return snap


def pools(n_pools: int, per_pool: int, **kw: Any) -> ClusterSnapshot:
    return snapshot(
        *(
            node(f"p{p}-n{i}", {POOL: f"pool-{p}"}, **kw)
            for p in range(n_pools)
            for i in range(per_pool)
        )
    )


def place(snap: ClusterSnapshot, p: dict[str, Any], seed: int = 0) -> str | None:
    name, msg = schedule(p, snap, random.Random(seed))
    if name is not None:
        assert msg == ""
        snap.assume(p, name)
    return name


def pool_of(snap: ClusterSnapshot, node_name: str) -> str:
    return snap.nodes[node_name].labels[POOL]


# ---------------------------------------------------------------------------------------------
# quantities and requests


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("100m", Fraction(1, 10)),
        ("2", 2),
        ("1.5", Fraction(3, 2)),
        ("128Gi", 128 * 2**30),
        ("1G", 10**9),
        ("1k", 1000),
        ("1Ki", 1024),
        ("1e3", 1000),
        ("1E3", 1000),
        ("1E", 10**18),
        ("2.5e-3", Fraction(1, 400)),
        ("-1", -1),
        ("+3", 3),
        (".5", Fraction(1, 2)),
        ("500u", Fraction(1, 2000)),
        ("7n", Fraction(7, 10**9)),
        (4, 4),
        (0.25, Fraction(1, 4)),
    ],
    ids=[
        "milli",
        "integer",
        "decimal",
        "binary giga",
        "decimal giga",
        "kilo",
        "kibi",
        "exponent",
        "capital exponent",
        "exa",
        "negative exponent",
        "negative",
        "explicit plus",
        "leading dot",
        "micro",
        "nano",
        "an int",
        "a float",
    ],
)
def test_parse_quantity(text: str | int | float, value: Fraction | int) -> None:
    assert parse_quantity(text) == value


def test_parse_quantity_returns_int_when_integral() -> None:
    assert type(parse_quantity("2Gi")) is int
    assert type(parse_quantity("1000m")) is int
    assert isinstance(parse_quantity("1500m"), Fraction)


@pytest.mark.parametrize("bad", ["", "abc", "1.2.3", "Gi", "1 Gi", "1gi", "1KiB", "--1", True])
def test_parse_quantity_rejects(bad: Any) -> None:
    with pytest.raises(ValueError):
        parse_quantity(bad)


def test_resource_units_round_up() -> None:
    assert resource_units("cpu", "100m") == 100
    assert resource_units("cpu", "1") == 1000
    assert resource_units("cpu", "0.0001") == 1
    assert resource_units("memory", "1.5") == 2
    assert resource_units("memory", "1Mi") == 2**20
    assert resource_units("nvidia.com/gpu", 8) == 8


def test_pod_requests_limits_default_requests_and_init_containers() -> None:
    p = pod("p")
    p["spec"]["containers"] = [
        {"name": "a", "resources": {"requests": {"cpu": "1"}, "limits": {"nvidia.com/gpu": "2"}}},
        {"name": "b", "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}}},
    ]
    p["spec"]["initContainers"] = [
        {"name": "i1", "resources": {"requests": {"cpu": "3"}}},
        {"name": "i2", "resources": {"requests": {"memory": "512Mi"}}},
    ]
    p["spec"]["overhead"] = {"cpu": "100m"}
    # cpu: max(1 + 0.5, 3) + 0.1 overhead; memory: max(1Gi, 512Mi); gpu from limits
    assert pod_requests(p) == {"cpu": 3100, "memory": 2**30, "nvidia.com/gpu": 2}


def test_pod_requests_sidecar_init_containers_keep_running() -> None:
    p = pod("p", requests={"cpu": "1"})
    p["spec"]["initContainers"] = [
        {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
        {"name": "init", "resources": {"requests": {"cpu": "1500m"}}},
    ]
    # app + sidecar = 2 cpu; during init: sidecar + init = 2.5 cpu
    assert pod_requests(p) == {"cpu": 2500}


def test_pod_requests_ignore_garbage() -> None:
    p = pod("p", requests={"cpu": "lots", "memory": "1Gi"})
    assert pod_requests(p) == {"memory": 2**30}


def test_needs_scheduling() -> None:
    assert needs_scheduling(pod("p"))
    assert not needs_scheduling(pod("p", nodeName="n1"))
    assert not needs_scheduling(pod("p", schedulerName="other"))
    done = pod("p")
    done["status"] = {"phase": "Succeeded"}
    assert not needs_scheduling(done)


# ---------------------------------------------------------------------------------------------
# basic filters


def test_no_nodes_and_scheduling_gates() -> None:
    assert schedule(pod("p"), ClusterSnapshot(), random.Random(0)) == (None, NO_NODES_MESSAGE)
    gated = pod("p", schedulingGates=[{"name": "example.com/gate"}])
    assert schedule(gated, snapshot(node("n1")), random.Random(0)) == (
        None,
        SCHEDULING_GATED_MESSAGE,
    )


def test_already_bound_pod_is_returned_as_is() -> None:
    assert schedule(pod("p", nodeName="n9"), snapshot(node("n1")), random.Random(0)) == ("n9", "")


def test_node_selector() -> None:
    snap = snapshot(node("a", {"disk": "ssd"}), node("b", {"disk": "hdd"}), node("c"))
    for seed in range(10):
        p = pod("p", nodeSelector={"disk": "ssd"})
        assert schedule(p, snap, random.Random(seed)) == ("a", "")
    name, msg = schedule(pod("p", nodeSelector={"disk": "nvme"}), snap, random.Random(0))
    assert name is None
    assert msg == (
        "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ({"key": "zone", "operator": "In", "values": ["z1", "z2"]}, {"a", "b"}),
        ({"key": "zone", "operator": "NotIn", "values": ["z1"]}, {"b", "c"}),
        ({"key": "zone", "operator": "Exists"}, {"a", "b"}),
        ({"key": "zone", "operator": "DoesNotExist"}, {"c"}),
        ({"key": "gen", "operator": "Gt", "values": ["3"]}, {"b"}),
        ({"key": "gen", "operator": "Lt", "values": ["4"]}, {"a"}),
        ({"key": "gen", "operator": "Gt", "values": ["x"]}, set()),
        ({"key": "zone", "operator": "Bogus"}, set()),
    ],
    ids=[
        "In",
        "NotIn",
        "Exists",
        "DoesNotExist",
        "Gt",
        "Lt",
        "Gt with a non-integer",
        "unknown operator",
    ],
)
def test_required_node_affinity_operators(expr: dict[str, Any], expected: set[str]) -> None:
    snap = snapshot(
        node("a", {"zone": "z1", "gen": "3"}),
        node("b", {"zone": "z2", "gen": "5"}),
        node("c", {"gen": "abc"}),
    )
    aff = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [expr]}]
            }
        }
    }
    got = {schedule(pod("p", affinity=aff), snap, random.Random(seed))[0] for seed in range(30)} - {
        None
    }
    assert got == expected


def test_node_affinity_terms_are_ored_and_match_fields() -> None:
    snap = snapshot(node("a", {"zone": "z1"}), node("b"), node("c"))
    aff = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]},
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["c"]}]},
                    {},  # an empty term matches nothing
                ]
            }
        }
    }
    got = {schedule(pod("p", affinity=aff), snap, random.Random(s))[0] for s in range(30)}
    assert got == {"a", "c"}


def test_taints_and_tolerations() -> None:
    gpu_taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    snap = snapshot(node("tainted", taints=[gpu_taint]))
    name, msg = schedule(pod("p"), snap, random.Random(0))
    assert name is None
    assert msg == (
        "0/1 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: present}. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    tolerating = [
        [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present"}],
        [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],  # default Equal
        [{"key": "nvidia.com/gpu", "operator": "Exists"}],
        [{"operator": "Exists"}],  # empty key + Exists tolerates everything
    ]
    for tolerations in tolerating:
        assert schedule(pod("p", tolerations=tolerations), snap, random.Random(0))[0] == "tainted"
    not_tolerating = [
        [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "absent"}],
        [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}],
        [{"key": "other", "operator": "Exists"}],
    ]
    for tolerations in not_tolerating:
        assert schedule(pod("p", tolerations=tolerations), snap, random.Random(0))[0] is None


def test_prefer_no_schedule_is_ignored_and_no_execute_is_enforced() -> None:
    soft = snapshot(node("n", taints=[{"key": "k", "effect": "PreferNoSchedule"}]))
    assert schedule(pod("p"), soft, random.Random(0))[0] == "n"
    hard = snapshot(node("n", taints=[{"key": "k", "effect": "NoExecute"}]))
    assert schedule(pod("p"), hard, random.Random(0))[0] is None


def test_unschedulable_and_not_ready_nodes_are_skipped() -> None:
    snap = snapshot(
        node("cordoned", unschedulable=True),
        node("down", ready="False"),
        node("lost", ready="Unknown"),
    )
    name, msg = schedule(pod("p"), snap, random.Random(0))
    assert name is None
    assert msg == (
        "0/3 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }"
        ", 1 node(s) had untolerated taint {node.kubernetes.io/unreachable: }"
        ", 1 node(s) were unschedulable. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    # The NoExecute tolerations every pod gets by default do not make a NotReady node usable.
    defaults = [
        {"key": k, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        for k in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
    ]
    assert schedule(pod("p", tolerations=defaults), snap, random.Random(0))[0] is None
    # A node without any Ready condition counts as Ready.
    assert schedule(pod("p"), snapshot(node("n", ready=None)), random.Random(0))[0] == "n"


def test_node_update_makes_it_ready_again() -> None:
    snap = snapshot(node("n", ready="False"))
    assert schedule(pod("p"), snap, random.Random(0))[0] is None
    snap.add_node(node("n", ready="True"))
    assert schedule(pod("p"), snap, random.Random(0))[0] == "n"


# ---------------------------------------------------------------------------------------------
# resources


def test_extended_resource_exhaustion_reason() -> None:
    snap = pools(4, 1, alloc={"cpu": "8", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "8"})
    placed = [place(snap, pod(f"w{i}", requests={"nvidia.com/gpu": "8"})) for i in range(4)]
    assert sorted(p or "" for p in placed) == ["p0-n0", "p1-n0", "p2-n0", "p3-n0"]
    name, msg = schedule(pod("w4", requests={"nvidia.com/gpu": "1"}), snap, random.Random(0))
    assert name is None
    assert msg == (
        "0/4 nodes are available: 4 Insufficient nvidia.com/gpu. "
        "preemption: 0/4 nodes are available: 4 No preemption victims found for incoming pod."
    )


def test_mixed_reasons_are_counted_and_sorted_like_kube_scheduler() -> None:
    nodes = [node(f"cpu-{i}", {"pool": "cpu"}) for i in range(4)]
    nodes += [node(f"gpu-{i}", {"pool": "gpu"}, alloc={"nvidia.com/gpu": "0"}) for i in range(12)]
    snap = snapshot(*nodes)
    p = pod(
        "p",
        requests={"nvidia.com/gpu": "1"},
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["gpu"]}]}
                    ]
                }
            }
        },
    )
    assert schedule(p, snap, random.Random(0)) == (
        None,
        "0/16 nodes are available: 12 Insufficient nvidia.com/gpu, "
        "4 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/16 nodes are available: 12 No preemption victims found for incoming "
        "pod, 4 Preemption is not helpful for scheduling.",
    )


def test_node_lacking_an_extended_resource_does_not_fit() -> None:
    snap = snapshot(node("plain"), node("tpu", alloc={"google.com/tpu": "4"}))
    assert schedule(pod("p", requests={"google.com/tpu": "4"}), snap, random.Random(0))[0] == "tpu"


def test_cpu_memory_and_pod_count_limits() -> None:
    snap = snapshot(node("n", alloc={"cpu": "2", "memory": "1Gi", "pods": "2"}))
    assert place(snap, pod("a", requests={"cpu": "1500m"})) == "n"
    name, msg = schedule(pod("b", requests={"cpu": "1", "memory": "2Gi"}), snap, random.Random(0))
    assert name is None
    assert msg == (
        "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory. "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )
    assert place(snap, pod("c", requests={"cpu": "500m"})) == "n"
    assert schedule(pod("d"), snap, random.Random(0)) == (
        None,
        "0/1 nodes are available: 1 Too many pods. "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
    )


def test_default_allocatable_when_node_reports_none() -> None:
    snap = snapshot(node("n"))
    assert schedule(pod("p", requests={"cpu": "32", "memory": "128Gi"}), snap, random.Random(0))[
        0
    ] == ("n")
    assert schedule(pod("p", requests={"cpu": "33"}), snap, random.Random(0))[0] is None


def test_removed_and_finished_pods_release_resources() -> None:
    snap = snapshot(node("n", alloc={"nvidia.com/gpu": "1"}))
    bound = snap.assume(pod("a", requests={"nvidia.com/gpu": "1"}), "n")
    assert snap.nodes["n"].requested["nvidia.com/gpu"] == 1
    assert schedule(pod("b", requests={"nvidia.com/gpu": "1"}), snap, random.Random(0))[0] is None
    finished = copy.deepcopy(bound)
    finished["status"] = {"phase": "Succeeded"}
    snap.add_pod(finished)  # MODIFIED event: the pod completed
    assert schedule(pod("b", requests={"nvidia.com/gpu": "1"}), snap, random.Random(0))[0] == "n"
    snap.add_pod(bound)
    assert schedule(pod("b", requests={"nvidia.com/gpu": "1"}), snap, random.Random(0))[0] is None
    snap.remove_pod(bound)
    assert snap.nodes["n"].pods == []
    assert snap.nodes["n"].requested == {}


def test_pod_bound_to_unknown_node_counts_when_node_arrives() -> None:
    snap = ClusterSnapshot()
    snap.add_pod(pod("a", requests={"cpu": "30"}, nodeName="late"))
    snap.add_node(node("late"))
    assert snap.nodes["late"].requested["cpu"] == 30000
    assert schedule(pod("b", requests={"cpu": "3"}), snap, random.Random(0))[0] is None
    snap.remove_node("late")
    snap.add_node(node("other"))
    assert schedule(pod("b", requests={"cpu": "3"}), snap, random.Random(0))[0] == "other"


def test_least_allocated_spreads_pods() -> None:
    snap = pools(1, 8)
    placed = [place(snap, pod(f"p{i}", requests={"cpu": "4"}), seed=i) for i in range(8)]
    assert len(set(placed)) == 8


def test_seeded_rng_makes_placement_reproducible() -> None:
    def run(seed: int) -> list[str | None]:
        snap = pools(4, 4)
        rng = random.Random(seed)
        out = []
        for i in range(20):
            p = pod(f"p{i}")
            name, _ = schedule(p, snap, rng)
            out.append(name)
            if name:
                snap.assume(p, name)
        return out

    assert run(7) == run(7)
    assert run(7) != run(8)


# ---------------------------------------------------------------------------------------------
# inter-pod affinity


def test_anti_affinity_gives_one_pod_per_domain_until_domains_run_out() -> None:
    snap = pools(4, 2)
    anti = affinity(anti=[term(POOL, {"app": "x"})])
    used = []
    for i in range(4):
        name = place(snap, pod(f"x{i}", {"app": "x"}, affinity=anti), seed=i)
        assert name is not None
        used.append(pool_of(snap, name))
    assert sorted(used) == ["pool-0", "pool-1", "pool-2", "pool-3"]
    name, msg = schedule(pod("x4", {"app": "x"}, affinity=anti), snap, random.Random(0))
    assert name is None
    assert msg == (
        "0/8 nodes are available: 8 node(s) didn't match pod anti-affinity rules. "
        "preemption: 0/8 nodes are available: 8 No preemption victims found for incoming pod."
    )
    # Pods in another namespace are not selected by default.
    assert place(snap, pod("y", {"app": "x"}, namespace="other", affinity=anti)) is not None


def test_existing_pods_anti_affinity_is_symmetric() -> None:
    snap = pools(2, 1)
    guard = pod("guard", {"app": "db"}, affinity=affinity(anti=[term(POOL, {"app": "web"})]))
    guard_node = place(snap, guard)
    assert guard_node is not None
    for seed in range(10):
        name = schedule(pod("web", {"app": "web"}), snap, random.Random(seed))[0]
        assert name is not None and name != guard_node
    snap2 = pools(1, 2)
    place(snap2, guard)
    assert schedule(pod("web", {"app": "web"}), snap2, random.Random(0)) == (
        None,
        "0/2 nodes are available: 2 node(s) didn't satisfy existing pods anti-affinity rules. "
        "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.",
    )
    # a pod the term does not select is fine
    assert schedule(pod("other", {"app": "cache"}), snap2, random.Random(0))[0] is not None


def test_pod_affinity_colocates_and_first_pod_may_go_anywhere() -> None:
    snap = pools(4, 4)
    aff = affinity(aff=[term(POOL, {"group": "g1"})])
    first = place(snap, pod("g1-0", {"group": "g1"}, affinity=aff), seed=3)
    assert first is not None
    for i in range(1, 4):
        name = place(snap, pod(f"g1-{i}", {"group": "g1"}, affinity=aff), seed=i)
        assert name is not None
        assert pool_of(snap, name) == pool_of(snap, first)
    # A pod that does not match its own term and finds no partner cannot schedule.
    lonely = pod("l", {"group": "other"}, affinity=affinity(aff=[term(POOL, {"group": "g9"})]))
    assert schedule(lonely, snap, random.Random(0)) == (
        None,
        "0/16 nodes are available: 16 node(s) didn't match pod affinity rules. "
        "preemption: 0/16 nodes are available: 16 Preemption is not helpful for scheduling.",
    )


def test_affinity_needs_topology_label_anti_affinity_does_not() -> None:
    snap = snapshot(node("unlabelled"))
    aff = affinity(aff=[term(POOL, {"g": "1"})])
    assert schedule(pod("a", {"g": "1"}, affinity=aff), snap, random.Random(0))[0] is None
    anti = affinity(anti=[term(POOL, {"g": "1"})])
    snap.assume(pod("b", {"g": "1"}), "unlabelled")
    # kube-scheduler: a node outside every domain of the key cannot violate anti-affinity
    assert schedule(pod("c", {"g": "1"}, affinity=anti), snap, random.Random(0))[0] == "unlabelled"


def exclusive(job: str, index: int, topology_key: str = POOL) -> dict[str, Any]:
    """A pod as JobSet's exclusive placement writes it."""
    return pod(
        f"{job}-{index}",
        {JOB_KEY: job},
        requests={"cpu": "1"},
        affinity=affinity(
            aff=[
                term(
                    topology_key,
                    exprs=[{"key": JOB_KEY, "operator": "In", "values": [job]}],
                )
            ],
            anti=[
                term(
                    topology_key,
                    exprs=[
                        {"key": JOB_KEY, "operator": "Exists"},
                        {"key": JOB_KEY, "operator": "NotIn", "values": [job]},
                    ],
                )
            ],
        ),
    )


def test_jobset_exclusive_placement_one_job_per_pool() -> None:
    snap = pools(3, 4)
    seen: dict[str, str] = {}
    for j in range(3):
        for i in range(4):
            name = place(snap, exclusive(f"job{j}", i), seed=10 * j + i)
            assert name is not None, (j, i)
            pool = pool_of(snap, name)
            assert seen.setdefault(f"job{j}", pool) == pool
    assert len(set(seen.values())) == 3
    name, msg = schedule(exclusive("job3", 0), snap, random.Random(0))
    assert name is None
    assert msg == (
        "0/12 nodes are available: 12 node(s) didn't match pod anti-affinity rules. "
        "preemption: 0/12 nodes are available: 12 No preemption victims found for incoming pod."
    )
    # a finished job frees its pool
    for i in range(4):
        snap.remove_pod(exclusive("job1", i))
    name = place(snap, exclusive("job3", 0))
    assert name is not None and pool_of(snap, name) == seen["job1"]


def test_node_relabel_moves_pods_between_domains() -> None:
    snap = snapshot(node("n1", {POOL: "a"}), node("n2", {POOL: "b"}))
    anti = affinity(anti=[term(POOL, {"app": "x"})])
    place(snap, pod("x0", {"app": "x"}), seed=0)
    bound = snap.nodes["n1"].pods or snap.nodes["n2"].pods
    holder = bound[0]["spec"]["nodeName"]
    other = "n2" if holder == "n1" else "n1"
    assert schedule(pod("x1", {"app": "x"}, affinity=anti), snap, random.Random(0))[0] == other
    # move the holder into the other node's pool: now both nodes are in a domain with a match
    snap.add_node(node(holder, {POOL: "b" if holder == "n1" else "a"}))
    assert schedule(pod("x1", {"app": "x"}, affinity=anti), snap, random.Random(0))[0] is None


def test_namespaces_and_namespace_selector() -> None:
    snap = pools(2, 1)
    place(snap, pod("x", {"app": "x"}, namespace="team-a"), seed=0)
    holder_pool = pool_of(snap, next(n for n, i in snap.nodes.items() if i.pods))
    extras: list[dict[str, Any]] = [
        {"namespaces": ["team-a"]},
        {"namespaceSelector": {}},
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "team-a"}}},
    ]
    for extra in extras:
        anti = affinity(anti=[term(POOL, {"app": "x"}, **extra)])
        for seed in range(5):
            name = schedule(pod("y", namespace="team-b", affinity=anti), snap, random.Random(seed))[
                0
            ]
            assert name is not None and pool_of(snap, name) != holder_pool, extra
    # default: only the pod's own namespace
    anti = affinity(anti=[term(POOL, {"app": "x"})])
    names = {
        schedule(pod("y", namespace="team-b", affinity=anti), snap, random.Random(s))[0]
        for s in range(20)
    }
    assert len(names) == 2


def test_match_label_keys_merge_into_selector() -> None:
    snap = pools(2, 2)
    t = term(POOL, exprs=[{"key": "app", "operator": "Exists"}], matchLabelKeys=["rev"])
    place(snap, pod("a", {"app": "x", "rev": "1"}, affinity=affinity(anti=[t])), seed=0)
    # same rev: must avoid the pool; another rev: free to share it
    p_same = pod("b", {"app": "x", "rev": "1"}, affinity=affinity(anti=[t]))
    first_pool = pool_of(snap, next(n for n, i in snap.nodes.items() if i.pods))
    for seed in range(5):
        name = schedule(p_same, snap, random.Random(seed))[0]
        assert name is not None and pool_of(snap, name) != first_pool
    p_other = pod("c", {"app": "x", "rev": "2"}, affinity=affinity(anti=[t]))
    pools_seen = {
        pool_of(snap, schedule(p_other, snap, random.Random(s))[0] or "") for s in range(30)
    }
    assert pools_seen == {"pool-0", "pool-1"}


# ---------------------------------------------------------------------------------------------
# the indexes agree with a brute-force reading of the rules


def _sel_matches(sel: dict[str, Any], labels: dict[str, str]) -> bool:
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in sel.get("matchExpressions") or ():
        have = labels.get(e["key"])
        op = e["operator"]
        if op == "In" and have not in e["values"]:
            return False
        if op == "NotIn" and have is not None and have in e["values"]:
            return False
        if op == "Exists" and have is None:
            return False
        if op == "DoesNotExist" and have is not None:
            return False
    return True


def _term_selects(t: dict[str, Any], owner_ns: str, other: dict[str, Any]) -> bool:
    namespaces = t.get("namespaces") or [owner_ns]
    return other["metadata"]["namespace"] in namespaces and _sel_matches(
        t["labelSelector"], other["metadata"]["labels"]
    )


def _brute_force_ok(
    p: dict[str, Any], n: dict[str, Any], placed: list[tuple[dict[str, Any], dict[str, Any]]]
) -> bool:
    """Required inter-pod (anti-)affinity, read straight from the Kubernetes rules."""
    labels = n["metadata"]["labels"]
    ns = p["metadata"]["namespace"]
    aff = p["spec"].get("affinity") or {}
    aff_terms = (aff.get("podAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or []
    anti_terms = (aff.get("podAntiAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or []
    if aff_terms:
        if any(t["topologyKey"] not in labels for t in aff_terms):
            return False
        matching = [(q, qn) for q, qn in placed if all(_term_selects(t, ns, q) for t in aff_terms)]
        counts = {
            (t["topologyKey"], qn["metadata"]["labels"][t["topologyKey"]])
            for q, qn in matching
            for t in aff_terms
            if t["topologyKey"] in qn["metadata"]["labels"]
        }
        exist = all((t["topologyKey"], labels[t["topologyKey"]]) in counts for t in aff_terms)
        if not exist:
            self_match = all(_term_selects(t, ns, p) for t in aff_terms)
            if counts or not self_match:
                return False
    for t in anti_terms:
        key = t["topologyKey"]
        if key in labels and any(
            _term_selects(t, ns, q) and qn["metadata"]["labels"].get(key) == labels[key]
            for q, qn in placed
        ):
            return False
    for q, qn in placed:
        q_aff = q["spec"].get("affinity") or {}
        for t in (q_aff.get("podAntiAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        ) or []:
            key = t["topologyKey"]
            if (
                _term_selects(t, q["metadata"]["namespace"], p)
                and key in labels
                and qn["metadata"]["labels"].get(key) == labels[key]
            ):
                return False
    return True


def _random_selector(rng: random.Random) -> dict[str, Any]:
    key = rng.choice(["app", "tier", "job"])
    values = rng.sample(["a", "b", "c"], rng.randint(1, 2))
    shape = rng.randrange(6)
    if shape == 0:
        return {"matchLabels": {key: values[0]}}
    if shape == 1:
        return {"matchExpressions": [{"key": key, "operator": "In", "values": values}]}
    if shape == 2:
        return {
            "matchExpressions": [
                {"key": key, "operator": "Exists"},
                {"key": key, "operator": "NotIn", "values": values},
            ]
        }
    if shape == 3:
        return {"matchExpressions": [{"key": key, "operator": "NotIn", "values": values}]}
    if shape == 4:
        return {
            "matchExpressions": [{"key": key, "operator": rng.choice(["Exists", "DoesNotExist"])}]
        }
    other = rng.choice(["app", "tier", "job"])
    return {"matchLabels": {key: values[0], other: rng.choice("abc")}}


def _random_pod(rng: random.Random, name: str) -> dict[str, Any]:
    labels = {k: rng.choice("abc") for k in ("app", "tier", "job") if rng.random() < 0.7}
    aff: list[dict[str, Any]] = []
    anti: list[dict[str, Any]] = []
    for _ in range(rng.choice([0, 0, 1, 1, 2])):
        t = {"labelSelector": _random_selector(rng), "topologyKey": rng.choice(["zone", "rack"])}
        if rng.random() < 0.2:
            t["namespaces"] = ["ns1", "ns2"]
        (aff if rng.random() < 0.5 else anti).append(t)
    return pod(name, labels, namespace=rng.choice(["ns1", "ns2"]), affinity=affinity(aff, anti))


@pytest.mark.parametrize("seed", range(25))
def test_inter_pod_affinity_matches_brute_force(seed: int) -> None:
    rng = random.Random(seed)
    nodes = {}
    for i in range(8):
        labels = {}
        if rng.random() < 0.9:
            labels["zone"] = rng.choice(["z1", "z2"])
        if rng.random() < 0.9:
            labels["rack"] = rng.choice(["r1", "r2", "r3"])
        nodes[f"n{i}"] = node(f"n{i}", labels)
    snap = ClusterSnapshot()
    for n in nodes.values():
        snap.add_node(n)
    bound: dict[str, dict[str, Any]] = {}
    for i in range(12):
        p = _random_pod(rng, f"p{i}")
        p["spec"]["nodeName"] = rng.choice(list(nodes))
        snap.add_pod(p)
        bound[p["metadata"]["name"]] = p
    # churn: remove some pods, relabel a node, drop and re-add another
    for name in rng.sample(sorted(bound), 3):
        snap.remove_pod(bound.pop(name))
    relabelled = rng.choice(list(nodes))
    nodes[relabelled] = node(relabelled, {"zone": "z3", "rack": "r1"})
    snap.add_node(nodes[relabelled])
    dropped = rng.choice(list(nodes))
    snap.remove_node(dropped)
    snap.add_node(nodes[dropped])

    placed = [(p, nodes[p["spec"]["nodeName"]]) for p in bound.values()]
    for j in range(10):
        incoming = _random_pod(rng, f"new{j}")
        for name, n in nodes.items():
            pinned = copy.deepcopy(incoming)
            pinned["spec"]["nodeSelector"] = {"kubernetes.io/hostname": name}
            got = schedule(pinned, snap, random.Random(0))[0] == name
            assert got == _brute_force_ok(incoming, n, placed), (seed, j, name)


def test_scale_exclusive_placement_many_pools() -> None:
    snap = pools(250, 4)
    for j in range(250):
        target = None
        for i in range(4):
            name = place(snap, exclusive(f"job{j}", i), seed=j * 4 + i)
            assert name is not None
            target = target or pool_of(snap, name)
            assert pool_of(snap, name) == target
    assert all(len(info.pods) == 1 for info in snap.nodes.values())
