"""Elastic replicas (gate `ElasticReplicas`) at `--sim-level pods`, with the real pod webhooks
and the simulated scheduler: what a `replicas` change does to exclusive placement and to the
startup order.

- Exclusive placement (affinity and planned strategies, 4 node pools): after a scale-up every
  Job is still alone in its pool - a Job beyond the free pools waits instead of sharing one;
  after a scale-down the removed Jobs' pools are free again and the next scale-up uses them.
- dependsOn (`Ready`) and `startupPolicy: InOrder`: a dependency whose `replicas` grew is
  reached only once its new Jobs are ready too, so the dependents' (or later ReplicatedJobs')
  new Jobs wait for them; a scale-down that removes the not-yet-ready Jobs releases them.

The order tests hold a new Job back with the scheduler: the gating ReplicatedJob's pods
need a whole node (8 cpu) among the nodes labelled `GATE_LABEL`, and a test labels one more
node when the held Job may start. Every Job list is one API list, so "this Job exists only
while that one is ready" is checked on consistent snapshots.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from jobset.api import constants as c
from kubesim.process import SimProcess
from tests import builders
from tests.eventually import eventually_sync
from tests.integration.placement.process import HarnessProcess, start_harness
from tests.integration.placement.test_strategies import (
    bound_per_job,
    jobset,
    node_pools,
    placement,
    pods_of,
)
from tests.sims import kubectl_apply, live_jobs

pytestmark = [pytest.mark.timeout(180), pytest.mark.kubectl]

GATE_LABEL = "elastic-test/gate"
# How long a held Job is watched not to appear; a controller that ignored the order would
# create it in the very pass that creates the Job it should wait for.
HOLD = 2.5


@pytest.fixture(scope="module")
def elastic_harness(sim_pods: SimProcess) -> Iterator[HarnessProcess]:
    h = start_harness(sim_pods, "--feature-gates", "ElasticReplicas=true")
    yield h
    h.stop()


def _patch_replicas(sim: SimProcess, name: str, replicas: dict[int, int]) -> None:
    ops = [
        {"op": "replace", "path": f"/spec/replicatedJobs/{i}/replicas", "value": n}
        for i, n in replicas.items()
    ]
    sim.kubectl("patch", "jobset", name, "--type=json", "-p", json.dumps(ops))


def _ready(job: dict[str, Any] | None) -> bool:
    status = (job or {}).get("status") or {}
    return int(status.get("ready") or 0) + int(status.get("succeeded") or 0) >= 1


def _conditions(sim: SimProcess, name: str) -> dict[str, str]:
    js = json.loads(sim.kubectl("get", "jobset", name, "-o", "json").stdout)
    return {
        str(cond["type"]): str(cond["status"])
        for cond in (js.get("status") or {}).get("conditions") or []
    }


def _delete(sim: SimProcess, name: str) -> None:
    sim.kubectl("delete", "jobset", name, "--wait=true", "--timeout=60s", check=False)
    eventually_sync(lambda: not pods_of(sim, name), within=60, what=f"pods of {name} gone")


# ------------------------------------------------------------------ exclusive placement


def _exclusive(where: dict[str, set[str]]) -> bool:
    """Each Job on exactly one pool, no pool shared."""
    pools = [p for job in where.values() for p in job]
    return all(len(p) == 1 for p in where.values()) and len(pools) == len(set(pools))


def _bound(sim: SimProcess, name: str, jobs: list[str]) -> dict[str, set[str]]:
    """Wait until exactly `jobs` have all 4 pods bound; their pools."""

    def probe() -> tuple[dict[str, int], dict[str, set[str]]]:
        return dict(bound_per_job(sim, name)), dict(placement(sim, name))

    _, where = eventually_sync(
        probe,
        lambda v: (
            {j for j, n in v[0].items() if n} == set(jobs)
            and all(v[0][j] == 4 for j in jobs)
            and set(v[1]) == set(jobs)
        ),
        within=60,
        what=f"{jobs} bound",
    )
    return where


@pytest.mark.parametrize("strategy", ["affinity", "planned"])
def test_scaled_jobs_stay_alone_in_their_pools_and_reuse_freed_ones(
    sim_pods: SimProcess, elastic_harness: HarnessProcess, strategy: str
) -> None:
    name = f"el-{strategy}"
    w = [f"{name}-w-{i}" for i in range(5)]
    all_pools = sorted(set(node_pools(sim_pods).values()))
    assert len(all_pools) == 4
    kubectl_apply(sim_pods, jobset(name, strategy, 2, "infinity"))
    try:
        before = _bound(sim_pods, name, w[:2])
        assert _exclusive(before), before

        # Scale up into the two free pools; the running Jobs stay where they are.
        _patch_replicas(sim_pods, name, {0: 4})
        where = _bound(sim_pods, name, w[:4])
        assert _exclusive(where), where
        assert {w[0]: where[w[0]], w[1]: where[w[1]]} == before
        assert sorted(next(iter(p)) for p in where.values()) == all_pools

        # A fifth Job would fit in any pool by resources, but none is free: it must wait.
        _patch_replicas(sim_pods, name, {0: 5})
        if strategy == "affinity":
            # Its leader exists and stays unschedulable (anti-affinity to every pool).
            eventually_sync(
                lambda: [
                    p
                    for p in pods_of(sim_pods, name)
                    if p["metadata"]["labels"].get("job-name") == w[4]
                    and any(
                        cond.get("type") == "PodScheduled" and cond.get("status") == "False"
                        for cond in (p.get("status") or {}).get("conditions") or []
                    )
                ],
                within=30,
                what=f"{w[4]} leader unschedulable",
            )
        time.sleep(HOLD)
        assert not bound_per_job(sim_pods, name).get(w[4]), placement(sim_pods, name)
        if strategy == "planned":
            assert w[4] not in live_jobs(sim_pods, name)  # not created until a pool is free
        where = placement(sim_pods, name)
        assert set(where) == set(w[:4]) and _exclusive(where), where
        freed = next(iter(where[w[3]]))

        # Scale down to 3: w-3 and the waiting w-4 go, and so do their pods.
        _patch_replicas(sim_pods, name, {0: 3})
        eventually_sync(
            lambda: (
                set(live_jobs(sim_pods, name)) == set(w[:3])
                and {p["metadata"]["labels"]["job-name"] for p in pods_of(sim_pods, name)}
                == set(w[:3])
            ),
            within=60,
            what="w-3 and w-4 with their pods gone",
        )
        where = _bound(sim_pods, name, w[:3])
        assert freed not in {next(iter(p)) for p in where.values()}, where

        # The next scale-up uses the pool w-3 left (the only free one).
        _patch_replicas(sim_pods, name, {0: 4})
        where = _bound(sim_pods, name, w[:4])
        assert _exclusive(where), where
        assert where[w[3]] == {freed}, where
    finally:
        _delete(sim_pods, name)


# ------------------------------------------------------------------ startup order


def _gate_rjob(name: str, replicas: int) -> dict[str, Any]:
    """A ReplicatedJob whose single pod fills a whole node labelled GATE_LABEL."""
    r = builders.rjob(
        name,
        replicas,
        command=["sleep", "infinity"],
        container_fields={"resources": {"requests": {"cpu": "8"}}},
    )
    r["template"]["spec"]["template"]["spec"]["nodeSelector"] = {GATE_LABEL: "true"}
    return r


def _plain_rjob(name: str, replicas: int, **fields: Any) -> dict[str, Any]:
    return builders.rjob(name, replicas, command=["sleep", "infinity"], **fields)


@pytest.fixture
def gate_nodes(sim_pods: SimProcess) -> Iterator[Callable[[], None]]:
    """Call to label one more node as a gate node; the labels are removed afterwards."""
    free = sorted(node_pools(sim_pods))

    def open_one() -> None:
        sim_pods.kubectl("label", "node", free.pop(0), f"{GATE_LABEL}=true", "--overwrite")

    yield open_one
    sim_pods.kubectl("label", "nodes", "--all", f"{GATE_LABEL}-")


def _held_while(
    sim: SimProcess, name: str, held: set[str], gate: str, until_created: bool
) -> dict[str, dict[str, Any]]:
    """Watch the JobSet's Jobs: none of `held` exists unless `gate` is ready.

    `until_created`: poll until all of `held` exist (and return that snapshot); otherwise
    watch for HOLD seconds and require `gate` to exist but none of `held`.
    """
    deadline = time.monotonic() + (60 if until_created else HOLD)
    while True:
        jobs = live_jobs(sim, name)
        present = held & set(jobs)
        assert not present or _ready(jobs.get(gate)), (
            f"{sorted(present)} created while {gate} is not ready",
            {n: (j.get("status") or {}).get("ready") for n, j in jobs.items()},
        )
        if until_created and present == held:
            return jobs
        if not until_created:
            assert gate in jobs and not present, sorted(jobs)
        if time.monotonic() > deadline:
            if until_created:
                raise AssertionError(f"{sorted(held)} not created within 60s: {sorted(jobs)}")
            return jobs
        time.sleep(0.2)


def test_depends_on_a_scaled_up_replicated_job_waits_for_its_new_jobs(
    sim_pods: SimProcess, elastic_harness: HarnessProcess, gate_nodes: Callable[[], None]
) -> None:
    name = "el-deps"
    gate_nodes()
    ready_dep = [{"name": "driver", "status": c.DEPENDENCY_READY}]
    kubectl_apply(
        sim_pods,
        builders.jobset(
            name,
            _gate_rjob("driver", 1),
            _plain_rjob("workers", 1, depends_on=ready_dep),
            network={"enableDNSHostnames": False},
        ),
    )
    try:
        _held_while(sim_pods, name, {f"{name}-workers-0"}, f"{name}-driver-0", True)

        # Both grow in one update: the new workers wait for the new driver, which waits
        # for a node.
        _patch_replicas(sim_pods, name, {0: 2, 1: 3})
        eventually_sync(lambda: f"{name}-driver-1" in live_jobs(sim_pods, name), within=30)
        new_workers = {f"{name}-workers-1", f"{name}-workers-2"}
        _held_while(sim_pods, name, new_workers, f"{name}-driver-1", False)
        gate_nodes()
        _held_while(sim_pods, name, new_workers, f"{name}-driver-1", True)

        # Grow again, then shrink the dependency back before its new Job got a node: the
        # scale-down alone lets the held worker start.
        _patch_replicas(sim_pods, name, {0: 3, 1: 4})
        eventually_sync(lambda: f"{name}-driver-2" in live_jobs(sim_pods, name), within=30)
        _held_while(sim_pods, name, {f"{name}-workers-3"}, f"{name}-driver-2", False)
        _patch_replicas(sim_pods, name, {0: 2})
        eventually_sync(
            lambda: live_jobs(sim_pods, name),
            lambda jobs: (
                set(jobs)
                == {
                    f"{name}-driver-0",
                    f"{name}-driver-1",
                    *(f"{name}-workers-{i}" for i in range(4)),
                }
            ),
            within=60,
            what="driver-2 gone, workers-3 created",
        )
        assert _conditions(sim_pods, name).get(c.CONDITION_FAILED) != "True"
    finally:
        _delete(sim_pods, name)


def test_in_order_startup_runs_again_for_a_scale_up(
    sim_pods: SimProcess, elastic_harness: HarnessProcess, gate_nodes: Callable[[], None]
) -> None:
    name = "el-order"
    gate_nodes()
    kubectl_apply(
        sim_pods,
        builders.jobset(
            name,
            _gate_rjob("first", 1),
            _plain_rjob("second", 1),
            startupPolicy={"startupPolicyOrder": c.STARTUP_IN_ORDER},
            network={"enableDNSHostnames": False},
        ),
    )
    completed = c.CONDITION_STARTUP_POLICY_COMPLETED
    in_progress = c.CONDITION_STARTUP_POLICY_IN_PROGRESS
    try:
        _held_while(sim_pods, name, {f"{name}-second-0"}, f"{name}-first-0", True)
        eventually_sync(
            lambda: _conditions(sim_pods, name),
            lambda conds: conds.get(completed) == "True",
            within=30,
            what="StartupPolicyCompleted",
        )

        # Growing the first ReplicatedJob starts the ordered startup again: the second's
        # new Job waits until the first's new Job is ready.
        _patch_replicas(sim_pods, name, {0: 2, 1: 2})
        eventually_sync(lambda: f"{name}-first-1" in live_jobs(sim_pods, name), within=30)
        _held_while(sim_pods, name, {f"{name}-second-1"}, f"{name}-first-1", False)
        conds = _conditions(sim_pods, name)
        assert conds.get(in_progress) == "True" and conds.get(completed) == "False", conds
        gate_nodes()
        _held_while(sim_pods, name, {f"{name}-second-1"}, f"{name}-first-1", True)
        eventually_sync(
            lambda: _conditions(sim_pods, name),
            lambda conds: conds.get(completed) == "True" and conds.get(in_progress) == "False",
            within=30,
            what="StartupPolicyCompleted again",
        )

        # Growing only the last ReplicatedJob has nothing to wait for.
        _patch_replicas(sim_pods, name, {1: 3})
        eventually_sync(lambda: f"{name}-second-2" in live_jobs(sim_pods, name), within=30)
        eventually_sync(
            lambda: _conditions(sim_pods, name),
            lambda conds: (
                conds.get(completed) == "True" and conds.get(c.CONDITION_FAILED) != "True"
            ),
            within=30,
            what="StartupPolicyCompleted after the last ReplicatedJob grew",
        )
    finally:
        _delete(sim_pods, name)
