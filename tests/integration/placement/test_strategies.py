"""Exclusive placement end to end at `--sim-level pods`: the simulated job controller makes
pods, the pod webhooks run in the harness, the simulated scheduler binds pods to the 4
node pools. For each strategy, a JobSet of 4 Jobs x 4 pods must put each Job alone in one
pool; with 5 Jobs one must wait and run once a pool frees up.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from typing import Any

import pytest
import yaml

from jobset.api import constants as c
from kubesim.process import SimProcess
from tests import builders
from tests.integration.placement.conftest import POOL_KEY
from tests.integration.placement.process import HarnessProcess

pytestmark = [pytest.mark.timeout(300), pytest.mark.kubectl]


def jobset(name: str, strategy: str, replicas: int, command: str) -> dict[str, Any]:
    annotations = {c.EXCLUSIVE_KEY: POOL_KEY}
    if strategy == "planned":
        annotations["placement.jobset.x-k8s.io/strategy"] = "planned"
    if strategy == "node-selector":
        annotations[c.NODE_SELECTOR_STRATEGY_KEY] = "true"
    w = builders.rjob(
        "w",
        replicas,
        parallelism=4,
        indexed=None,
        backoff_limit=100,
        restart_policy=None,
        container="c",
        command=["sleep", command],
        container_fields={"resources": {"requests": {"cpu": "1"}}},
    )
    return builders.jobset(name, w, annotations=annotations, network={"enableDNSHostnames": False})


def pods_of(sim: SimProcess, name: str) -> list[dict[str, Any]]:
    out = sim.kubectl("get", "pods", "-l", f"{c.JOBSET_NAME_KEY}={name}", "-o", "json").stdout
    return list(json.loads(out)["items"])


def node_pools(sim: SimProcess) -> dict[str, str]:
    nodes = json.loads(sim.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    return {n["metadata"]["name"]: n["metadata"]["labels"][POOL_KEY] for n in nodes}


def placement(sim: SimProcess, name: str) -> dict[str, set[str]]:
    """Job name -> pools its live, bound pods are on."""
    pools = node_pools(sim)
    out: dict[str, set[str]] = defaultdict(set)
    for pod in pods_of(sim, name):
        node = pod["spec"].get("nodeName")
        if node and not pod["metadata"].get("deletionTimestamp"):
            job = pod["metadata"]["labels"]["job-name"]
            out[job].add(pools[node])
    return out


def bound_per_job(sim: SimProcess, name: str) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for pod in pods_of(sim, name):
        if pod["spec"].get("nodeName") and pod["status"].get("phase") in ("Pending", "Running"):
            out[pod["metadata"]["labels"]["job-name"]] += 1
    return out


def wait(check: Any, within: float, what: str) -> Any:
    deadline = time.monotonic() + within
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.3)
    raise AssertionError(f"{what}: not within {within}s (last: {last!r})")


def label_pools_for_jobs(
    sim: SimProcess, jobset_name: str, jobs: list[int], pools: list[str]
) -> None:
    """The user's side of the node-selector strategy: one pool labelled and tainted per Job."""
    for index, pool in zip(jobs, pools, strict=True):
        value = f"default_{jobset_name}-w-{index}"
        sim.kubectl(
            "label",
            "nodes",
            "-l",
            f"{POOL_KEY}={pool}",
            f"{c.NAMESPACED_JOB_KEY}={value}",
            "--overwrite",
        )
        sim.kubectl(
            "taint",
            "nodes",
            "-l",
            f"{POOL_KEY}={pool}",
            f"{c.NO_SCHEDULE_TAINT_KEY}=true:NoSchedule",
            "--overwrite",
        )


def clean_pool_labels(sim: SimProcess) -> None:
    sim.kubectl("label", "nodes", "--all", f"{c.NAMESPACED_JOB_KEY}-")
    sim.kubectl("taint", "nodes", "--all", f"{c.NO_SCHEDULE_TAINT_KEY}-", check=False)


