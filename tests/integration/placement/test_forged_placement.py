"""Exclusive placement cannot be forged from another namespace (docs/reliability.md,
"Threat model").

The job-key label is a predictable SHA-1 of `<namespace>/<job>`. Upstream's leader affinity
selects it in every namespace (`namespaceSelector: {}`), so any tenant could label a pod of
its own with a victim's key and pull the victim's leader - and with it the whole Job - into
a domain of its choosing. Two defences, each tested here against the simulated scheduler:

- the validating pod webhook refuses a job-key that is not the key of the pod's own Job, on
  create and when labels are added later;
- the leader's affinity counts only pods of its own namespace, so even a pod that got the
  label past the webhook (installed before it, or while it was bypassed) pulls nothing.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import yaml

from jobset.api import constants as c
from jobset.api.types import job_key
from kubesim.process import SimProcess
from tests.integration.placement.conftest import POOL_KEY
from tests.integration.placement.process import HarnessProcess

pytestmark = [pytest.mark.timeout(300), pytest.mark.kubectl]

ATTACKER = "attacker"
VICTIM = "victim"
TARGET_POOL = "pool-3"
VALIDATING = "jobset-validating-webhook-configuration"


def victim_jobset() -> dict[str, Any]:
    container = {
        "name": "c",
        "image": "busybox",
        "command": ["sleep", "infinity"],
        "resources": {"requests": {"cpu": "1"}},
    }
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": VICTIM,
            "namespace": "default",
            "annotations": {c.EXCLUSIVE_KEY: POOL_KEY},
        },
        "spec": {
            "network": {"enableDNSHostnames": False},
            "replicatedJobs": [
                {
                    "name": "w",
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "parallelism": 1,
                            "completions": 1,
                            "template": {"spec": {"containers": [container]}},
                        }
                    },
                }
            ],
        },
    }


def attacker_pod(name: str, node: str, labels: dict[str, str]) -> dict[str, Any]:
    """A pod on `node` taking 7 of its 8 CPUs: the pool is the last place the scheduler would
    put a 1-CPU pod of its own accord."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ATTACKER, "labels": labels},
        "spec": {
            "nodeName": node,
            "containers": [
                {
                    "name": "c",
                    "image": "busybox",
                    "command": ["sleep", "infinity"],
                    "resources": {"requests": {"cpu": "7"}},
                }
            ],
        },
    }


def nodes_of_pool(sim: SimProcess, pool: str) -> list[str]:
    out = sim.kubectl("get", "nodes", "-l", f"{POOL_KEY}={pool}", "-o", "json").stdout
    return sorted(n["metadata"]["name"] for n in json.loads(out)["items"])


def pool_of_node(sim: SimProcess, node: str) -> str:
    out = sim.kubectl("get", "node", node, "-o", "json").stdout
    return str(json.loads(out)["metadata"]["labels"][POOL_KEY])


def bound_leader(sim: SimProcess) -> dict[str, Any] | None:
    out = sim.kubectl("get", "pods", "-l", f"{c.JOBSET_NAME_KEY}={VICTIM}", "-o", "json").stdout
    for pod in json.loads(out)["items"]:
        if pod["spec"].get("nodeName"):
            return dict(pod)
    return None


def bypassing_the_webhook(sim: SimProcess, on: bool) -> None:
    """Take the attacker's namespace out of the validating configuration's scope (as if the
    webhook were not installed yet), or put it back."""
    config = json.loads(
        sim.kubectl("get", "validatingwebhookconfiguration", VALIDATING, "-o", "json").stdout
    )
    index = [h["name"] for h in config["webhooks"]].index(c.VALIDATING_POD_WEBHOOK_NAME)
    if on:
        selector = {
            "matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": [ATTACKER]}
            ]
        }
        patch = [{"op": "add", "path": f"/webhooks/{index}/namespaceSelector", "value": selector}]
    else:
        patch = [{"op": "remove", "path": f"/webhooks/{index}/namespaceSelector"}]
    sim.kubectl(
        "patch",
        "validatingwebhookconfiguration",
        VALIDATING,
        "--type=json",
        "-p",
        json.dumps(patch),
    )


def test_a_forged_job_key_is_refused_and_pulls_no_leader(
    sim_pods: SimProcess, harness: HarnessProcess
) -> None:
    sim_pods.kubectl("create", "namespace", ATTACKER)
    key = job_key("default", f"{VICTIM}-w-0")
    nodes = nodes_of_pool(sim_pods, TARGET_POOL)
    assert len(nodes) == 4
    spy = attacker_pod("spy", nodes[0], {c.JOB_KEY: key})

    # 1. The webhook refuses the victim's key on a pod of another namespace...
    r = sim_pods.kubectl("apply", "-f", "-", input=yaml.safe_dump(spy), check=False)
    assert r.returncode != 0 and "reserved for pods of JobSet Jobs" in r.stderr, r.stderr
    # ... and refuses it when added to an existing pod's labels.
    plain = attacker_pod("filler-0", nodes[0], {"app": "filler"})
    sim_pods.kubectl("apply", "-f", "-", input=yaml.safe_dump(plain))
    r = sim_pods.kubectl(
        "label", "pod", "filler-0", "-n", ATTACKER, f"{c.JOB_KEY}={key}", check=False
    )
    assert r.returncode != 0 and "reserved for pods of JobSet Jobs" in r.stderr, r.stderr
    sim_pods.kubectl("delete", "pod", "filler-0", "-n", ATTACKER, "--wait=true")

    # 2. A pod that carries the key anyway (webhook bypassed) does not pull the leader into
    # the nearly full pool it sits in.
    bypassing_the_webhook(sim_pods, True)
    try:
        sim_pods.kubectl("apply", "-f", "-", input=yaml.safe_dump(spy))
    finally:
        bypassing_the_webhook(sim_pods, False)
    fillers = [attacker_pod(f"filler-{i}", n, {"app": "filler"}) for i, n in enumerate(nodes[1:])]
    sim_pods.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(fillers))
    sim_pods.kubectl("apply", "-f", "-", input=yaml.safe_dump(victim_jobset()))
    try:
        deadline = time.monotonic() + 60
        leader = bound_leader(sim_pods)
        while leader is None and time.monotonic() < deadline:
            time.sleep(0.3)
            leader = bound_leader(sim_pods)
        assert leader is not None, "the victim's leader was never bound"
        affinity = leader["spec"]["affinity"]["podAffinity"]
        assert (
            "namespaceSelector" not in affinity["requiredDuringSchedulingIgnoredDuringExecution"][0]
        )
        assert pool_of_node(sim_pods, leader["spec"]["nodeName"]) != TARGET_POOL
    finally:
        sim_pods.kubectl("delete", "jobset", VICTIM, "--wait=true", "--timeout=60s", check=False)
        sim_pods.kubectl("delete", "namespace", ATTACKER, "--wait=false", check=False)
