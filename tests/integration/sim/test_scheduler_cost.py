"""`/debug/scheduler` of a real `jobset sim` process: what kube-scheduler would have evaluated
for the pods the simulated scheduler placed (the cost model of
`kubesim/controllers/scheduler/cost.py`), read with kubectl."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kubesim.process import SimProcess, start_sim
from tests.eventually import eventually_sync

POOL = "cloud.google.com/gke-nodepool"
JOB_KEY = "jobset.sigs.k8s.io/job-key"


def _pod(name: str, job: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "c",
                "image": "busybox",
                "command": ["sleep", "infinity"],
                "resources": {"requests": {"cpu": "1"}},
            }
        ]
    }
    labels = {"app": "plain"}
    if job is not None:  # the terms JobSet's exclusive placement writes
        labels = {JOB_KEY: job}
        spec["affinity"] = {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {
                            "matchExpressions": [
                                {"key": JOB_KEY, "operator": "In", "values": [job]}
                            ]
                        },
                        "topologyKey": POOL,
                    }
                ]
            },
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {
                            "matchExpressions": [
                                {"key": JOB_KEY, "operator": "Exists"},
                                {"key": JOB_KEY, "operator": "NotIn", "values": [job]},
                            ]
                        },
                        "topologyKey": POOL,
                    }
                ]
            },
        }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": spec,
    }


def _create(sim: SimProcess, pods: list[dict[str, Any]]) -> None:
    sim.kubectl(
        "create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": pods})
    )


def _report(sim: SimProcess) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(sim.kubectl("get", "--raw", "/debug/scheduler").stdout)
    return body


def _all_bound(sim: SimProcess, count: int) -> bool:
    pods = json.loads(sim.kubectl("get", "pods", "-o", "json").stdout)["items"]
    return sum(1 for p in pods if p["spec"].get("nodeName")) == count


def test_counters_move_as_kube_scheduler_would_have_paid(tmp_path: Path) -> None:
    sim = start_sim(tmp_path, "--sim-level", "pods", "--nodes", f"pools=4x2,label={POOL},cpu=8")
    try:
        refused = sim.kubectl("get", "--raw", "/debug/scheduler", "--token", "x", check=False)
        assert "Unauthorized" in refused.stderr  # behind the API's bearer token
        start = _report(sim)
        assert start["cycles"] == 0
        assert start["kubeSchedulerEvaluations"]["total"] == 0

        # Three plain pods on 8 nodes: every node filtered by the 4 base filters, no term tests.
        _create(sim, [_pod(f"plain-{i}") for i in range(3)])
        eventually_sync(lambda: _all_bound(sim, 3), within=30, what="plain pods bound")
        plain = _report(sim)
        ev = plain["kubeSchedulerEvaluations"]
        assert (plain["cycles"], plain["bound"]) == (3, 3)
        assert ev["affinityChecks"] == 0
        assert (ev["nodesFiltered"], ev["filterCalls"]) == (3 * 8, 3 * 8 * 4)

        # Four exclusive pods of two Jobs, created in order: the k-th (k = 0..3) is tested
        # against the 3 + k bound pods (two terms each) and k existing anti-affinity terms.
        _create(sim, [_pod(f"{job}-{i}", job) for job in ("a", "b") for i in range(2)])
        eventually_sync(lambda: _all_bound(sim, 7), within=30, what="exclusive pods bound")
        after = _report(sim)
        ev2 = after["kubeSchedulerEvaluations"]
        assert after["cycles"] == 7
        assert ev2["incomingAffinityChecks"] == 2 * (3 + 4 + 5 + 6)
        assert ev2["existingAntiAffinityChecks"] == 0 + 1 + 2 + 3
        assert ev2["prescoreAffinityChecks"] > 0  # bound pods' required affinity terms
        # InterPodAffinity joins the filters for each of the four pods.
        assert ev2["filterCalls"] - ev["filterCalls"] == 4 * 8 * 5
        assert ev2["total"] == ev2["affinityChecks"] + ev2["filterCalls"]
    finally:
        sim.stop()
