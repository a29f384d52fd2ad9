"""The scale scenarios, each run once per side (baseline, controller) by `benchmarks.run`.

Every scenario returns `seconds` (named spans between events seen on the harness's watches),
`jobs_per_second` for its headline span, and the measured process's CPU, RSS and requests
over the scenario's window (see `harness.Window`). The window closes once the measured
process is idle again, so work an event leaves behind (a last status write) is counted.

- `wide`: one JobSet of N Jobs (`sleep 1s`): time to all Jobs created, to Completed.
- `many`: N/4 JobSets of 4 Jobs, created by the harness 16 at a time: time to all Jobs
  created, to all JobSets Completed. Then `steady-done`: the measured process is
  restarted over those N finished Jobs.
- `restart-recreate`, `restart-blocking`: one JobSet of N running Jobs (`sleep infinity`)
  with that restart strategy; one Job fails (the harness writes its Failed condition, as the
  Job controller would): time until all N are deleted and all N recreated. Before the
  failure, in `restart-recreate`, `steady`: the measured process is restarted over the N
  running Jobs: time until synced (every JobSet reconciled once, queue empty) and writes
  issued (the setup's Jobs are reused, so steady costs no extra creations).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from benchmarks.harness import (
    Phase,
    Window,
    diff_counts,
    request_counts,
    wait_idle,
    wait_synced,
    writes,
)
from benchmarks.workload import FINISH, JOBSETS, NAMESPACE, RJOB, RUN_FOREVER, jobset
from jobset.api import constants as c
from jobset.runtime.client import JOBS

Status = Callable[[str], None]
Scenario = Callable[[Phase, int, Status], Awaitable[dict[str, Any]]]

SCENARIOS = ("wide", "many", "restart-recreate", "restart-blocking")
JOBS_PER_JOBSET_MANY = 4


def _r(x: float) -> float:
    return round(x, 3)


async def wide(p: Phase, n: int, status: Status) -> dict[str, Any]:
    obs, timeout = p.observer, p.opts.timeout
    w = await Window(p).open()
    status("creating Jobs")
    t0 = time.monotonic()
    await p.client.create(JOBSETS, jobset("wide", n, command=FINISH))
    await obs.until("all Jobs created", lambda: len(obs.added[0]) >= n, timeout)
    created = obs.nth_added(0, n) - t0
    status("running to Completed")
    await obs.until("JobSet Completed", lambda: len(obs.completed_jobsets) >= 1, timeout)
    done = min(obs.completed_jobsets.values()) - t0
    m = await w.close()
    return {
        "seconds": {
            "first_job": _r(obs.nth_added(0, 1) - t0),
            "all_created": _r(created),
            "completed": _r(done),
        },
        "jobs_per_second": round(n / created, 1),
        **m,
    }


async def many(p: Phase, n: int, status: Status) -> dict[str, Any]:
    obs, timeout = p.observer, p.opts.timeout
    count = max(1, n // JOBS_PER_JOBSET_MANY)
    jobs = count * JOBS_PER_JOBSET_MANY
    w = await Window(p).open()
    status(f"creating {count} JobSets")
    t0 = time.monotonic()
    sem = asyncio.Semaphore(16)

    async def submit(i: int) -> None:
        async with sem:
            await p.client.create(
                JOBSETS, jobset(f"m{i:05d}", JOBS_PER_JOBSET_MANY, command=FINISH)
            )

    await asyncio.gather(*(submit(i) for i in range(count)))
    submitted = time.monotonic() - t0
    await obs.until("all Jobs created", lambda: len(obs.added[0]) >= jobs, timeout)
    created = obs.nth_added(0, jobs) - t0
    status("running to Completed")
    await obs.until("all JobSets Completed", lambda: len(obs.completed_jobsets) >= count, timeout)
    done = max(obs.completed_jobsets.values()) - t0
    m = await w.close()
    result = {
        "seconds": {
            "jobsets_submitted": _r(submitted),
            "first_job": _r(obs.nth_added(0, 1) - t0),
            "all_created": _r(created),
            "completed": _r(done),
        },
        "jobs_per_second": round(jobs / created, 1),
        **m,
    }
    status("restarting over finished Jobs")
    result["steady"] = await steady(p, jobsets=count, jobs=jobs)
    return result


def _failed_status(job: dict[str, Any]) -> dict[str, Any]:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "startTime": (job.get("status") or {}).get("startTime") or now,
        "active": 0,
        "ready": 0,
        "failed": 1,
        "conditions": [
            {"type": "FailureTarget", "status": "True", "lastTransitionTime": now},
            {
                "type": "Failed",
                "status": "True",
                "reason": "BackoffLimitExceeded",
                "message": "Job has reached the specified backoff limit",
                "lastTransitionTime": now,
            },
        ],
    }


async def _restart_storm(
    p: Phase, n: int, status: Status, strategy: str, *, with_steady: bool = False
) -> dict[str, Any]:
    obs, timeout = p.observer, p.opts.timeout
    status("creating Jobs (setup)")
    await p.client.create(
        JOBSETS, jobset("storm", n, command=RUN_FOREVER, restart_strategy=strategy)
    )
    await obs.until("all Jobs running", lambda: len(obs.ready[0]) >= n, timeout)
    steady_result = None
    if with_steady:
        status("restarting over running Jobs")
        steady_result = await steady(p, jobsets=1, jobs=n)
    await wait_idle(p.proc)
    victim = await p.client.get(JOBS, f"storm-{RJOB}-{n // 2}", NAMESPACE)
    w = await Window(p).open()
    status("failing one Job, recreating all")
    t0 = time.monotonic()
    await p.client.patch(
        JOBS,
        victim["metadata"]["name"],
        {"status": _failed_status(victim)},
        NAMESPACE,
        subresource="status",
    )
    await obs.until("all Jobs deleted", lambda: len(obs.deleted[0]) >= n, timeout)
    await obs.until("all Jobs recreated", lambda: len(obs.added[1]) >= n, timeout)
    deleted = sorted(obs.deleted[0])[n - 1] - t0
    recreated = obs.nth_added(1, n) - t0
    m = await w.close()
    return {
        "seconds": {
            "first_deleted": _r(min(obs.deleted[0]) - t0),
            "all_deleted": _r(deleted),
            "first_recreated": _r(obs.nth_added(1, 1) - t0),
            "all_recreated": _r(recreated),
        },
        "jobs_per_second": round(n / recreated, 1),
        **m,
        **({"steady": steady_result} if steady_result is not None else {}),
    }


async def restart_recreate(p: Phase, n: int, status: Status) -> dict[str, Any]:
    return await _restart_storm(p, n, status, c.RESTART_STRATEGY_RECREATE, with_steady=True)


async def restart_blocking(p: Phase, n: int, status: Status) -> dict[str, Any]:
    return await _restart_storm(p, n, status, c.RESTART_STRATEGY_BLOCKING_RECREATE)


async def steady(p: Phase, *, jobsets: int, jobs: int) -> dict[str, Any]:
    """Restart the measured process over what exists: time to synced, writes issued."""
    await wait_idle(p.proc)
    p.proc.stop()
    before = await request_counts(p.client, p.proc.agent)
    t0 = time.monotonic()
    proc = p.spawn()
    p.proc = proc
    synced = await wait_synced(proc, jobsets, p.opts.timeout)
    await wait_idle(proc)
    counts = diff_counts(await request_counts(p.client, proc.agent), before)
    rss = proc.rss()
    idle_rss = p.extra.get("idle_rss_bytes", 0)
    return {
        "seconds": {"synced": _r(synced - t0)},
        "jobsets": jobsets,
        "jobs": jobs,
        "cpu_seconds": round(proc.cpu(), 3),
        "rss_synced_mib": round(rss / 2**20, 1),
        "rss_peak_mib": round(proc.peak_rss / 2**20, 1),
        "rss_bytes_per_job": round((rss - idle_rss) / max(1, jobs)) if idle_rss else None,
        "requests": counts,
        "writes": writes(counts),
    }


RUNNERS: dict[str, Scenario] = {
    "wide": wide,
    "many": many,
    "restart-recreate": restart_recreate,
    "restart-blocking": restart_blocking,
}
