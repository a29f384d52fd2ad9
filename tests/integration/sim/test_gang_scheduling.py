"""Workload-aware scheduling in the simulated scheduler, through kubectl against `jobset sim`:
gangs placed all or nothing, within one topology domain, and preempting lower groups whole."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest

from kubesim.process import SimProcess, start_sim
from tests.eventually import eventually_sync

pytestmark = [pytest.mark.kubectl, pytest.mark.timeout(180)]

GATES = (
    "GenericWorkload=true,GangScheduling=true,"
    "TopologyAwareWorkloadScheduling=true,WorkloadAwarePreemption=true"
)
RACK = "topology.example.com/rack"
# 2 racks x 2 nodes of 4 CPUs.
NODES = f"2x2,label={RACK},cpu=4"
_ns = itertools.count()


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    s = start_sim(
        tmp_path_factory.mktemp("gang"),
        "--nodes",
        NODES,
        "--time-scale",
        "0.01",
        "--kube-feature-gates",
        GATES,
    )
    yield s
    s.stop()


@pytest.fixture
def ns(sim: SimProcess) -> Iterator[str]:
    name = f"g{next(_ns)}"
    sim.kubectl("create", "namespace", name)
    yield name
    sim.kubectl("delete", "namespace", name, "--wait=false")


def _apply(sim: SimProcess, ns: str, *docs: dict[str, Any]) -> None:
    body = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(docs)})
    sim.kubectl("apply", "-n", ns, "-f", "-", input=body)


def podgroup(name: str, min_count: int, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}, **spec},
    }


def pod(name: str, group: str | None, cpu: str, **spec: Any) -> dict[str, Any]:
    extra = {"schedulingGroup": {"podGroupName": group}} if group else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"gang": group or "none"}},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "c",
                    "image": "busybox",
                    "command": ["sleep", "infinity"],
                    "resources": {"requests": {"cpu": cpu}},
                }
            ],
            **extra,
            **spec,
        },
    }


def pods(sim: SimProcess, ns: str, group: str) -> list[dict[str, Any]]:
    out = sim.kubectl("get", "pods", "-n", ns, "-l", f"gang={group}", "-o", "json").stdout
    items: list[dict[str, Any]] = json.loads(out)["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def bound(items: list[dict[str, Any]]) -> list[str]:
    return [p["spec"]["nodeName"] for p in items if p["spec"].get("nodeName")]


def scheduled_message(p: dict[str, Any]) -> str:
    for c in (p.get("status") or {}).get("conditions") or []:
        if c["type"] == "PodScheduled":
            return str(c.get("message", ""))
    return ""


def pg_condition(sim: SimProcess, ns: str, name: str, ctype: str) -> dict[str, Any]:
    got = json.loads(sim.kubectl("get", "podgroup", "-n", ns, name, "-o", "json").stdout)
    for c in (got.get("status") or {}).get("conditions") or []:
        if c["type"] == ctype:
            return dict(c)
    return {}


def wait_all_pending_with(sim: SimProcess, ns: str, group: str, n: int, text: str) -> None:
    def probe() -> list[dict[str, Any]]:
        return pods(sim, ns, group)

    items = eventually_sync(
        probe,
        lambda ps: len(ps) == n and all(text in scheduled_message(p) for p in ps),
        what=f"{n} pods of {group} waiting with {text!r}",
    )
    assert bound(items) == []


def test_gang_that_cannot_fit_binds_no_pod(sim: SimProcess, ns: str) -> None:
    # 5 pods of 3 CPUs: 4 nodes hold 4 of them, the gang needs 5.
    _apply(sim, ns, podgroup("big", 5), *(pod(f"big-{i}", "big", "3") for i in range(5)))
    wait_all_pending_with(sim, ns, "big", 5, "0/4 nodes are available")
    cond = eventually_sync(lambda: pg_condition(sim, ns, "big", "PodGroupScheduled"))
    assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")
    events = sim.kubectl("get", "events", "-n", ns, "--field-selector", "reason=FailedScheduling")
    assert "big-0" in events.stdout
    # The same pods without a group: four of them are placed, one by one.
    _apply(sim, ns, *(pod(f"solo-{i}", None, "3") for i in range(5)))
    eventually_sync(lambda: len(bound(pods(sim, ns, "none"))) == 4)
    assert bound(pods(sim, ns, "big")) == []
    sim.kubectl("delete", "pods", "-n", ns, "-l", "gang=none", "--wait=true")


def test_gang_that_fits_binds_every_pod(sim: SimProcess, ns: str) -> None:
    _apply(sim, ns, podgroup("fits", 4), *(pod(f"fits-{i}", "fits", "1") for i in range(4)))
    eventually_sync(lambda: len(bound(pods(sim, ns, "fits"))) == 4, what="all 4 bound")
    cond = eventually_sync(lambda: pg_condition(sim, ns, "fits", "PodGroupScheduled"))
    assert cond["status"] == "True"
    sim.kubectl("delete", "pods", "-n", ns, "--all", "--wait=true")


def test_gang_waits_for_its_pod_group_and_min_count(sim: SimProcess, ns: str) -> None:
    _apply(sim, ns, *(pod(f"early-{i}", "late", "1") for i in range(2)))
    wait_all_pending_with(
        sim, ns, "late", 2, 'waiting for pods\'s pod group "late" to appear in scheduling queue'
    )
    _apply(sim, ns, podgroup("late", 3))
    wait_all_pending_with(sim, ns, "late", 2, "waiting for minCount pods from a gang")
    _apply(sim, ns, pod("early-2", "late", "1"))
    eventually_sync(lambda: len(bound(pods(sim, ns, "late"))) == 3, what="all 3 bound")
    sim.kubectl("delete", "pods", "-n", ns, "--all", "--wait=true")


def _rack_of(sim: SimProcess, node: str) -> str:
    got = json.loads(sim.kubectl("get", "node", node, "-o", "json").stdout)
    return str(got["metadata"]["labels"][RACK])


def test_topology_constrained_gang_lands_in_one_rack(sim: SimProcess, ns: str) -> None:
    # A 3-CPU pod on the first rack leaves it 5 CPUs: four 2-CPU pods only fit the other.
    _apply(sim, ns, pod("filler", None, "3", nodeSelector={RACK: "pool-0"}))
    eventually_sync(lambda: bound(pods(sim, ns, "none")))
    topology = {"topology": [{"key": RACK}]}
    _apply(
        sim,
        ns,
        podgroup("tas", 4, schedulingConstraints=topology),
        *(pod(f"tas-{i}", "tas", "2") for i in range(4)),
    )
    nodes = eventually_sync(lambda: bound(pods(sim, ns, "tas")), lambda b: len(b) == 4)
    assert {_rack_of(sim, n) for n in nodes} == {"pool-1"}
    sim.kubectl("delete", "pods", "-n", ns, "--all", "--wait=true")


def test_topology_gang_bigger_than_any_rack_waits(sim: SimProcess, ns: str) -> None:
    topology = {"topology": [{"key": RACK}]}
    # Five 1-CPU pods fit the cluster but no single 8-CPU rack holds five 2-CPU pods.
    _apply(
        sim,
        ns,
        podgroup("wide", 5, schedulingConstraints=topology),
        *(pod(f"wide-{i}", "wide", "2") for i in range(5)),
    )
    wait_all_pending_with(sim, ns, "wide", 5, "nodes are available")
    sim.kubectl("delete", "pods", "-n", ns, "--all", "--wait=true")


PRIORITIES = [
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n},
     "value": v}
    for n, v in (("gang-low", 1), ("gang-high", 100000))
]  # fmt: skip


def test_higher_priority_gang_preempts_lower_group_whole(sim: SimProcess, ns: str) -> None:
    _apply(sim, ns, *PRIORITIES)
    mode = {"disruptionMode": "PodGroup"}
    low = podgroup("low", 4, priorityClassName="gang-low", **mode)
    _apply(sim, ns, low, *(pod(f"low-{i}", "low", "3") for i in range(4)))
    eventually_sync(lambda: len(bound(pods(sim, ns, "low"))) == 4, what="low gang bound")
    # A gang too big for even the whole cluster preempts nobody.
    huge = podgroup("huge", 5, priorityClassName="gang-high", **mode)
    _apply(sim, ns, huge, *(pod(f"huge-{i}", "huge", "3") for i in range(5)))
    wait_all_pending_with(sim, ns, "huge", 5, "nodes are available")
    assert len(bound(pods(sim, ns, "low"))) == 4
    sim.kubectl("delete", "pods", "-n", ns, "-l", "gang=huge", "--wait=true")
    high = podgroup("high", 4, priorityClassName="gang-high", **mode)
    _apply(sim, ns, high, *(pod(f"high-{i}", "high", "3") for i in range(4)))
    eventually_sync(lambda: len(bound(pods(sim, ns, "high"))) == 4, what="high gang bound")
    eventually_sync(lambda: pods(sim, ns, "low") == [], what="every low pod preempted")
    events = sim.kubectl("get", "events", "-n", ns, "--field-selector", "reason=Preempted").stdout
    assert all(f"low-{i}" in events for i in range(4))
    cond = pg_condition(sim, ns, "low", "DisruptionTarget")
    assert (cond["status"], cond["reason"]) == ("True", "PreemptionByScheduler")


def test_a_pod_cannot_give_itself_a_priority_its_class_does_not(sim: SimProcess, ns: str) -> None:
    """The Priority admission plugin: a tenant's pod may not claim a priority of its own to
    stay out of another gang's preemption; a class that does not exist is refused; the
    global default class applies to a pod without one."""
    _apply(sim, ns, *PRIORITIES)
    immune = pod("immune", None, "1", priority=2000000000)
    out = sim.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(immune), check=False)
    assert out.returncode != 0
    assert (
        'pods "immune" is forbidden: the integer value of priority (2000000000) must not be '
        "provided in pod spec; priority admission controller computed 0 from the given "
        "PriorityClass name"
    ) in out.stderr
    low = pod("low-claims-high", None, "1", priorityClassName="gang-low", priority=100000)
    out = sim.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(low), check=False)
    assert "priority admission controller computed 1 from the given PriorityClass" in out.stderr
    missing = pod("missing", None, "1", priorityClassName="nope")
    out = sim.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(missing), check=False)
    assert 'pods "missing" is forbidden: no PriorityClass with name nope was found' in out.stderr
    _apply(sim, ns, pod("classed", None, "1", priorityClassName="gang-low"))
    got = json.loads(sim.kubectl("get", "pod", "-n", ns, "classed", "-o", "json").stdout)
    assert (got["spec"]["priority"], got["spec"]["preemptionPolicy"]) == (1, "PreemptLowerPriority")
    default = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
               "metadata": {"name": f"{ns}-default"}, "value": 7, "globalDefault": True}  # fmt: skip
    sim.kubectl("apply", "-f", "-", input=json.dumps(default))
    try:
        _apply(sim, ns, pod("plain", None, "1"))
        got = json.loads(sim.kubectl("get", "pod", "-n", ns, "plain", "-o", "json").stdout)
        assert (got["spec"]["priorityClassName"], got["spec"]["priority"]) == (f"{ns}-default", 7)
        second = {**default, "metadata": {"name": f"{ns}-second"}}
        out = sim.kubectl("apply", "-f", "-", input=json.dumps(second), check=False)
        assert (
            f"PriorityClass {ns}-default is already marked as default. Only one default can exist"
        ) in out.stderr
    finally:
        sim.kubectl("delete", "priorityclass", f"{ns}-default")
