"""Cost and crash safety: a converged JobSet costs no writes on resync; killing the
controller at arbitrary points never duplicates a Job nor double-counts a restart."""

from __future__ import annotations

import asyncio
import random
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobset.controllers.crd import apply_crds
from jobset.runtime.client import JOBS, NAMESPACES, Client
from kubesim.cluster import SimCluster, SimOptions
from kubesim.process import SimProcess, controller_command
from tests.eventually import eventually

from .conftest import running_controller
from .helpers import Env, has_condition, jobset, rjob

WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})


def _writes(cluster: SimCluster) -> dict[tuple[str, str], int]:
    return {k: v for k, v in cluster.http.requests.items() if k[0] in WRITE_VERBS}


async def test_steady_jobset_costs_zero_writes_on_resync(tmp_path: Path) -> None:
    cluster = SimCluster(SimOptions(kubeconfig=str(tmp_path / "kc"), sim_level="none"))
    await cluster.start()
    try:
        client = await Client.connect(str(tmp_path / "kc"))
        await apply_crds(client)
        sim = SimProcess(None, tmp_path / "kc", cluster.url, [])  # type: ignore[arg-type]
        async with running_controller(sim, resync_period=0.2) as (manager, controller):
            env = Env(client, "default", sim, controller)
            r = rjob("a", 2)
            r["template"]["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = [
                {"name": "ckpt", "mountPath": "/c"}
            ]
            claim = {
                "metadata": {"name": "ckpt"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
            await env.create(
                jobset("steady", r, rjob("b", 1), volumeClaimPolicies=[{"templates": [claim]}])
            )
            for job in await env.wait_jobs("steady", 3):
                await env.ready_job(job)
            await env.wait_jobset(
                "steady",
                lambda o: sum(s["ready"] for s in o["status"]["replicatedJobsStatus"]) == 3,
            )
            await asyncio.sleep(0.5)  # let the last events (status write echo) settle

            def reconciles() -> float:
                value = manager.metrics.registry.get_sample_value(
                    "controller_runtime_reconcile_total",
                    {"controller": "jobset", "result": "success"},
                )
                return value or 0.0

            before, count_before = _writes(cluster), reconciles()
            await asyncio.sleep(2.0)
            assert reconciles() - count_before >= 5, "resync did not reconcile the JobSet"
            assert _writes(cluster) == before
        await client.close()
    finally:
        await cluster.stop()


def _start_controller(sim: SimProcess) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        controller_command(
            sim.kubeconfig, "--metrics-port", "-1", "--health-port", "-1", "--log-level", "WARNING"
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@pytest.fixture
def killed_controllers() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()


async def test_killing_controller_never_duplicates_nor_double_counts(
    sim_none: SimProcess, killed_controllers: list[subprocess.Popen[bytes]]
) -> None:
    rng = random.Random(7)
    client = await Client.connect(str(sim_none.kubeconfig), qps=500, burst=1000)
    ns = "crash"
    await client.create(
        NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
    )
    env = Env(client, ns, sim_none, None)  # type: ignore[arg-type]
    try:
        await env.create(
            jobset("crash", rjob("a", 3), rjob("b", 3), failurePolicy={"maxRestarts": 5})
        )

        async def run_and_kill(seconds: float) -> None:
            proc = _start_controller(sim_none)
            killed_controllers.append(proc)
            await asyncio.sleep(seconds)
            proc.send_signal(signal.SIGKILL)
            await asyncio.to_thread(proc.wait)

        # Creation under repeated kills.
        while len(await env.jobs("crash")) < 6:
            await run_and_kill(rng.uniform(0.5, 2.0))
        jobs = await env.jobs("crash")
        await env.fail_job(jobs[0])
        # The restart (count, delete, recreate) under repeated kills.
        for _ in range(6):
            await run_and_kill(rng.uniform(0.5, 2.0))
        final = _start_controller(sim_none)
        killed_controllers.append(final)
        jobs = await eventually(
            lambda: env.jobs("crash"),
            lambda js: (
                len(js) == 6
                and all(
                    j["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] == "1"
                    and not j["metadata"].get("deletionTimestamp")
                    for j in js
                )
            ),
            within=30,
        )
        assert len({j["metadata"]["name"] for j in jobs}) == 6
        js = await env.get("crash")
        assert js["status"]["restarts"] == 1
        assert js["status"]["restartsCountTowardsMax"] == 1
        assert has_condition(js, "RestartingJobSet", "True", "DefaultFailurePolicy")
        all_jobs = await client.list(JOBS, ns)
        assert len(all_jobs["items"]) == 6
    finally:
        await client.close()