@pytest.mark.parametrize("strategy", ["affinity", "node-selector", "planned"])
def test_four_jobs_land_one_per_pool(
    sim_pods: SimProcess, harness: HarnessProcess, strategy: str
) -> None:
    name = f"four-{strategy}"
    pools = sorted(set(node_pools(sim_pods).values()))
    assert len(pools) == 4
    if strategy == "node-selector":
        label_pools_for_jobs(sim_pods, name, [0, 1, 2, 3], pools)
    try:
        sim_pods.kubectl(
            "apply", "-f", "-", input=yaml.safe_dump(jobset(name, strategy, 4, "infinity"))
        )
        wait(lambda: sum(bound_per_job(sim_pods, name).values()) == 16, 60, "16 pods bound")
        where = placement(sim_pods, name)
        assert sorted(where) == [f"{name}-w-{i}" for i in range(4)]
        assert all(len(p) == 1 for p in where.values()), where
        assert sorted(next(iter(p)) for p in where.values()) == pools, where
        if strategy == "planned":
            jobs = json.loads(
                sim_pods.kubectl(
                    "get", "jobs", "-l", f"{c.JOBSET_NAME_KEY}={name}", "-o", "json"
                ).stdout
            )["items"]
            for job in jobs:
                domain = job["metadata"]["labels"]["placement.jobset.x-k8s.io/domain"]
                assert job["spec"]["template"]["spec"]["nodeSelector"][POOL_KEY] == domain
            # No affinity anywhere: the pods schedule like plain nodeSelector pods.
            assert all("affinity" not in p["spec"] for p in pods_of(sim_pods, name))
        if strategy == "affinity":
            leaders = [
                p
                for p in pods_of(sim_pods, name)
                if p["metadata"]["annotations"].get(c.JOB_COMPLETION_INDEX_ANNOTATION) == "0"
            ]
            assert leaders and all(p["spec"]["affinity"]["podAntiAffinity"] for p in leaders)
    finally:
        sim_pods.kubectl("delete", "jobset", name, "--wait=true", "--timeout=60s", check=False)
        wait(lambda: not pods_of(sim_pods, name), 60, "pods gone")
        if strategy == "node-selector":
            clean_pool_labels(sim_pods)


@pytest.mark.parametrize("strategy", ["affinity", "planned"])
def test_fifth_job_waits_for_a_free_pool(
    sim_pods: SimProcess, harness: HarnessProcess, strategy: str
) -> None:
    name = f"five-{strategy}"
    # 40 simulated seconds at --time-scale 0.1: each Job runs about 4 s.
    sim_pods.kubectl("apply", "-f", "-", input=yaml.safe_dump(jobset(name, strategy, 5, "40s")))
    try:
        wait(lambda: sum(bound_per_job(sim_pods, name).values()) == 16, 30, "16 pods bound")
        time.sleep(1.0)
        bound = bound_per_job(sim_pods, name)
        assert len([j for j, n in bound.items() if n]) == 4, bound
        assert sum(bound.values()) == 16
        running = set(bound)
        waiting = {f"{name}-w-{i}" for i in range(5)} - running
        assert len(waiting) == 1
        late = waiting.pop()

        def late_job_bound() -> dict[str, set[str]] | None:
            where = placement(sim_pods, name)
            return (
                where
                if len(where.get(late, ())) == 1 and bound_per_job(sim_pods, name).get(late) == 4
                else None
            )

        where = wait(late_job_bound, 60, f"{late} bound to a freed pool")
        assert len(where[late]) == 1
        # Eventually every Job completes, the JobSet with them.
        wait(
            lambda: (
                json.loads(sim_pods.kubectl("get", "jobset", name, "-o", "json").stdout)
                .get("status", {})
                .get("terminalState")
                == "Completed"
            ),
            90,
            "JobSet completed",
        )
    finally:
        sim_pods.kubectl("delete", "jobset", name, "--wait=true", "--timeout=60s", check=False)
