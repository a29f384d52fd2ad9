"""Unthrottled Job creation: the controller against an independent minimal client, and the
simulator's own limit.

With the client rate limiter on, both sides of `benchmarks.scenarios` are held at 500 QPS
and their ratio measures the limiter. Here nothing throttles: per size N, three phases run
one after the other, each on a fresh `jobset sim --sim-level none` (nothing advances Jobs,
so the only work is creating them):

- `controller`: `jobset controller --qps 0` over one JobSet of N single-pod Jobs;
- `minimal`: `benchmarks/minimal_client.py` (plain aiohttp, no project code) POSTs the
  controller's own Job bodies for that JobSet - planned by the controller's planner and
  encoded as the controller sends them (`PendingJobs.encoded`, checked byte for byte
  against each Job built and encoded in full); the sim's byte count checks they are the
  same size - at the controller's parallelism (50 in flight);
- `limit`: `LIMIT_CLIENTS` minimal clients in parallel processes, N/`LIMIT_CLIENTS` Jobs
  each: what the simulated API server can take at most on this machine.

Every rate comes from the API server's own request record (`/debug/requests`: first and
last arrival of `create jobs` per client), never from polling: (N - 1) / (last - first).
CPU per Job is the client process's CPU over its work divided by N: the controller's from
just before the JobSet is created until it is idle again (so it includes planning, building
bodies, its watch of the Jobs it creates and its status write), the minimal client's as it
reports it from the go signal to its last answer. Which of controller and minimal goes
first alternates from size to size.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import psutil

from benchmarks.harness import (
    ROOT,
    Options,
    prepared_client,
    start_controller,
    wait_idle,
    wait_ready,
)
from benchmarks.workload import CONTROLLER_AGENT, FINISH, JOBSETS, NAMESPACE, jobset
from jobset.controllers.plan import PlanInput, plan
from jobset.runtime.cache import strip_managed_fields
from jobset.runtime.client import Client
from kubesim.process import SimProcess, start_sim

MINIMAL = ROOT / "benchmarks" / "minimal_client.py"
MINIMAL_AGENT = "jobset-bench-minimal"
LIMIT_CLIENTS = 3
PARALLELISM = 50
CREATE = "create jobs"


@dataclass
class Env:
    sim: SimProcess
    client: Client
    tmp: Path
    sim_ps: psutil.Process


@contextlib.asynccontextmanager
async def fresh_sim(label: str) -> AsyncIterator[Env]:
    tmp = Path(tempfile.mkdtemp(prefix=f"bench-rate-{label}-"))
    sim = start_sim(tmp, "--sim-level", "none")
    client: Client | None = None
    try:
        client = await prepared_client(sim)
        yield Env(sim, client, tmp, psutil.Process(sim.proc.pid))
    finally:
        if client is not None:
            await client.close()
        sim.stop()
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


async def record(client: Client) -> dict[str, dict[str, dict[str, Any]]]:
    """The sim's request record: {user agent: {"verb resource": row}}."""
    body = await client.request("GET", "/debug/requests")
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for r in body["byUserAgent"]:
        out.setdefault(r["userAgent"], {})[f"{r['verb']} {r['resource']}"] = r
    return out


def _cpu(ps: psutil.Process) -> float:
    t = ps.cpu_times()
    return float(t.user + t.system)


async def controller_bodies(client: Client, name: str, n: int) -> list[bytes]:
    """The Job bodies the controller sends for JobSet `name` (created here, read back as the
    controller's cache holds it, planned by its planner, encoded as it encodes them: from
    its per-ReplicatedJob body template, checked here against each Job built and encoded
    in full)."""
    await client.create(JOBSETS, jobset(name, n, command=FINISH))
    js = strip_managed_fields(await client.get(JOBSETS, name, NAMESPACE))
    p = plan(PlanInput(jobset=js, jobs=[], now=datetime.now(UTC)))
    bodies = [job.body for job in p.create_jobs.encoded() if job.body is not None]
    if bodies != [orjson.dumps(dict(job)) for job in p.create_jobs]:
        raise AssertionError("the controller's encoded Job bodies differ from its Jobs")
    return bodies


