"""The controller SIGKILLed at random moments with restarts and suspends in flight, and the
API server down for a while (an outage window, and a real `jobset sim --data-dir` restart):
it recovers by itself, readiness reports the outage, and every invariant still holds."""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path

import pytest

from jobset.controllers.crd import apply_crds
from jobset.resources import JOBSETS
from jobset.runtime.client import JOBS, Client
from kubesim.process import start_sim

from .conftest import ClusterFactory
from .harness import (
    KINDS,
    Controllers,
    Expected,
    create_retrying,
    eventually,
    free_port,
    make_namespace,
    outcomes,
    unexpected_exceptions,
    workload,
)


async def kill_loop(
    cluster_factory: ClusterFactory, controllers: Controllers, log: Path, kills: int, seed: int
) -> dict[str, float]:
    rng = random.Random(seed)
    async with cluster_factory() as (cluster, invariants):
        client = await Client.connect(cluster.kubeconfig, qps=100, burst=200)
        ns = "kills"
        await make_namespace(client, ns)
        expected: dict[str, Expected] = {}
        suspended: set[str] = set()
        done_kills = 0
        suspends = resumes = 0
        t0 = time.monotonic()
        try:
            while done_kills < kills:
                # Something new is always in flight: a JobSet per round, suspends and resumes.
                i = len(expected)
                kind = KINDS[i % len(KINDS)]
                js, exp = workload(f"{kind}-{i}", kind, ns, run_seconds=rng.uniform(2, 8))
                await create_retrying(client, js)
                expected[js["metadata"]["name"]] = exp
                oks = [n for n in expected if n.startswith("ok-")]
                if rng.random() < 0.5 and oks:
                    name = rng.choice(oks)
                    flag = name not in suspended
                    await client.patch(JOBSETS, name, {"spec": {"suspend": flag}}, ns)
                    if flag:
                        suspended.add(name)
                        suspends += 1
                    else:
                        suspended.discard(name)
                        resumes += 1
                proc = controllers.start(cluster.kubeconfig, log)
                await asyncio.sleep(rng.uniform(0.5, 4.0))
                proc.kill()
                done_kills += 1
            for name in suspended:
                await client.patch(JOBSETS, name, {"spec": {"suspend": False}}, ns)
                resumes += 1
            final_ctrl = controllers.start(cluster.kubeconfig, log)
            final = await eventually(
                lambda: outcomes(client, ns),
                lambda got: len(got) == len(expected) and all(v is not None for v in got.values()),
                within=180 + 4 * len(expected),
                what="every JobSet to finish after the kills",
            )
            assert final == expected
            assert invariants.violations == []
            assert sorted(len(a) for a in invariants.attempts.values()) == sorted(
                e.restarts + 1 for e in expected.values()
            )
            assert final_ctrl.proc.poll() is None
            assert unexpected_exceptions(final_ctrl.text()) == []
            figures = {
                "kills": float(done_kills),
                "jobsets": float(len(expected)),
                "suspends": float(suspends),
                "resumes": float(resumes),
                "job_events_checked": float(invariants.job_events),
                "seconds": time.monotonic() - t0,
            }
            print("kill figures:", figures)
            return figures
        finally:
            await client.close()


@pytest.mark.soak  # the 60-SIGKILL soak covers it; test_steady_and_crash kills in make test
@pytest.mark.timeout(400)
async def test_sigkill_loop_keeps_every_invariant(
    cluster_factory: ClusterFactory, controllers: Controllers, tmp_path: Path
) -> None:
    await kill_loop(cluster_factory, controllers, tmp_path / "controller.log", kills=10, seed=3)


@pytest.mark.soak
@pytest.mark.timeout(1500)
async def test_soak_60_sigkills_keep_every_invariant(
    cluster_factory: ClusterFactory, controllers: Controllers, tmp_path: Path
) -> None:
    await kill_loop(cluster_factory, controllers, tmp_path / "controller.log", kills=60, seed=4)


OUTAGE = """\
seed: 1
outage: {{start: {start}, duration: {duration}, mode: {mode}}}
"""


