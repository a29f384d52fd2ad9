"""Upstream JobSet's workload-aware-scheduling examples and e2e cases under `jobset dev`.

The example files (site/static/examples/workload-aware-scheduling/: basic, tas, preemption)
are vendored unchanged under tests/data/upstream/workload-aware-scheduling/ and applied with
kubectl in the order upstream's guide gives; each test checks the outcome the guide
documents. Each example gets a `jobset dev` of its own, shaped like the guide's cluster (the
examples name namespace `default`, so they cannot share one). The e2e cases of upstream's
test/e2e/scheduling run on one more cluster, under upstream's case names.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobset.dev.examplekit import start_dev
from kubesim.process import SimProcess
from tests.eventually import eventually_sync

pytestmark = [pytest.mark.kubectl, pytest.mark.timeout(300)]

UPSTREAM = Path(__file__).resolve().parents[2] / "data" / "upstream" / "workload-aware-scheduling"
GATES = (
    "GenericWorkload=true,GangScheduling=true,"
    "TopologyAwareWorkloadScheduling=true,WorkloadAwarePreemption=true"
)
WITHIN = 90.0
JOBSET_LABEL = "jobset.sigs.k8s.io/jobset-name"


def _dev(tmp: Path, nodes: str) -> SimProcess:
    return start_dev(tmp, "--kube-feature-gates", GATES, "--nodes", nodes, "--time-scale", "0.05")


def _apply(dev: SimProcess, *files: str, namespace: str = "default") -> None:
    for name in files:
        dev.kubectl("apply", "-n", namespace, "-f", str(UPSTREAM / name))


def _pods(dev: SimProcess, jobset: str, namespace: str = "default") -> list[dict[str, Any]]:
    out = dev.kubectl(
        "get", "pods", "-n", namespace, "-l", f"{JOBSET_LABEL}={jobset}", "-o", "json"
    )
    items: list[dict[str, Any]] = json.loads(out.stdout)["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def _running(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]


def _labels_of_nodes(dev: SimProcess, key: str) -> dict[str, str]:
    nodes = json.loads(dev.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    return {n["metadata"]["name"]: n["metadata"]["labels"].get(key, "") for n in nodes}


def _wait_running(dev: SimProcess, jobset: str, n: int, namespace: str = "default") -> list[Any]:
    return eventually_sync(
        lambda: _running(_pods(dev, jobset, namespace)),
        lambda ps: len(ps) == n,
        within=WITHIN,
        what=f"{n} running pods of JobSet {jobset}",
    )


@pytest.fixture
def dev_factory(tmp_path: Path) -> Iterator[Any]:
    started: list[SimProcess] = []

    def make(nodes: str) -> SimProcess:
        dev = _dev(tmp_path, nodes)
        started.append(dev)
        return dev

    yield make
    for dev in started:
        dev.stop()


def test_gang_scheduling_example_places_all_six_pods(dev_factory: Any) -> None:
    # Four workers, as the guide's kind cluster; 8 CPUs each hold two of the 4-CPU pods.
    dev = dev_factory("4,cpu=8")
    _apply(dev, "workload.yaml", "podgroup.yaml", "jobset.yaml")
    pods = _wait_running(dev, "js", 6)
    assert all(p["spec"]["schedulingGroup"]["podGroupName"] == "js-abc-workers-def" for p in pods)
    pg = json.loads(dev.kubectl("get", "podgroup", "js-abc-workers-def", "-o", "json").stdout)
    conds = {c["type"]: c["status"] for c in pg["status"]["conditions"]}
    assert conds["PodGroupScheduled"] == "True"


def test_gang_scheduling_example_places_none_when_six_do_not_fit(dev_factory: Any) -> None:
    # The guide's promise the other way round: room for five 4-CPU pods, none is placed.
    dev = dev_factory("5,cpu=4")
    _apply(dev, "workload.yaml", "podgroup.yaml", "jobset.yaml")
    pods = eventually_sync(
        lambda: _pods(dev, "js"), lambda ps: len(ps) == 6, within=WITHIN, what="6 pods"
    )
    eventually_sync(
        lambda: _pods(dev, "js"),
        lambda ps: (
            all(
                c.get("reason") == "Unschedulable"
                for p in ps
                for c in p["status"].get("conditions") or []
                if c["type"] == "PodScheduled"
            )
            and all(p["status"].get("conditions") for p in ps)
        ),
        within=WITHIN,
        what="every pod Unschedulable",
    )
    assert [p for p in _pods(dev, "js") if p["spec"].get("nodeName")] == []
    assert len(pods) == 6


def test_tas_example_places_the_gang_in_one_rack(dev_factory: Any) -> None:
    # Two racks of two nodes labelled with the guide's topology key.
    dev = dev_factory("2x2,label=topology.example.com/rack,cpu=2")
    _apply(dev, "tas/workload.yaml", "tas/podgroup.yaml", "tas/jobset.yaml")
    pods = _wait_running(dev, "js", 4)
    racks = _labels_of_nodes(dev, "topology.example.com/rack")
    assert len({racks[p["spec"]["nodeName"]] for p in pods}) == 1


def test_preemption_example_preempts_the_low_priority_gang_whole(dev_factory: Any) -> None:
    # Sized as the guide says: only one JobSet (four 3-CPU pods) fits at a time.
    dev = dev_factory("4,cpu=4")
    _apply(dev, "preemption/low-priority.yaml", "preemption/high-priority.yaml")
    _apply(dev, "preemption/low-priority-jobset.yaml")
    low = _wait_running(dev, "lp-js", 4)
    _apply(dev, "preemption/high-priority-jobset.yaml")
    _wait_running(dev, "hp-js", 4)
    events = dev.kubectl("get", "events", "--field-selector", "reason=Preempted").stdout
    assert all(p["metadata"]["name"] in events for p in low)
    assert _running(_pods(dev, "lp-js")) == []


# ------------------------------------------------------------------ upstream e2e cases


_ns = itertools.count()


@pytest.fixture(scope="module")
def e2e(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    dev = _dev(tmp_path_factory.mktemp("e2e"), "2x2,label=topology.kubernetes.io/rack,cpu=4")
    yield dev
    dev.stop()


def _e2e_ns(dev: SimProcess) -> str:
    name = f"e2e-sched-{next(_ns)}"
    dev.kubectl("create", "namespace", name)
    return name


def _e2e_jobset(
    name: str, group: str | None, replicas: int, completions: int, **pod: Any
) -> dict[str, Any]:
    """upstream e2e's makeJobSet: one ReplicatedJob of `sleep 5` pods (`pod`: more fields)."""
    container: dict[str, Any] = {
        "name": "worker",
        "image": "busybox",
        "command": ["sh", "-c", f"sleep {pod.pop('sleep', 5)}"],
    }
    if "cpu" in pod:
        container["resources"] = {"requests": {"cpu": pod.pop("cpu")}}
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 0,
        "containers": [container],
        **pod,
    }
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    job = {"completions": completions, "parallelism": completions, "backoffLimit": 10}
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name},
        "spec": {
            "replicatedJobs": [
                {
                    "name": "rj",
                    "replicas": replicas,
                    "template": {"spec": {**job, "template": {"spec": spec}}},
                }
            ]
        },
    }


