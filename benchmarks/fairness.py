"""Fairness between tenants at the shipped defaults.

On a fresh `jobset sim --sim-level none` with `jobset controller` at its defaults (QPS 500,
burst 500, 5 workers): `LARGE_COUNT` JobSets of N Jobs in namespace `bench` are created; once
their creation is under way (`UNDER_WAY` Jobs exist, a quarter of N if fewer), a 3-Job JobSet is created in namespace
`tenant-b`. Measured from the harness's watches: seconds from the small JobSet's creation to
its 3 Jobs, and how many Jobs the large ones had created meanwhile. The run stops there (the
large creations are not waited for).

Two cases: one large JobSet (a worker is free for the small one: only the client's token
bucket is shared, served in order) and `--concurrency` + 1 large ones (every worker busy: the
small JobSet waits for a pass to give its worker up, `jobset.controllers.fairshare`).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from benchmarks.harness import Options, start_controller, wait_idle, wait_ready
from benchmarks.rate import fresh_sim
from benchmarks.workload import FINISH, JOBSETS, NAMESPACE, jobset
from jobset.runtime.client import JOBS, NAMESPACES, Client, Object
from jobset.runtime.informer import FuncHandler, Informer

SMALL_NS = "tenant-b"
SMALL_JOBS = 3
UNDER_WAY = 1000
GOAL_SECONDS = 1.0


class Seen:
    def __init__(self, client: Client, namespace: str) -> None:
        self.informer = Informer(
            client,
            JOBS,
            namespace=namespace,
            transform=lambda j: {
                "metadata": {k: j["metadata"].get(k) for k in ("name", "namespace", "uid")}
            },
        )
        self.times: list[float] = []
        self.informer.add_event_handler(
            FuncHandler(add=lambda _j: self.times.append(time.monotonic()))
        )

    async def start(self) -> None:
        self.informer.start()
        await self.informer.wait_for_sync(60)


async def _until(pred: Any, within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not pred():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {within:.0f}s waiting for {what}")
        await asyncio.sleep(0.01)


async def one_case(n: int, large_count: int, opts: Options) -> dict[str, Any]:
    async with fresh_sim("fairness") as env:
        await env.client.create(NAMESPACES, {"metadata": {"name": SMALL_NS}})
        big, small = Seen(env.client, NAMESPACE), Seen(env.client, SMALL_NS)
        await big.start()
        await small.start()
        proc = start_controller(env.sim, env.tmp, opts)
        try:
            await wait_ready(proc)
            await wait_idle(proc, quiet=0.5)
            for i in range(large_count):
                await env.client.create(JOBSETS, jobset(f"large{i}", n, command=FINISH))
            under_way = min(UNDER_WAY, n // 4)
            await _until(lambda: len(big.times) >= under_way, opts.timeout, "large under way")
            small_js: Object = jobset("small", SMALL_JOBS, command=FINISH)
            small_js["metadata"]["namespace"] = SMALL_NS
            before = len(big.times)
            t0 = time.monotonic()
            await env.client.create(JOBSETS, small_js)
            await _until(lambda: len(small.times) >= SMALL_JOBS, opts.timeout, "small Jobs")
            done = sorted(small.times)[SMALL_JOBS - 1]
            during = sum(1 for t in big.times if t <= done) - before
        finally:
            proc.stop()
            await big.informer.stop()
            await small.informer.stop()
    return {
        "large_jobsets": large_count,
        "jobs_per_large": n,
        "small_seconds": round(done - t0, 3),
        "large_jobs_before": before,
        "large_jobs_created_meanwhile": during,
    }


async def run(n: int, opts: Options) -> dict[str, Any]:
    """Both cases at the shipped defaults (`opts` gives only the concurrency and timeout)."""
    defaults = Options(concurrency=opts.concurrency, timeout=opts.timeout)
    cases = []
    for count in (1, defaults.concurrency + 1):
        try:
            cases.append(await one_case(n, count, defaults))
        except Exception as exc:
            cases.append({"large_jobsets": count, "jobs_per_large": n, "error": repr(exc)})
    return {"cases": cases, "goal_seconds": GOAL_SECONDS}


def one_line(d: dict[str, Any]) -> str:
    parts = []
    for case in d["cases"]:
        if "error" in case:
            parts.append(f"{case['large_jobsets']} large: failed ({case['error'][:150]})")
        else:
            parts.append(
                f"{case['large_jobsets']} x {case['jobs_per_large']} large: small JobSet's Jobs "
                f"in {case['small_seconds']:.2f}s ({case['large_jobs_created_meanwhile']} large "
                f"Jobs meanwhile)"
            )
    return "fairness: " + "; ".join(parts)