def _span(rows: list[dict[str, Any]], n: int) -> dict[str, Any]:
    first = min(r["first"] for r in rows)
    last = max(r["last"] for r in rows)
    count = sum(int(r["count"]) for r in rows)
    return {
        "creates": count,
        "first": first,
        "last": last,
        "create_seconds": round(last - first, 3),
        "jobs_per_second": round((count - 1) / (last - first), 1) if last > first else None,
        "bytes_per_job": round(sum(int(r["bytes"]) for r in rows) / max(1, count), 1),
    }


async def controller_side(n: int, opts: Options) -> dict[str, Any]:
    async with fresh_sim("controller") as env:
        unthrottled = Options(
            qps=0, burst=0, concurrency=opts.concurrency, parallelism=opts.parallelism
        )
        proc = start_controller(env.sim, env.tmp, unthrottled)
        try:
            await wait_ready(proc)
            await wait_idle(proc, quiet=0.5)
            cpu0, sim0 = proc.cpu(), _cpu(env.sim_ps)
            t0 = time.monotonic()
            await env.client.create(JOBSETS, jobset("rate", n, command=FINISH))
            deadline = t0 + opts.timeout
            while True:
                rows = (await record(env.client)).get(CONTROLLER_AGENT, {})
                if int(rows.get(CREATE, {}).get("count", 0)) >= n:
                    break
                if time.monotonic() > deadline or not proc.alive():
                    raise TimeoutError(f"controller created too few Jobs:\n{proc.tail()}")
                await asyncio.sleep(0.2)
            await wait_idle(proc)
            cpu, sim_cpu = proc.cpu() - cpu0, _cpu(env.sim_ps) - sim0
            rows = (await record(env.client))[CONTROLLER_AGENT]
        finally:
            proc.stop()
    out = _span([rows[CREATE]], n)
    out["jobset_to_last_create_s"] = round(out.pop("last") - t0, 3)
    out["jobset_to_first_create_s"] = round(out.pop("first") - t0, 3)
    return {
        **out,
        "cpu_seconds": round(cpu, 3),
        "cpu_ms_per_job": round(1000 * cpu / n, 4),
        "sim_cpu_seconds": round(sim_cpu, 3),
        "requests": {k: int(v["count"]) for k, v in sorted(rows.items())},
    }


async def minimal_side(n: int, clients: int, opts: Options) -> dict[str, Any]:
    """`clients` minimal-client processes sharing N Jobs, started on one go signal."""
    async with fresh_sim(f"minimal{clients}") as env:
        bodies = await controller_bodies(env.client, "rate", n)
        procs = []
        for i in range(clients):
            part = env.tmp / f"bodies-{i}.jsonl"
            part.write_bytes(b"\n".join(bodies[i::clients]) + b"\n")
            procs.append(
                await asyncio.create_subprocess_exec(
                    sys.executable,
                    str(MINIMAL),
                    "--kubeconfig",
                    str(env.sim.kubeconfig),
                    "--bodies",
                    str(part),
                    "--namespace",
                    NAMESPACE,
                    "--parallelism",
                    str(opts.parallelism if clients == 1 else PARALLELISM),
                    "--user-agent",
                    f"{MINIMAL_AGENT}-{i}/0.1 (plain aiohttp)",
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    cwd=ROOT,
                )
            )
        try:
            for p in procs:
                assert p.stdout is not None
                line = await asyncio.wait_for(p.stdout.readline(), 60)
                if not line.startswith(b"minimal ready"):
                    raise RuntimeError(f"minimal client not ready: {line!r}")
            sim0 = _cpu(env.sim_ps)
            for p in procs:
                assert p.stdin is not None
                p.stdin.write(b"go\n")
                await p.stdin.drain()
            cpus, errors = [], 0
            for p in procs:
                assert p.stdout is not None
                line = await asyncio.wait_for(p.stdout.readline(), opts.timeout)
                parts = line.split()
                if parts[:2] != [b"minimal", b"done"]:
                    raise RuntimeError(f"minimal client failed: {line!r}")
                cpus.append(float(parts[2]))
                errors += int(parts[3])
            sim_cpu = _cpu(env.sim_ps) - sim0
            rec = await record(env.client)
        finally:
            for p in procs:
                if p.returncode is None:
                    with contextlib.suppress(ProcessLookupError):
                        p.kill()
                await p.wait()
    rows = [r[CREATE] for agent, r in rec.items() if agent.startswith(MINIMAL_AGENT)]
    out = _span(rows, n)
    del out["first"], out["last"]
    if errors or out["creates"] != n:
        raise RuntimeError(f"minimal clients: {errors} errors, {out['creates']} of {n} created")
    cpu = sum(cpus)
    return {
        **out,
        "clients": clients,
        "cpu_seconds": round(cpu, 3),
        "cpu_ms_per_job": round(1000 * cpu / n, 4),
        "sim_cpu_seconds": round(sim_cpu, 3),
    }