def _e2e_group(
    js: str, count: int, constraints: dict[str, Any] | None, **pg_extra: Any
) -> list[dict[str, Any]]:
    policy = {"gang": {"minCount": count}}
    workload = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "Workload",
        "metadata": {"name": f"{js}-wl"},
        "spec": {
            "controllerRef": {"apiGroup": "jobset.x-k8s.io", "kind": "JobSet", "name": js},
            "podGroupTemplates": [{"name": "workers", "schedulingPolicy": policy}],
        },
    }
    ref = {"workload": {"workloadName": f"{js}-wl", "podGroupTemplateName": "workers"}}
    pg_spec: dict[str, Any] = {"podGroupTemplateRef": ref, "schedulingPolicy": policy}
    if constraints:
        pg_spec["schedulingConstraints"] = constraints
    pg_spec.update(pg_extra)
    pg = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": f"{js}-pg"},
        "spec": pg_spec,
    }
    return [workload, pg]


def _create(dev: SimProcess, ns: str, *objs: dict[str, Any]) -> None:
    body = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objs)})
    dev.kubectl("create", "-n", ns, "-f", "-", input=body)


def _completed(dev: SimProcess, ns: str, name: str) -> None:
    def state() -> str:
        js = json.loads(dev.kubectl("get", "jobset", name, "-n", ns, "-o", "json").stdout)
        return str((js.get("status") or {}).get("terminalState") or "")

    eventually_sync(state, lambda s: s == "Completed", within=WITHIN, what=f"{name} Completed")


