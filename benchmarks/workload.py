"""What the scale benchmarks submit, and the names both sides of a comparison share.

The JobSets are what a large training run looks like to the controller once pods are taken
out (`jobset sim --sim-level jobs` advances Jobs by status alone): one ReplicatedJob of many
single-pod Jobs, each pod asking for resources and running a program (`sleep 1s` to finish,
`sleep infinity` to stay up), a headless Service for the pods' DNS names, and for the
restart scenarios a failure policy with the restart strategy under test.
"""

from __future__ import annotations

from typing import Any, Final

from jobset.api import constants as c
from jobset.runtime.client import Resource

NAMESPACE: Final = "bench"
JOBSETS: Final = Resource(c.GROUP, c.VERSION, c.PLURAL, c.KIND)
SERVICES: Final = Resource("", "v1", "services", "Service")
RJOB: Final = "w"

# The user agents the simulated API server counts requests by (`/debug/requests`):
# the product token before the first "/".
CONTROLLER_AGENT: Final = "jobset-controller"
BASELINE_AGENT: Final = "jobset-bench-baseline"
OBSERVER_AGENT: Final = "jobset-bench-observer"
BASELINE_USER_AGENT: Final = f"{BASELINE_AGENT}/0.1 (minimal client)"
OBSERVER_USER_AGENT: Final = f"{OBSERVER_AGENT}/0.1 (harness)"

FINISH: Final = ["sleep", "1s"]
RUN_FOREVER: Final = ["sleep", "infinity"]


def jobset(
    name: str,
    jobs: int,
    *,
    command: list[str] = FINISH,
    restart_strategy: str | None = None,
    max_restarts: int = 3,
) -> dict[str, Any]:
    """One JobSet of `jobs` single-pod Jobs in the benchmark namespace."""
    spec: dict[str, Any] = {
        "replicatedJobs": [
            {
                "name": RJOB,
                "replicas": jobs,
                "template": {
                    "spec": {
                        "parallelism": 1,
                        "completions": 1,
                        "backoffLimit": 0,
                        "template": {
                            "spec": {
                                "restartPolicy": "Never",
                                "containers": [
                                    {
                                        "name": "trainer",
                                        "image": "registry.example/trainer:v1",
                                        "command": list(command),
                                        "resources": {
                                            "requests": {"cpu": "1", "memory": "1Gi"},
                                            "limits": {"cpu": "1", "memory": "1Gi"},
                                        },
                                    }
                                ],
                            }
                        },
                    }
                },
            }
        ]
    }
    if restart_strategy is not None:
        spec["failurePolicy"] = {
            "maxRestarts": max_restarts,
            "restartStrategy": restart_strategy,
        }
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND,
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec,
    }


def attempt_of(job: dict[str, Any]) -> int:
    """The restart attempt a child Job was created for (its `restart-attempt` label)."""
    labels = (job.get("metadata") or {}).get("labels") or {}
    try:
        return int(labels.get(c.RESTART_ATTEMPT_KEY) or 0)
    except ValueError:
        return -1


def condition_true(obj: dict[str, Any], ctype: str) -> bool:
    return any(
        cond.get("type") == ctype and cond.get("status") == "True"
        for cond in (obj.get("status") or {}).get("conditions") or []
    )
