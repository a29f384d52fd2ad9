"""`scheduling.jobset-py.dev/gang` end to end under `jobset dev`: the controller keeps the
Workload and PodGroups of the JobSet, its pods join them and are gang-scheduled, the groups
follow restarts, replica changes and suspend/resume and go with the JobSet; the webhook
refuses bad values; a cluster without the APIs gets a condition and an event."""

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

GANG = "scheduling.jobset-py.dev/gang"
POOL = "cloud.google.com/gke-nodepool"
GATES = (
    "GenericWorkload=true,GangScheduling=true,"
    "TopologyAwareWorkloadScheduling=true,WorkloadAwarePreemption=true"
)
WITHIN = 90.0
_ns = itertools.count()


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    # 2 pools of 2 nodes with 4 CPUs.
    d = start_dev(
        tmp_path_factory.mktemp("gangdev"),
        "--kube-feature-gates",
        GATES,
        "--feature-gates",
        "ElasticReplicas=true",
        "--nodes",
        "2x2,cpu=4",
        "--time-scale",
        "0.05",
    )
    yield d
    d.stop()


@pytest.fixture
def ns(dev: SimProcess) -> str:
    name = f"gang{next(_ns)}"
    dev.kubectl("create", "namespace", name)
    return name


def jobset(
    name: str,
    mode: str | None,
    *,
    replicas: int = 2,
    parallelism: int = 2,
    cpu: str = "1",
    command: str = "sleep 1000",
    annotations: dict[str, str] | None = None,
    group: str | None = None,
    **spec: Any,
) -> dict[str, Any]:
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 0,
        "containers": [
            {
                "name": "c",
                "image": "bash:5.2",
                "command": ["bash", "-c", command],
                "resources": {"requests": {"cpu": cpu}},
            }
        ],
    }
    if group:
        pod_spec["schedulingGroup"] = {"podGroupName": group}
    notes = dict(annotations or {})
    if mode:
        notes[GANG] = mode
    job = {"parallelism": parallelism, "completions": parallelism, "backoffLimit": 0}
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "annotations": notes},
        "spec": {
            "replicatedJobs": [
                {
                    "name": "w",
                    "replicas": replicas,
                    "template": {"spec": {**job, "template": {"spec": pod_spec}}},
                }
            ],
            **spec,
        },
    }


def _create(dev: SimProcess, ns: str, obj: dict[str, Any], check: bool = True) -> str:
    r = dev.kubectl("create", "-n", ns, "-f", "-", input=json.dumps(obj), check=check)
    return r.stdout + r.stderr


def _items(dev: SimProcess, ns: str, what: str, selector: str = "") -> list[dict[str, Any]]:
    args = ["get", what, "-n", ns, "-o", "json"]
    if selector:
        args += ["-l", selector]
    items: list[dict[str, Any]] = json.loads(dev.kubectl(*args).stdout)["items"]
    return items


def _groups(dev: SimProcess, ns: str) -> dict[str, int]:
    return {
        pg["metadata"]["name"]: pg["spec"]["schedulingPolicy"]["gang"]["minCount"]
        for pg in _items(dev, ns, "podgroups")
        if not pg["metadata"].get("deletionTimestamp")
    }


def _live_pods(dev: SimProcess, ns: str) -> list[dict[str, Any]]:
    return [
        p
        for p in _items(dev, ns, "pods")
        if not p["metadata"].get("deletionTimestamp")
        and p["status"].get("phase") not in ("Succeeded", "Failed")
    ]


def _running(dev: SimProcess, ns: str, n: int) -> list[dict[str, Any]]:
    return eventually_sync(
        lambda: [p for p in _live_pods(dev, ns) if p["status"].get("phase") == "Running"],
        lambda ps: len(ps) == n,
        within=WITHIN,
        what=f"{n} running pods",
    )


