"""Bytes per cached Job in the runtime's informer cache, by transform.

Starts `jobset sim --sim-level jobs` with the JobSet CRD, creates one JobSet of `--count`
running Jobs (`sleep infinity`) - its children exactly as the controller builds them
(`construct_job`: the 12 JobSet keys as labels and annotations on the Job and its pod
template, a controller ownerReference, the pod spec of the scale benchmarks), created
through the API so the server adds managedFields, defaults, selector labels and, once the
simulated Job controller ran them, a status - then, for each variant, runs a fresh
measuring process (so variants do not share a heap) that lists and watches the Jobs with
one `Informer` indexed by controller owner UID, as the controller's is, and reports:

- `deep_bytes_per_job`: bytes of the Python objects the cache holds (`deep_sizeof` over the
  store, shared objects - orjson-cached dict keys, values the transform shares - counted
  once);
- `rss_bytes_per_job`: growth of the process's resident memory from before the informer
  started until after it synced, divided by the count (includes the store's indexes,
  allocator slack and what parsing the list pages left behind; noisier).

Variants: `full` (no transform), `slim_job` (the runtime's generic `slim_job`: drops the
pod spec and managedFields) and `jobset_controller` (the JobSet controller's `jobcache.job_record`:
only what reconciles read, shared where Jobs agree).

    .venv/bin/python -m benchmarks.cache_memory --count 50000

Writes `benchmarks/results/cache_memory.json`.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

RESULTS = Path(__file__).parent / "results"
VARIANTS = ("full", "slim_job", "jobset_controller")


async def populate(kubeconfig: str, count: int, concurrency: int) -> tuple[float, float]:
    """Create the JobSet and its `count` running Jobs; (seconds to create, to all running)."""
    from benchmarks.workload import JOBSETS, NAMESPACE, RUN_FOREVER, jobset
    from jobset.api.defaulting import default_jobset
    from jobset.controllers.crd import apply_crds
    from jobset.controllers.jobs import construct_job
    from jobset.runtime.client import JOBS, NAMESPACES, Client

    client = await Client.connect(kubeconfig, qps=0, burst=0, pool_size=concurrency + 4)
    try:
        await apply_crds(client)
        await client.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
        js = default_jobset(await client.create(JOBSETS, jobset("mem", count, command=RUN_FOREVER)))
        rjob = js["spec"]["replicatedJobs"][0]
        next_index = iter(range(count))
        t0 = time.perf_counter()

        async def worker() -> None:
            for i in next_index:
                await client.create(JOBS, construct_job(js, rjob, i))

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        created = time.perf_counter() - t0
        while True:  # until the simulated Job controller has given every Job its status
            running, token = 0, ""
            while True:
                page = await client.list(JOBS, NAMESPACE, limit=5000, continue_token=token)
                running += sum(
                    1 for j in page["items"] if (j.get("status") or {}).get("ready") == 1
                )
                token = page["metadata"].get("continue") or ""
                if not token:
                    break
            if running >= count:
                return created, time.perf_counter() - t0
            await asyncio.sleep(5)
    finally:
        await client.close()


async def measure(kubeconfig: str, variant: str) -> dict[str, Any]:
    from benchmarks.workload import NAMESPACE
    from jobset.controllers import jobcache
    from jobset.runtime import transforms
    from jobset.runtime.cache import (
        BY_CONTROLLER_UID,
        deep_sizeof,
        index_by_controller_uid,
    )
    from jobset.runtime.client import JOBS, Client
    from jobset.runtime.informer import Informer

    transform = {
        "full": None,
        "slim_job": transforms.slim_job,
        "jobset_controller": jobcache.job_record,
    }[variant]
    proc = psutil.Process()
    client = await Client.connect(kubeconfig, qps=0, burst=0)
    informer = Informer(
        client,
        JOBS,
        namespace=NAMESPACE,
        transform=transform,
        indexers={BY_CONTROLLER_UID: index_by_controller_uid},
    )
    gc.collect()
    rss_before = proc.memory_info().rss
    t0 = time.perf_counter()
    informer.start()
    assert await informer.wait_for_sync(1800)
    sync_seconds = time.perf_counter() - t0
    gc.collect()
    rss_after = proc.memory_info().rss
    seen: set[int] = set()
    objects = [obj for _, obj in informer.store.items()]
    deep = sum(deep_sizeof(obj, seen) for obj in objects)
    one = deep_sizeof(objects[0]) if objects else 0
    await informer.stop()
    await client.close()
    n = len(objects)
    return {
        "variant": variant,
        "objects": n,
        "sync_seconds": round(sync_seconds, 2),
        "deep_bytes_total": deep,
        "deep_bytes_per_job": round(deep / max(1, n)),
        "deep_bytes_single_job": one,
        "rss_growth_mib": round((rss_after - rss_before) / 2**20, 1),
        "rss_bytes_per_job": round((rss_after - rss_before) / max(1, n)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=50_000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--measure", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    parser.add_argument("--output", default=str(RESULTS / "cache_memory.json"))
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(asyncio.run(measure(args.kubeconfig, args.measure))), flush=True)
        return 0

    from kubesim.process import start_sim

    tmp = Path(tempfile.mkdtemp(prefix="cache-memory-"))
    sim = start_sim(tmp, "--sim-level", "jobs")
    try:
        print(f"creating {args.count} Jobs ...", flush=True)
        create_seconds, running_seconds = asyncio.run(
            populate(str(sim.kubeconfig), args.count, args.concurrency)
        )
        print(
            f"created in {create_seconds:.0f}s, all running at {running_seconds:.0f}s", flush=True
        )
        variants = {}
        for variant in VARIANTS:
            out = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "benchmarks.cache_memory",
                    "--measure",
                    variant,
                    "--kubeconfig",
                    str(sim.kubeconfig),
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            variants[variant] = json.loads(out.stdout.strip().splitlines()[-1])
            print(json.dumps(variants[variant]), flush=True)
    finally:
        sim.stop()
    full = variants["full"]
    report = {
        "scenario": "cache_memory",
        "count": args.count,
        "create_seconds": round(create_seconds, 1),
        "variants": variants,
        **{
            f"{what}_bytes_ratio_full_over_{v}": round(
                full[f"{what}_bytes_per_job"] / max(1, variants[v][f"{what}_bytes_per_job"]), 2
            )
            for v in VARIANTS[1:]
            for what in ("deep", "rss")
        },
        "machine": f"{platform.machine()}, {psutil.cpu_count()} cpu, "
        f"{round(psutil.virtual_memory().total / 2**30)} GiB, Python {platform.python_version()}",
    }
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
