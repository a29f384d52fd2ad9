"""`kubectl drain` of the node the leading controller pod runs on, with the chart's
PodDisruptionBudget (`podDisruptionBudget.enabled`, minAvailable 1, off by default) and two
replicas: the eviction API evicts the leader's pod (and the standby's too if it shares the
node, once the replacement is ready: the budget keeps one replica up), the ReplicaSet
replaces it on another node, the standby takes the lease within lease + retry, a JobSet
running across the drain and one submitted after it complete, and no Job is created twice.
Then `kubectl uncordon`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.incluster.conftest import (
    LEADER_ELECTION,
    NS,
    Cluster,
    current_leader,
    eventually,
    finished,
    jobset_manifest,
    namespace,
    uninstall,
)

pytestmark = pytest.mark.timeout(600)

VALUES = {
    "controller": {"replicas": 2, "leaderElection": LEADER_ELECTION},
    "podDisruptionBudget": {"enabled": True, "minAvailable": 1},
}
PDB = "jobset-controller-manager"


@pytest.fixture(scope="module")
def installed(cluster: Cluster) -> Iterator[Cluster]:
    release = cluster.install(VALUES)
    try:
        assert release["status"] == "deployed"
        cluster.rollout()
        yield cluster
    finally:
        uninstall(cluster)


def _disruptions_allowed(cluster: Cluster) -> int:
    """What the budget allows once both replicas are ready again (the PDB controller's
    status lags the pods a little)."""

    def allowed() -> int | None:
        status = cluster.json("get", "pdb", PDB, "-n", NS).get("status") or {}
        return status.get("disruptionsAllowed") if status.get("currentHealthy") == 2 else None

    return eventually(allowed, 60, "the budget to allow one disruption")


def _avoiding(node: str) -> dict[str, Any]:
    """Pod spec fields keeping a JobSet's pods off `node` (the drain is the controller's)."""
    term = {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": [node]}
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [term]}]
                }
            }
        }
    }


def test_drain_moves_the_leader_and_loses_nothing(installed: Cluster) -> None:
    cluster = installed
    assert _disruptions_allowed(cluster) == 1
    assert cluster.json("get", "pdb", PDB, "-n", NS)["status"]["expectedPods"] == 2
    leader = current_leader(cluster)
    pods = {p["metadata"]["name"]: p for p in cluster.controller_pods()}
    node = pods[leader]["spec"]["nodeName"]
    with namespace(cluster, "drain-test") as ns:
        creates_before = cluster.requests("create", "jobs")
        jobs_before = len(cluster.json("get", "jobs", "-A")["items"])
        cluster.kubectl(
            "apply", "-f", "-", input=jobset_manifest("across", ns, "300s", **_avoiding(node))
        )
        eventually(
            lambda: len(cluster.json("get", "jobs", "-n", ns)["items"]) == 2 or None,
            60,
            "the JobSet's Jobs",
        )
        try:
            out = cluster.kubectl(
                "drain",
                node,
                "--ignore-daemonsets",
                "--delete-emptydir-data",
                "--timeout=240s",
                timeout=270,
            )
            assert f"pod/{leader} evicted" in out, out
            # The leader's pod is gone, replaced on another node; a new leader holds the lease.
            assert leader not in {p["metadata"]["name"] for p in cluster.controller_pods()}
            new_leader = eventually(
                lambda: (lambda h: h if h and h != leader else None)(cluster.leader()),
                LEADER_ELECTION["leaseDuration"] + LEADER_ELECTION["retryPeriod"] + 30,
                "a new leader",
            )
            cluster.rollout()
            now = cluster.controller_pods()
            assert len(cluster.ready_pods()) == 2 and new_leader in cluster.ready_pods()
            assert all(p["spec"]["nodeName"] != node for p in now), [
                (p["metadata"]["name"], p["spec"]["nodeName"]) for p in now
            ]
            assert len(cluster.controller_processes()) == 2
            node_obj = cluster.json("get", "node", node)
            assert node_obj["spec"].get("unschedulable") is True
            cluster.kubectl("apply", "-f", "-", input=jobset_manifest("after", ns))
            for name in ("across", "after"):
                js = finished(cluster, name, ns)
                assert js["status"]["terminalState"] == "Completed", js["status"]
                assert js["status"].get("restarts", 0) == 0, js["status"]
            # Nothing duplicated: one create per Job, across the leader change.
            jobs_after = len(cluster.json("get", "jobs", "-A")["items"])
            creates = cluster.requests("create", "jobs") - creates_before
            assert creates == jobs_after - jobs_before == 4, (creates, jobs_after - jobs_before)
        finally:
            cluster.kubectl("uncordon", node)
    assert not cluster.json("get", "node", node)["spec"].get("unschedulable")
    assert _disruptions_allowed(cluster) == 1