def test_jobset_gang_objects_owned_pods_joined_and_deleted_with_it(
    dev: SimProcess, ns: str
) -> None:
    _create(dev, ns, jobset("whole", "JobSet"))
    assert eventually_sync(lambda: _groups(dev, ns), within=WITHIN) == {"whole": 4}
    wl = _items(dev, ns, "workloads")[0]
    assert wl["spec"]["controllerRef"] == {
        "apiGroup": "jobset.x-k8s.io",
        "kind": "JobSet",
        "name": "whole",
    }
    assert wl["metadata"]["ownerReferences"][0]["kind"] == "JobSet"
    pods = _running(dev, ns, 4)
    assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in pods} == {"whole"}
    js = json.loads(dev.kubectl("get", "jobset", "whole", "-n", ns, "-o", "json").stdout)
    cond = next(c for c in js["status"]["conditions"] if c["type"] == "GangScheduling")
    assert (cond["status"], cond["reason"]) == ("True", "PodGroupsReady")
    dev.kubectl("delete", "jobset", "whole", "-n", ns)
    eventually_sync(
        lambda: not _items(dev, ns, "podgroups") and not _items(dev, ns, "workloads"),
        within=WITHIN,
        what="Workload and PodGroups collected",
    )


def test_gang_that_does_not_fit_holds_no_node(dev: SimProcess, ns: str) -> None:
    # 2 Jobs of 5 pods of 2 CPUs: the cluster (16 CPUs) holds 8 of the 10.
    _create(dev, ns, jobset("big", "JobSet", parallelism=5, cpu="2"))
    pods = eventually_sync(
        lambda: _live_pods(dev, ns), lambda ps: len(ps) == 10, within=WITHIN, what="10 pods"
    )
    eventually_sync(
        lambda: _live_pods(dev, ns),
        lambda ps: (
            all(
                "nodes are available" in c.get("message", "")
                for p in ps
                for c in p["status"].get("conditions") or []
                if c["type"] == "PodScheduled"
            )
            and all(p["status"].get("conditions") for p in ps)
        ),
        within=WITHIN,
        what="every pod waiting for room",
    )
    assert [p for p in _live_pods(dev, ns) if p["spec"].get("nodeName")] == []
    assert len(pods) == 10
    dev.kubectl("delete", "jobset", "big", "-n", ns)


def test_job_gangs_with_exclusive_placement(dev: SimProcess, ns: str) -> None:
    js = jobset("slices", "Job", annotations={"alpha.jobset.sigs.k8s.io/exclusive-topology": POOL})
    _create(dev, ns, js)
    assert eventually_sync(lambda: _groups(dev, ns), within=WITHIN) == {
        "slices-w-0": 2,
        "slices-w-1": 2,
    }
    pods = _running(dev, ns, 4)
    nodes = {n["metadata"]["name"]: n["metadata"]["labels"][POOL] for n in _items(dev, "", "nodes")}
    by_job: dict[str, set[str]] = {}
    for p in pods:
        group = p["spec"]["schedulingGroup"]["podGroupName"]
        assert group == p["metadata"]["labels"]["batch.kubernetes.io/job-name"]
        by_job.setdefault(group, set()).add(nodes[p["spec"]["nodeName"]])
    assert all(len(pools) == 1 for pools in by_job.values())
    assert by_job["slices-w-0"] != by_job["slices-w-1"]


def test_groups_follow_replica_changes_and_suspend_resume(dev: SimProcess, ns: str) -> None:
    _create(dev, ns, jobset("elastic", "ReplicatedJob", replicas=2, parallelism=1))
    assert eventually_sync(lambda: _groups(dev, ns), within=WITHIN) == {"elastic-w": 2}
    _running(dev, ns, 2)
    scale = '[{"op": "replace", "path": "/spec/replicatedJobs/0/replicas", "value": 3}]'
    dev.kubectl("patch", "jobset", "elastic", "-n", ns, "--type=json", "-p", scale)
    eventually_sync(lambda: _groups(dev, ns), lambda g: g == {"elastic-w": 3}, within=WITHIN)
    wl = _items(dev, ns, "workloads")
    assert wl[0]["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]["minCount"] == 3
    _running(dev, ns, 3)
    dev.kubectl("patch", "jobset", "elastic", "-n", ns, "--type=merge", "-p",
                '{"spec":{"suspend":true}}')  # fmt: skip
    eventually_sync(lambda: _live_pods(dev, ns) == [], within=WITHIN, what="pods gone")
    assert _groups(dev, ns) == {"elastic-w": 3}
    dev.kubectl("patch", "jobset", "elastic", "-n", ns, "--type=merge", "-p",
                '{"spec":{"suspend":false}}')  # fmt: skip
    pods = _running(dev, ns, 3)
    assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in pods} == {"elastic-w"}