def ratios(entry: dict[str, Any]) -> dict[str, float]:
    c, m, lim = entry.get("controller"), entry.get("minimal"), entry.get("limit")
    out: dict[str, float] = {}
    ok = [isinstance(x, dict) and "error" not in x for x in (c, m, lim)]
    if ok[0] and ok[1]:
        assert c is not None and m is not None
        out["rate_controller_over_minimal"] = round(c["jobs_per_second"] / m["jobs_per_second"], 3)
        out["cpu_per_job_controller_over_minimal"] = round(
            c["cpu_ms_per_job"] / m["cpu_ms_per_job"], 3
        )
        out["bytes_per_job_controller_over_minimal"] = round(
            c["bytes_per_job"] / m["bytes_per_job"], 4
        )
    # The limit: the best the sim took from minimal clients, one process or several (on a
    # loaded 2-core machine several client processes can take more CPU than they add).
    limits = [x["jobs_per_second"] for x, good in ((lim, ok[2]), (m, ok[1])) if good and x]
    if limits:
        best = max(limits)
        out["limit_jobs_per_second"] = best
        for side, r in (("controller", c), ("minimal", m)):
            if isinstance(r, dict) and "error" not in r:
                out[f"{side}_of_limit"] = round(r["jobs_per_second"] / best, 3)
    return out


async def run_size(n: int, opts: Options, first: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"jobs": n, "order": []}
    order = ("controller", "minimal") if first == "controller" else ("minimal", "controller")
    for side in (*order, "limit"):
        entry["order"].append(side)
        try:
            if side == "controller":
                entry[side] = await controller_side(n, opts)
            else:
                entry[side] = await minimal_side(n, 1 if side == "minimal" else LIMIT_CLIENTS, opts)
        except Exception as exc:  # reported, and the goal shows it not met
            entry[side] = {"error": repr(exc)}
    entry["ratio"] = ratios(entry)
    return entry


def one_line(e: dict[str, Any]) -> str:
    r = e.get("ratio", {})

    def side(k: str) -> str:
        s = e.get(k) or {}
        if "error" in s:
            return f"{k} failed ({s['error'][:120]})"
        return f"{k} {s.get('jobs_per_second', 0):.0f} Jobs/s, {s.get('cpu_ms_per_job', 0):.3f} ms CPU/Job"

    return (
        f"rate {e['jobs']}: {side('controller')}; {side('minimal')}; {side('limit')}; "
        f"rate ratio {r.get('rate_controller_over_minimal', '-')}, "
        f"CPU/Job ratio {r.get('cpu_per_job_controller_over_minimal', '-')}"
    )
