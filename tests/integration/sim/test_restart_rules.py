"""The simulated kubelet's container lifecycle for training workloads, seen through a real
client: container `restartPolicyRules` (`Restart`, `RestartAllContainers`), sidecar init
containers gated by their startup probe, and emptyDir files that survive container restarts
and go with the pod. The pods are those of Kubernetes' own node e2e tests for these
features, run by simulated programs (`time_scale=0.01`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from tests.eventually import eventually
from tests.integration.sim.test_components import NS, Env, _start, conditions, wait_finished

RESTART_ALL_ON_42 = [
    {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
]
WORKDIR = {"name": "workdir", "emptyDir": {}}
MOUNT = [{"name": "workdir", "mountPath": "/mnt"}]


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    async for e in _start(tmp_path, "pods"):
        yield e


def statuses(pod: client.V1Pod) -> dict[str, client.V1ContainerStatus]:
    return {
        s.name: s
        for s in [
            *(pod.status.init_container_statuses or []),
            *(pod.status.container_statuses or []),
        ]
    }


def pod_manifest(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


async def test_restart_all_containers_keeps_pod_and_emptydir(env: Env) -> None:
    """A main container exiting 42 restarts every container in place: init containers run
    again, restartCount + 1 each, same UID; the file it wrote survives, so the second run
    does not exit 42 again."""
    await env.create_pod(
        pod_manifest(
            "restart-all",
            restartPolicy="Never",
            volumes=[WORKDIR],
            initContainers=[
                {"name": "init", "image": "busybox", "command": ["/bin/sh", "-c", "exit 0"]},
                {
                    "name": "sidecar",
                    "image": "busybox",
                    "command": ["/bin/sh", "-c", "sleep 10000"],
                    "restartPolicy": "Always",
                },
            ],
            containers=[
                {
                    "name": "source",
                    "image": "busybox",
                    "command": [
                        "/bin/sh",
                        "-c",
                        "if [ -f /mnt/restart-complete ]; then sleep 10000; "
                        "else touch /mnt/restart-complete; sleep 1; exit 42; fi",
                    ],
                    "restartPolicy": "Never",
                    "restartPolicyRules": RESTART_ALL_ON_42,
                    "volumeMounts": MOUNT,
                },
                {"name": "regular", "image": "busybox", "command": ["sleep", "10000"]},
            ],
        )
    )
    first = await env.core.read_namespaced_pod("restart-all", NS)

    async def restarted() -> client.V1Pod | None:
        pod = await env.core.read_namespaced_pod("restart-all", NS)
        st = statuses(pod)
        if len(st) == 4 and all(s.restart_count == 1 for s in st.values()):
            if st["source"].state.running and st["regular"].state.running:
                return pod
        return None

    pod = await eventually(restarted, what="all four containers restarted once and running")
    assert pod.metadata.uid == first.metadata.uid
    assert pod.status.phase == "Running"
    st = statuses(pod)
    assert st["source"].last_state.terminated.exit_code == 42
    assert st["regular"].last_state.terminated.exit_code == 137
    assert st["init"].last_state.terminated.exit_code == 0
    conds = {c.type: c.status for c in pod.status.conditions}
    assert conds["AllContainersRestarting"] == "False"
    assert conds["Initialized"] == "True" and conds["Ready"] == "True"


async def test_sidecar_startup_probe_gates_main_containers(env: Env) -> None:
    """The main container starts only once the sidecar has passed its startup probe."""
    await env.create_pod(
        pod_manifest(
            "gated",
            restartPolicy="Never",
            initContainers=[
                {
                    "name": "agent",
                    "image": "busybox",
                    "command": ["sleep", "10000"],
                    "restartPolicy": "Always",
                    # 300 s scaled by 0.01: the barrier holds for about three seconds
                    "startupProbe": {
                        "httpGet": {"path": "/ok", "port": 8081},
                        "initialDelaySeconds": 300,
                    },
                }
            ],
            containers=[{"name": "worker", "image": "busybox", "command": ["sleep", "10000"]}],
        )
    )

    async def agent_running() -> client.V1Pod | None:
        pod = await env.core.read_namespaced_pod("gated", NS)
        st = statuses(pod)
        return pod if st and st["agent"].state.running else None

    pod = await eventually(agent_running, what="the sidecar running")
    st = statuses(pod)
    assert st["agent"].started is False
    assert st["worker"].state.waiting is not None
    assert pod.status.phase == "Pending"
    # the running sidecar has logs already, no previous run; the waiting worker has none yet
    await env.core.read_namespaced_pod_log("gated", NS, container="agent")
    with pytest.raises(client.ApiException) as err:
        await env.core.read_namespaced_pod_log("gated", NS, container="agent", previous=True)
    message = json.loads(err.value.body)["message"]
    assert message == 'previous terminated container "agent" in pod "gated" not found'
    with pytest.raises(client.ApiException) as err:
        await env.core.read_namespaced_pod_log("gated", NS, container="worker")
    assert err.value.status == 400
    assert json.loads(err.value.body)["message"] == (
        'container "worker" in pod "gated" is waiting to start: PodInitializing'
    )

    async def worker_running() -> client.V1Pod | None:
        pod = await env.core.read_namespaced_pod("gated", NS)
        return pod if statuses(pod)["worker"].state.running else None

    pod = await eventually(worker_running, what="the worker started after the barrier")
    assert statuses(pod)["agent"].started is True
    assert pod.status.phase == "Running"


async def test_container_restart_rule_overrides_pod_policy(env: Env) -> None:
    """`restartPolicy: Never` pod, container rule `Restart` on non-zero: the container
    restarts in place (and finds its file), then the pod succeeds."""
    await env.create_pod(
        pod_manifest(
            "rule-restart",
            restartPolicy="Never",
            volumes=[WORKDIR],
            containers=[
                {
                    "name": "main",
                    "image": "busybox",
                    "command": [
                        "sh",
                        "-c",
                        "if [ -f /mnt/once ]; then echo second run; exit 0; fi; "
                        "echo x > /mnt/once; echo first run; exit 3",
                    ],
                    "restartPolicy": "Never",
                    "restartPolicyRules": [
                        {"action": "Restart", "exitCodes": {"operator": "NotIn", "values": [0]}}
                    ],
                    "volumeMounts": MOUNT,
                }
            ],
        )
    )

    async def succeeded() -> client.V1Pod | None:
        pod = await env.core.read_namespaced_pod("rule-restart", NS)
        return pod if pod.status.phase in ("Succeeded", "Failed") else None

    pod = await eventually(succeeded, what="the pod to finish", within=60)
    assert pod.status.phase == "Succeeded"
    main = statuses(pod)["main"]
    assert main.restart_count == 1
    assert main.last_state.terminated.exit_code == 3
    log = await env.core.read_namespaced_pod_log("rule-restart", NS)
    previous = await env.core.read_namespaced_pod_log("rule-restart", NS, previous=True)
    assert (log, previous) == ("second run\n", "first run\n")


@pytest.mark.parametrize(
    ("policy", "outcome"),
    [("OnFailure", "Complete"), ("Never", "Failed")],
    ids=["restarted in place keeps the volume", "replaced pod starts empty"],
)
async def test_emptydir_survives_container_restart_not_pod_replacement(
    env: Env, policy: str, outcome: str
) -> None:
    """A container that fails once, leaving a marker in its emptyDir: restarted in place
    (OnFailure) it finds the marker and succeeds; replaced by a new pod (Never) it starts
    from an empty volume and fails again, until the Job's backoffLimit."""
    script = "if [ -f /mnt/marker ]; then exit 0; fi; touch /mnt/marker; exit 1"
    await env.create_job(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": f"marker-{policy.lower()}"},
            "spec": {
                "backoffLimit": 2,
                "template": {
                    "spec": {
                        "restartPolicy": policy,
                        "volumes": [WORKDIR],
                        "containers": [
                            {
                                "name": "main",
                                "image": "busybox",
                                "command": ["sh", "-c", script],
                                "volumeMounts": MOUNT,
                            }
                        ],
                    }
                },
            },
        }
    )
    job = await wait_finished(env, f"marker-{policy.lower()}", within=90)
    assert outcome in conditions(job)