def test_groups_kept_across_recreate_restarts(dev: SimProcess, ns: str) -> None:
    # Rank 0 fails once; the JobSet restarts (Recreate) and the new pods join the same group.
    cmd = (
        'if [[ "$JOB_COMPLETION_INDEX" == "0" && "$ATTEMPT" == "0" ]]; then sleep 1; exit 1; fi;'
        " sleep 1000"
    )
    js = jobset("again", "ReplicatedJob", command=cmd, failurePolicy={"maxRestarts": 1})
    js["spec"]["replicatedJobs"][0]["template"]["spec"]["completionMode"] = "Indexed"
    attempt = "metadata.labels['jobset.sigs.k8s.io/restart-attempt']"
    container = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    container["containers"][0]["env"] = [
        {"name": "ATTEMPT", "valueFrom": {"fieldRef": {"fieldPath": attempt}}}
    ]
    _create(dev, ns, js)

    def restarts() -> int:
        got = json.loads(dev.kubectl("get", "jobset", "again", "-n", ns, "-o", "json").stdout)
        return int((got.get("status") or {}).get("restarts") or 0)

    eventually_sync(restarts, lambda r: r >= 1, within=WITHIN, what="a restart")
    assert _groups(dev, ns) == {"again-w": 4}
    pods = eventually_sync(
        lambda: [p for p in _live_pods(dev, ns) if p["spec"].get("nodeName")],
        lambda ps: (
            len(ps) == 4
            and all(
                p["metadata"]["labels"].get("jobset.sigs.k8s.io/restart-attempt") == "1" for p in ps
            )
        ),
        within=WITHIN,
        what="the restarted gang bound",
    )
    assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in pods} == {"again-w"}


def test_webhook_refuses_unknown_mode_and_foreign_scheduling_group(
    dev: SimProcess, ns: str
) -> None:
    out = _create(dev, ns, jobset("odd", "Everything"), check=False)
    assert (
        f'metadata.annotations[{GANG}]: Unsupported value: "Everything": '
        'supported values: "JobSet", "ReplicatedJob", "Job"' in out
    )
    out = _create(dev, ns, jobset("mine", "ReplicatedJob", group="elsewhere"), check=False)
    assert (
        "spec.replicatedJobs[0].template.spec.template.spec.schedulingGroup.podGroupName: "
        'Invalid value: "elsewhere"' in out
    )
    ordered = jobset("ordered", "JobSet", startupPolicy={"startupPolicyOrder": "InOrder"})
    second = json.loads(json.dumps(ordered["spec"]["replicatedJobs"][0]))
    ordered["spec"]["replicatedJobs"].append({**second, "name": "v"})
    out = _create(dev, ns, ordered, check=False)
    assert f'metadata.annotations[{GANG}]: Invalid value: "JobSet": one gang of every pod' in out
    # The name the controller would set is accepted.
    assert "created" in _create(dev, ns, jobset("same", "ReplicatedJob", group="same-w"))


def test_cluster_without_workload_apis_gets_condition_and_event(tmp_path: Path) -> None:
    plain = start_dev(tmp_path, "--nodes", "2", "--time-scale", "0.05")
    try:
        plain.kubectl("create", "-f", "-", input=json.dumps(jobset("nogang", "JobSet")))

        def condition() -> dict[str, Any]:
            got = json.loads(plain.kubectl("get", "jobset", "nogang", "-o", "json").stdout)
            conds = (got.get("status") or {}).get("conditions") or []
            return next((c for c in conds if c["type"] == "GangScheduling"), {})

        cond = eventually_sync(condition, within=WITHIN, what="GangScheduling condition")
        assert (cond["status"], cond["reason"]) == ("False", "WorkloadAPIUnavailable")
        events = plain.kubectl(
            "get", "events", "--field-selector", "reason=WorkloadAPIUnavailable"
        ).stdout
        assert "nogang" in events
    finally:
        plain.stop()
