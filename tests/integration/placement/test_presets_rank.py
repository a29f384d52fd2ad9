"""Environment presets end to end at `--sim-level pods`: the pod mutating webhook stamps each
pod of a multi-pod Job with its global rank label, which the preset env vars read.

The JobSet: a pytorch preset over `leader` (1 Job x 1 pod) and `workers` (2 Jobs x 2 pods),
so the world is 5 pods and only the worker Jobs' ranks need the label (offset 1 and 3, plus
the completion index). Without the label the downward-API env var `RANK` of those pods
resolves to nothing.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from jobset.api import constants as c
from jobset.api.presets import FRAMEWORK_KEY, RANK_LABEL
from kubesim.process import SimProcess
from tests import builders
from tests.eventually import eventually_sync
from tests.integration.placement.process import HarnessProcess

pytestmark = [pytest.mark.timeout(180), pytest.mark.kubectl]


def _pods(sim: SimProcess, name: str) -> list[dict[str, Any]]:
    out = sim.kubectl("get", "pods", "-l", f"{c.JOBSET_NAME_KEY}={name}", "-o", "json").stdout
    return list(json.loads(out)["items"])


def test_multi_pod_jobs_get_their_global_rank_label(
    sim_pods: SimProcess, harness: HarnessProcess
) -> None:
    name = "rank-presets"
    leader = builders.rjob("leader", 1, command=["sleep", "infinity"])
    workers = builders.rjob("workers", 2, parallelism=2, command=["sleep", "infinity"])
    js = builders.jobset(name, leader, workers, annotations={FRAMEWORK_KEY: "pytorch"})
    sim_pods.kubectl("apply", "-f", "-", input=yaml.safe_dump(js))
    try:
        pods = eventually_sync(
            lambda: _pods(sim_pods, name),
            lambda found: len(found) == 5,
            within=90,
            what="5 pods created",
        )
        ranks = {}
        for pod in pods:
            meta = pod["metadata"]
            job = meta["labels"]["batch.kubernetes.io/job-name"]
            index = meta["annotations"][c.JOB_COMPLETION_INDEX_ANNOTATION]
            ranks[(job, index)] = meta["labels"].get(RANK_LABEL)
            env = {e["name"]: e for e in pod["spec"]["containers"][0]["env"]}
            if job.startswith(f"{name}-workers-"):
                path = env["RANK"]["valueFrom"]["fieldRef"]["fieldPath"]
                assert path == f"metadata.labels['{RANK_LABEL}']"
        assert ranks == {
            (f"{name}-leader-0", "0"): "0",
            (f"{name}-workers-0", "0"): "1",
            (f"{name}-workers-0", "1"): "2",
            (f"{name}-workers-1", "0"): "3",
            (f"{name}-workers-1", "1"): "4",
        }
    finally:
        sim_pods.kubectl("delete", "jobset", name, "--wait=true", "--timeout=60s", check=False)