async def outage(
    cluster_factory: ClusterFactory,
    controllers: Controllers,
    log: Path,
    duration: float,
    mode: str = "error",
) -> dict[str, float]:
    start = 25.0
    async with cluster_factory(OUTAGE.format(start=start, duration=duration, mode=mode)) as (
        cluster,
        invariants,
    ):
        armed = cluster.started_at
        client = await Client.connect(cluster.kubeconfig, qps=100, burst=200)
        # The webhook's certificate Secret lives there; /readyz waits for the webhook.
        await make_namespace(client, "jobset-system")
        ctrl = controllers.start(cluster.kubeconfig, log, health=True)
        try:
            ns = "outage"
            await make_namespace(client, ns)
            expected: dict[str, Expected] = {}
            for i, kind in enumerate(KINDS * 2):
                # The "ok" ones run through the outage and finish after it.
                js, exp = workload(f"{kind}-{i}", kind, ns, run_seconds=duration + 10)
                await create_retrying(client, js)
                expected[js["metadata"]["name"]] = exp
            await eventually(
                lambda: asyncio.to_thread(ctrl.readyz),
                lambda r: r[0] == 200,
                within=max(5.0, start - (time.monotonic() - armed) - 1),
                what="the controller to be ready before the outage",
            )
            # During the outage readiness must go false and say why.
            unready: tuple[int, str] | None = None
            while time.monotonic() - armed < start + duration:
                status, body = await asyncio.to_thread(ctrl.readyz)
                if status != 200 and unready is None:
                    unready = (status, body)
                    unready_after = time.monotonic() - armed - start
                await asyncio.sleep(0.5)
            assert unready is not None, "readiness never reported the outage"
            assert "[-]apiserver failed" in unready[1], unready
            back = time.monotonic()
            await eventually(
                lambda: asyncio.to_thread(ctrl.readyz),
                lambda r: r[0] == 200,
                within=60,
                what="readiness after the outage",
            )
            ready_again = time.monotonic() - back
            final = await eventually(
                lambda: outcomes(client, ns),
                lambda got: len(got) == len(expected) and all(v is not None for v in got.values()),
                within=180,
                what="every JobSet to finish after the outage",
            )
            assert final == expected
            assert invariants.violations == []
            assert ctrl.proc.poll() is None, "the controller exited during the outage"
            assert unexpected_exceptions(ctrl.text()) == []
            figures = {
                "outage_seconds": duration,
                "unready_after_s": unready_after,
                "ready_again_after_s": ready_again,
                **{k: float(v) for k, v in cluster.http.faults.counts.items()},
            }
            print("outage figures:", figures)
            return figures
        finally:
            await client.close()


@pytest.mark.soak  # the 30 s outage soak covers it
@pytest.mark.timeout(300)
async def test_api_outage_is_reported_and_survived(
    cluster_factory: ClusterFactory, controllers: Controllers, tmp_path: Path
) -> None:
    await outage(cluster_factory, controllers, tmp_path / "controller.log", duration=10)


@pytest.mark.soak
@pytest.mark.timeout(600)
async def test_soak_30s_api_outage_with_connection_resets(
    cluster_factory: ClusterFactory, controllers: Controllers, tmp_path: Path
) -> None:
    await outage(cluster_factory, controllers, tmp_path / "controller.log", 30, mode="reset")


@pytest.mark.soak  # make test restarts the sim with --data-dir in the in-cluster chaos tier
@pytest.mark.timeout(300)
async def test_sim_restart_with_data_dir_is_survived(
    tmp_path: Path, controllers: Controllers
) -> None:
    """`jobset sim --data-dir` stopped and started again on the same port: the controller,
    which loaded its kubeconfig once, reconnects (same CA and token) and finishes the work."""
    port = free_port()
    data = tmp_path / "data"
    flags = ("--sim-level", "jobs", "--data-dir", str(data))
    sim = start_sim(tmp_path, *flags, port=port)
    ctrl = None
    client = None
    try:
        client = await Client.connect(str(sim.kubeconfig), qps=100, burst=200)
        await apply_crds(client)
        await make_namespace(client, "jobset-system")
        ctrl = controllers.start(sim.kubeconfig, tmp_path / "controller.log", health=True)
        ns = "restart"
        await make_namespace(client, ns)
        expected: dict[str, Expected] = {}
        for i, kind in enumerate(KINDS * 2):
            js, exp = workload(f"{kind}-{i}", kind, ns, run_seconds=20)
            await create_retrying(client, js)
            expected[js["metadata"]["name"]] = exp
        await eventually(lambda: asyncio.to_thread(ctrl.readyz), lambda r: r[0] == 200, 60, "ready")
        await eventually(
            lambda: client.list(JOBS, ns),
            lambda out: len(out["items"]) >= 6,
            60,
            "Jobs before the restart",
        )
        kubeconfig_before = sim.kubeconfig.read_text()
        sim.stop()
        _status, body = await eventually(
            lambda: asyncio.to_thread(ctrl.readyz),
            lambda r: r[0] != 200,
            within=30,
            what="readiness to report the API server gone",
        )
        assert "[-]apiserver failed" in body, body
        await asyncio.sleep(2)
        sim = start_sim(tmp_path, *flags, port=port)
        assert sim.kubeconfig.read_text() == kubeconfig_before
        await eventually(
            lambda: asyncio.to_thread(ctrl.readyz), lambda r: r[0] == 200, 60, "ready again"
        )
        final = await eventually(
            lambda: outcomes(client, ns),
            lambda got: len(got) == len(expected) and all(v is not None for v in got.values()),
            within=180,
            what="every JobSet to finish after the restart",
        )
        assert final == expected
        assert ctrl.proc.poll() is None
        assert unexpected_exceptions(ctrl.text()) == []
    finally:
        if client is not None:
            await client.close()
        sim.stop()
