"""InPlaceRestart end to end: `jobset dev` with the gate on, and the agent,
`jobset in-place-restart-agent`, running as a real process in every worker pod through
`--run-image` (with the pod's ServiceAccount token, under the RBAC the manifests grant),
in both of upstream's modes at once:

- sidecar: the agent is a restartable init container whose startup probe is the barrier;
  the (simulated) worker crashes once on one pod and `RestartAllContainers` restarts the
  pod in place;
- main container: the agent runs the worker itself (`WORKER_COMMAND`, a real shell) and a
  container rule `Restart` restarts it in place.

Either way: one group restart, no pod recreated (same UIDs), every pod at attempt 1, the
status fields and events as upstream's protocol says, the JobSet Completed with
`restarts` 0 - and each worker found the file it wrote in its emptyDir before the restart.
Needs root (the real-process runtime), as the in-cluster tests do.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from jobset.dev.examplekit import jobset_bin, start_dev
from kubesim.process import SimProcess
from tests.eventually import eventually_sync

pytestmark = [pytest.mark.kubectl]

IMAGE = "ghcr.io/jobset-py/jobset"
NS = "in-place"
SA = "agent"
ATTEMPT = "jobset.sigs.k8s.io/in-place-restart-attempt"
WITHIN = 120.0

RBAC = f"""
apiVersion: v1
kind: ServiceAccount
metadata: {{name: {SA}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: {SA}}}
rules:
- {{apiGroups: [""], resources: [pods], verbs: [patch]}}
- {{apiGroups: [jobset.x-k8s.io], resources: [jobsets], verbs: [get, list, watch]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: {SA}}}
subjects: [{{kind: ServiceAccount, name: {SA}}}]
roleRef: {{kind: Role, name: {SA}, apiGroup: rbac.authorization.k8s.io}}
"""

AGENT_ENV = [
    {
        "name": "JOBSET_NAME",
        "valueFrom": {
            "fieldRef": {"fieldPath": "metadata.annotations['jobset.sigs.k8s.io/jobset-name']"}
        },
    },
    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    {
        "name": "JOB_INDEX",
        "valueFrom": {
            "fieldRef": {"fieldPath": "metadata.annotations['jobset.sigs.k8s.io/job-index']"}
        },
    },
]
NOT_ZERO = [{"exitCodes": {"operator": "NotIn", "values": [0]}}]
# Job 0's worker fails on its first run; every worker resumes from its emptyDir file.
WORKER = (
    'if [ -f /mnt/scratch/checkpoint ]; then echo "resumed from $(cat /mnt/scratch/checkpoint)"; '
    "exit 0; fi; echo step-7 > /mnt/scratch/checkpoint; "
    'if [ "$JOB_INDEX" = 0 ]; then sleep 1; exit 3; fi; sleep 600'
)


def jobset(name: str, pod: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": {"maxRestarts": 3, "restartStrategy": "InPlaceRestart"},
            "replicatedJobs": [
                {
                    "name": "w",
                    "replicas": 2,
                    "template": {
                        "spec": {
                            "completions": 1,
                            "parallelism": 1,
                            "backoffLimit": 2147483647,
                            "podReplacementPolicy": "Failed",
                            "template": {
                                "spec": {
                                    "serviceAccountName": SA,
                                    "restartPolicy": "Never",
                                    "terminationGracePeriodSeconds": 0,
                                    "volumes": [{"name": "scratch", "emptyDir": {}}],
                                    **pod,
                                }
                            },
                        }
                    },
                }
            ],
        },
    }


SIDECAR = jobset(
    "sidecar",
    {
        "initContainers": [
            {
                "name": "agent",
                "image": f"{IMAGE}:0.1.0",
                "command": ["jobset", "in-place-restart-agent", "--log-format", "console"],
                "restartPolicy": "Always",
                "restartPolicyRules": [{"action": "RestartAllContainers", **NOT_ZERO[0]}],
                "startupProbe": {
                    "httpGet": {"path": "/barrier-is-down", "port": 8081},
                    "periodSeconds": 1,
                    "failureThreshold": 300,
                },
                "env": AGENT_ENV[:2],
            }
        ],
        "containers": [
            {
                "name": "worker",
                "image": "busybox:1.36",
                "command": ["sh", "-c", WORKER],
                "restartPolicy": "Never",
                "restartPolicyRules": [{"action": "RestartAllContainers", **NOT_ZERO[0]}],
                "env": AGENT_ENV[2:],
                "volumeMounts": [{"name": "scratch", "mountPath": "/mnt/scratch"}],
            }
        ],
    },
)

MAIN = jobset(
    "main",
    {
        "containers": [
            {
                "name": "agent",
                "image": f"{IMAGE}:0.1.0",
                "command": ["jobset", "in-place-restart-agent", "--log-format", "console"],
                "restartPolicy": "Never",
                "restartPolicyRules": [{"action": "Restart", **NOT_ZERO[0]}],
                "env": [*AGENT_ENV, {"name": "WORKER_COMMAND", "value": WORKER}],
                "volumeMounts": [{"name": "scratch", "mountPath": "/mnt/scratch"}],
            }
        ],
    },
)


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    d = start_dev(
        tmp_path_factory.mktemp("dev"),
        "--feature-gates",
        "InPlaceRestart=true",
        "--run-image",
        f"{IMAGE}={jobset_bin()}",
        "--time-scale",
        "0.05",
        timeout=120,
    )
    try:
        yield d
    finally:
        d.stop()


def get(dev: SimProcess, *args: str) -> Any:
    return json.loads(dev.kubectl("get", *args, "-n", NS, "-o", "json").stdout)


def pods_of(dev: SimProcess, name: str) -> list[dict[str, Any]]:
    items = get(dev, "pods", "-l", f"jobset.sigs.k8s.io/jobset-name={name}")["items"]
    return sorted(items, key=lambda p: p["metadata"]["name"])


def test_in_place_restart_in_sidecar_and_main_container_modes(dev: SimProcess) -> None:
    dev.kubectl("create", "namespace", NS)
    manifests = [*yaml.safe_load_all(RBAC), SIDECAR, MAIN]
    dev.kubectl("apply", "-n", NS, "-f", "-", input=yaml.safe_dump_all(manifests))

    first: dict[str, dict[str, str]] = {}
    for name in ("sidecar", "main"):
        pods = eventually_sync(
            lambda name=name: pods_of(dev, name),  # type: ignore[misc]
            lambda ps: len(ps) == 2,
            within=WITHIN,
            what=f"the two pods of {name}",
        )
        first[name] = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods}

    for name in ("sidecar", "main"):
        js = eventually_sync(
            lambda name=name: get(dev, "jobset", name),  # type: ignore[misc]
            lambda js: (js.get("status") or {}).get("terminalState"),
            within=WITHIN,
            what=f"JobSet {name} finished",
        )
        status = js["status"]
        assert status["terminalState"] == "Completed", json.dumps(status)
        assert status["restarts"] == 0
        assert status["currentInPlaceRestartAttempt"] == 1
        assert status["previousInPlaceRestartAttempt"] == 0

        pods = pods_of(dev, name)
        # the same pods throughout: restarted in place, never recreated
        assert {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods} == first[name]
        for pod in pods:
            assert pod["metadata"]["annotations"][ATTEMPT] == "1"
            assert pod["status"]["phase"] == "Succeeded"
            statuses = {
                cs["name"]: cs
                for cs in [
                    *(pod["status"].get("initContainerStatuses") or []),
                    *pod["status"]["containerStatuses"],
                ]
            }
            assert statuses["agent"]["restartCount"] == 1, pod["metadata"]["name"]
            container = "worker" if name == "sidecar" else "agent"
            log = dev.kubectl("logs", "-n", NS, pod["metadata"]["name"], "-c", container).stdout
            assert "resumed from step-7" in log  # the emptyDir outlived the restart

        events = get(dev, "events", "--field-selector", f"involvedObject.name={name}")
        reasons = [e["reason"] for e in events["items"] if e["involvedObject"]["kind"] == "JobSet"]
        assert "InPlaceRestartStarted" in reasons and "InPlaceRestartCompleted" in reasons