def test_should_complete_a_simple_jobset_on_a_was_enabled_cluster(e2e: SimProcess) -> None:
    ns = _e2e_ns(e2e)
    _create(e2e, ns, _e2e_jobset("simple-was", None, 1, 1))
    _completed(e2e, ns, "simple-was")


def test_should_gang_schedule_all_pods_in_a_jobset(e2e: SimProcess) -> None:
    ns = _e2e_ns(e2e)
    _create(e2e, ns, *_e2e_group("gang-js", 4, None), _e2e_jobset("gang-js", "gang-js-pg", 2, 2))
    eventually_sync(
        lambda: [p for p in _pods(e2e, "gang-js", ns) if p["spec"].get("nodeName")],
        lambda ps: len(ps) == 4,
        within=WITHIN,
        what="4 pods scheduled",
    )
    pg = json.loads(e2e.kubectl("get", "podgroup", "gang-js-pg", "-n", ns, "-o", "json").stdout)
    assert pg["spec"]["schedulingPolicy"]["gang"]["minCount"] == 4
    _completed(e2e, ns, "gang-js")


def test_should_co_locate_all_pods_within_the_same_rack(e2e: SimProcess) -> None:
    ns = _e2e_ns(e2e)
    topology = {"topology": [{"key": "topology.kubernetes.io/rack"}]}
    _create(e2e, ns, *_e2e_group("tas-js", 4, topology), _e2e_jobset("tas-js", "tas-js-pg", 2, 2))
    pods = eventually_sync(
        lambda: [p for p in _pods(e2e, "tas-js", ns) if p["spec"].get("nodeName")],
        lambda ps: len(ps) == 4,
        within=WITHIN,
        what="4 pods scheduled",
    )
    racks = _labels_of_nodes(e2e, "topology.kubernetes.io/rack")
    assert len({racks[p["spec"]["nodeName"]] for p in pods}) == 1
    _completed(e2e, ns, "tas-js")


def test_should_preempt_a_low_priority_podgroup_to_admit_a_high_priority_one(
    e2e: SimProcess,
) -> None:
    # Pending (PIt) upstream; here: 4 nodes of 4 CPUs hold one gang of four 3-CPU pods.
    ns = _e2e_ns(e2e)
    classes = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
         "metadata": {"name": f"e2e-{n}"}, "value": v}
        for n, v in (("low", 1), ("high", 100000))
    ]  # fmt: skip
    e2e.kubectl("apply", "-f", "-", input=json.dumps({"kind": "List", "apiVersion": "v1",
                                                      "items": classes}))  # fmt: skip
    mode = {"disruptionMode": "PodGroup"}
    low = _e2e_group("lp-js", 4, None, priorityClassName="e2e-low", **mode)
    slow = {"cpu": "3", "priorityClassName": "e2e-low", "sleep": 100000}
    _create(e2e, ns, *low, _e2e_jobset("lp-js", "lp-js-pg", 2, 2, **slow))
    eventually_sync(
        lambda: _running(_pods(e2e, "lp-js", ns)), lambda ps: len(ps) == 4, within=WITHIN
    )
    high = _e2e_group("hp-js", 4, None, priorityClassName="e2e-high", **mode)
    fast = {"cpu": "3", "priorityClassName": "e2e-high"}
    _create(e2e, ns, *high, _e2e_jobset("hp-js", "hp-js-pg", 2, 2, **fast))
    _completed(e2e, ns, "hp-js")
    events = e2e.kubectl("get", "events", "-n", ns, "--field-selector", "reason=Preempted").stdout
    assert "lp-js" in events
