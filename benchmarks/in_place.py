"""What the InPlaceRestart case of `benchmarks/recovery.py` adds: real agents, real workers.

In-place restart is a protocol between the controller and an agent in every pod (`jobset
in-place-restart-agent`); the simulated-program interpreter (`kubesim.programs`) works out
a container's output and exit from its command without running it, so it cannot play an
agent that watches its JobSet, patches its pod and answers a startup probe. The agent
therefore runs for real, through the simulator's `--run-image` (root: every real pod gets
its own network namespace), with the pod template of `examples/in-place-restart.yaml`:

- the agent as a sidecar (restartable init container, `restartPolicyRules`
  RestartAllContainers on a non-zero exit, the startup probe on `/barrier-is-down:8081` as
  the barrier), under a ServiceAccount whose Role grants `patch` on pods and
  `get/list/watch` on jobsets, the least the agent needs;
- the worker `sleep infinity` as a real process too (the host's `sleep`; its image maps to
  an empty directory), with the same rule, so that the failure the benchmark injects is the
  worker process dying (`worker_pids`, `fail_worker`: SIGKILL, exit 137), as in a real pod;
- Jobs as the webhook requires for in-place restart (`backoffLimit` max, `podReplacementPolicy:
  Failed`), and the controller with the `InPlaceRestart` feature gate.

The simulator gives each real pod an address on its own /22 bridge (`kubesim.kubelet.network`),
so at most `MAX_REAL_PODS` (1,021) real pods fit in one simulated cluster.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any, Final

from jobset.api import constants as c
from jobset.runtime.client import Resource
from kubesim.kubelet.network import POD_SLOTS

__all__ = [
    "AGENT_IMAGE",
    "CONTROLLER_FLAGS",
    "MAX_REAL_PODS",
    "RBAC",
    "WORKER_IMAGE",
    "add_agent",
    "fail_worker",
    "in_place_pod_template",
    "sim_flags",
    "worker_pids",
]

AGENT_IMAGE: Final = "ghcr.io/jobset-py/jobset"
WORKER_IMAGE: Final = "bench.local/sleeper"
SERVICE_ACCOUNT: Final = "jobset-in-place-restart"
WORKER_POD_ENV: Final = "BENCH_WORKER_POD"
# The pod addresses on the simulator's bridge (kubesim.kubelet.network.Bridge.add_pod).
MAX_REAL_PODS: Final = len(POD_SLOTS)
CONTROLLER_FLAGS: Final = ("--feature-gates", "InPlaceRestart=true")

SERVICE_ACCOUNTS: Final = Resource("", "v1", "serviceaccounts", "ServiceAccount")
ROLES: Final = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLE_BINDINGS: Final = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")

RBAC: Final[list[tuple[Resource, dict[str, Any]]]] = [
    (SERVICE_ACCOUNTS, {"metadata": {"name": SERVICE_ACCOUNT}}),
    (
        ROLES,
        {
            "metadata": {"name": SERVICE_ACCOUNT},
            "rules": [
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["patch"]},
                {
                    "apiGroups": [c.GROUP],
                    "resources": ["jobsets"],
                    "verbs": ["get", "list", "watch"],
                },
            ],
        },
    ),
    (
        ROLE_BINDINGS,
        {
            "metadata": {"name": SERVICE_ACCOUNT},
            "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT}],
            "roleRef": {
                "kind": "Role",
                "name": SERVICE_ACCOUNT,
                "apiGroup": "rbac.authorization.k8s.io",
            },
        },
    ),
]

_NOT_ZERO: Final = {
    "action": "RestartAllContainers",
    "exitCodes": {"operator": "NotIn", "values": [0]},
}


def _field(path: str) -> dict[str, Any]:
    return {"valueFrom": {"fieldRef": {"fieldPath": path}}}


def add_agent(job_spec: dict[str, Any]) -> None:
    """Make a Job template in-place restartable (edits `job_spec`): the Job settings the
    webhook requires, the agent as a sidecar under its ServiceAccount, and each worker
    container restarting the pod in place on a non-zero exit."""
    job_spec["backoffLimit"] = 2147483647
    job_spec["podReplacementPolicy"] = "Failed"
    pod = job_spec["template"]["spec"]
    pod["serviceAccountName"] = SERVICE_ACCOUNT
    pod["terminationGracePeriodSeconds"] = 0
    pod["initContainers"] = [
        {
            "name": "in-place-restart-agent",
            "image": f"{AGENT_IMAGE}:bench",
            "command": ["jobset", "in-place-restart-agent", "--log-level", "WARNING"],
            "restartPolicy": "Always",
            "restartPolicyRules": [_NOT_ZERO],
            "startupProbe": {
                "httpGet": {"path": "/barrier-is-down", "port": 8081},
                "periodSeconds": 1,
                "failureThreshold": 600,
            },
            "env": [
                {
                    "name": "JOBSET_NAME",
                    **_field(f"metadata.annotations['{c.JOBSET_NAME_KEY}']"),
                },
                {"name": "POD_NAME", **_field("metadata.name")},
            ],
        }
    ]
    for worker in pod["containers"]:
        worker["restartPolicy"] = "Never"
        worker["restartPolicyRules"] = [_NOT_ZERO]


def in_place_pod_template(job_spec: dict[str, Any]) -> None:
    """Turn the benchmark's Job template into the in-place one (edits `job_spec`), its
    worker the host's `sleep` run as a real process."""
    add_agent(job_spec)
    (worker,) = job_spec["template"]["spec"]["containers"]
    worker["image"] = f"{WORKER_IMAGE}:1"
    worker["env"] = [{"name": WORKER_POD_ENV, **_field("metadata.name")}]


def sim_flags(jobset_bin: str, empty_dir: Path) -> list[str]:
    """`jobset sim` flags that run the agent from this installation and the worker from
    the host's `sleep`."""
    return [
        "--run-image",
        f"{AGENT_IMAGE}={jobset_bin}",
        "--run-image",
        f"{WORKER_IMAGE}={empty_dir}",
    ]


def worker_pids(pod: str) -> list[int]:
    """The worker processes of `pod`: by the pod name in their environment (we run as
    root, as the real-process runtime requires, so every /proc/PID/environ is readable)."""
    marker = f"{WORKER_POD_ENV}={pod}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker in (entry / "environ").read_bytes().split(b"\0"):
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def fail_worker(pids: list[int]) -> int:
    """Kill these worker processes (SIGKILL: the worker exits 137, which its rule answers
    with RestartAllContainers); returns how many were still there to kill."""
    killed = 0
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except ProcessLookupError:
            continue
    return killed
