"""JobSets run to their end states through a misbehaving API server.

5-20 % of requests are answered 500, 503 or 429 (with Retry-After) or delayed up to 2 s,
watch streams are cut every few events and resumed watches get 410 Gone, all from a seeded
plan. Every JobSet must end exactly as the JobSet API says it ends without faults (same
terminal condition, reason and restart count), and the store's own change stream is checked
all along: no Job is ever created twice, no JobSet ever has more Jobs than replicas, restart
counts only step by one. A missed completion, failure or deletion (the restarts wait on
the old Jobs' deletions) would leave a JobSet unfinished.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from jobset.runtime.client import Client

from .conftest import ClusterFactory
from .harness import (
    KINDS,
    Controllers,
    Expected,
    create_retrying,
    eventually,
    make_namespace,
    outcomes,
    unexpected_exceptions,
    workload,
)

FAULTS = """\
seed: {seed}
rules:
  - name: internal-errors
    error: {{code: 500, probability: 0.04}}
  - name: unavailable
    error: {{code: 503, probability: 0.04, retryAfter: 1}}
  - name: throttled
    error: {{code: 429, probability: 0.04, retryAfter: 1}}
  - name: slow
    latency: {{min: 0.0, max: 2.0, probability: 0.05}}
  - name: short-watches
    match: {{verb: watch}}
    watchCut: {{perEventProbability: 0.2}}
  - name: gone
    match: {{verb: watch}}
    gone: {{probability: 0.15}}
"""


async def run_jobsets_through_faults(
    cluster_factory: ClusterFactory, controllers: Controllers, tmp_path_log: str, n: int, seed: int
) -> dict[str, float]:
    async with cluster_factory(FAULTS.format(seed=seed)) as (cluster, invariants):
        ctrl = controllers.start(cluster.kubeconfig, Path(tmp_path_log))
        client = await Client.connect(cluster.kubeconfig, qps=100, burst=200)
        try:
            ns = "faults"
            for _ in range(20):
                try:
                    await make_namespace(client, ns)
                    break
                except Exception:
                    await asyncio.sleep(0.1)
            expected: dict[str, Expected] = {}
            t0 = time.monotonic()
            for i in range(n):
                kind = KINDS[i % len(KINDS)]
                js, exp = workload(f"{kind}-{i}", kind, ns)
                await create_retrying(client, js)
                expected[js["metadata"]["name"]] = exp
            final = await eventually(
                lambda: outcomes(client, ns),
                lambda got: len(got) == n and all(v is not None for v in got.values()),
                within=120 + 6 * n,
                what=f"{n} JobSets to finish",
            )
            elapsed = time.monotonic() - t0
            assert final == expected
            assert invariants.violations == []
            # Each JobSet ran exactly the restart attempts its final count says: none twice
            # (checked above), none skipped, none extra.
            restart_attempts = sorted(len(a) for a in invariants.attempts.values())
            assert restart_attempts == sorted(e.restarts + 1 for e in expected.values())
            assert ctrl.proc.poll() is None, ctrl.text()[-3000:]
            assert unexpected_exceptions(ctrl.text()) == []
            counts = cluster.http.faults.counts
            requests = sum(cluster.http.requests.values())
            errors = sum(v for k, v in counts.items() if k.startswith("error_"))
            for kind in ("error_500", "error_503", "error_429", "latency", "watch_cut", "gone"):
                assert counts.get(kind, 0) > 0, (kind, counts)
            figures = {
                "jobsets": n,
                "requests": requests,
                "error_share": errors / requests,
                "faulted_share": (errors + counts.get("latency", 0)) / requests,
                "job_events_checked": invariants.job_events,
                "seconds": elapsed,
                **{k: float(v) for k, v in counts.items()},
            }
            print("api-fault figures:", figures)
            assert 0.05 <= figures["faulted_share"] <= 0.25, figures
            return figures
        finally:
            await client.close()
            ctrl.kill()


@pytest.mark.timeout(400)
async def test_jobsets_end_exactly_as_without_faults(
    cluster_factory: ClusterFactory, controllers: Controllers, tmp_path: object
) -> None:
    await run_jobsets_through_faults(
        cluster_factory, controllers, f"{tmp_path}/controller.log", n=9, seed=11
    )


@pytest.mark.soak
@pytest.mark.timeout(1200)
async def test_soak_50_jobsets_end_exactly_as_without_faults(
    cluster_factory: ClusterFactory, controllers: Controllers, tmp_path: object
) -> None:
    await run_jobsets_through_faults(
        cluster_factory, controllers, f"{tmp_path}/controller.log", n=51, seed=12
    )
