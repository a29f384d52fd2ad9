"""Bytes per cached Job in the runtime's informer cache, with and without a transform.

Starts `jobset sim --sim-level none`, creates `--count` Jobs shaped like a JobSet's children
(two containers with env, resources, volume mounts; owned by one owner object; created
through the API so the server adds managedFields, defaults and labels), then, for each
variant, runs a fresh measuring process (so the two do not share a heap) that lists and
watches the Jobs with one `Informer` and reports:

- `deep_bytes_per_job`: bytes of the Python objects the cache holds (`deep_sizeof` over the
  store, shared objects such as orjson-cached dict keys counted once) - the figure the
  transform is about;
- `rss_bytes_per_job`: growth of the process's resident memory from before the informer
  started until after it synced, divided by the count (includes allocator slack and the
  transient list pages; noisier).

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
NAMESPACE = "bench"


def job(i: int, owner_uid: str) -> dict[str, Any]:
    container = {
        "name": "worker",
        "image": "python:3.11",
        "command": ["bash", "-c", "python train.py --epochs 100 && exit 0"],
        "env": [{"name": f"ENV_{k}", "value": f"value-{k}"} for k in range(8)],
        "resources": {"limits": {"cpu": "2", "memory": "4Gi"}},
        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": f"js-{i // 4:05d}-workers-{i % 4}",
            "namespace": NAMESPACE,
            "labels": {
                "jobset.sigs.k8s.io/jobset-name": f"js-{i // 4:05d}",
                "jobset.sigs.k8s.io/replicatedjob-name": "workers",
            },
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "name": "owner",
                    "uid": owner_uid,
                    "controller": True,
                }
            ],
        },
        "spec": {
            "parallelism": 4,
            "completions": 4,
            "completionMode": "Indexed",
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": {"app": "train"}},
                "spec": {
                    "restartPolicy": "Never",
                    "subdomain": f"js-{i // 4:05d}",
                    "containers": [container, {**container, "name": "sidecar"}],
                    "volumes": [{"name": "data", "emptyDir": {}}],
                },
            },
        },
    }


async def populate(kubeconfig: str, count: int, concurrency: int) -> float:
    from jobset.runtime.client import CONFIGMAPS, JOBS, NAMESPACES, Client

    client = await Client.connect(kubeconfig, qps=0, burst=0, pool_size=concurrency + 4)
    try:
        await client.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
        owner = await client.create(
            CONFIGMAPS, {"metadata": {"name": "owner", "namespace": NAMESPACE}}
        )
        uid = owner["metadata"]["uid"]
        next_index = iter(range(count))
        t0 = time.perf_counter()

        async def worker() -> None:
            for i in next_index:
                await client.create(JOBS, job(i, uid))

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return time.perf_counter() - t0
    finally:
        await client.close()


async def measure(kubeconfig: str, variant: str) -> dict[str, Any]:
    from jobset.runtime.cache import (
        BY_CONTROLLER_UID,
        deep_sizeof,
        index_by_controller_uid,
    )
    from jobset.runtime.client import JOBS, Client
    from jobset.runtime.informer import Informer
    from jobset.runtime.transforms import slim_job

    proc = psutil.Process()
    client = await Client.connect(kubeconfig, qps=0, burst=0)
    informer = Informer(
        client,
        JOBS,
        namespace=NAMESPACE,
        transform=slim_job if variant == "slim_job" else None,
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
    parser.add_argument("--measure", choices=("full", "slim_job"), help=argparse.SUPPRESS)
    parser.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    parser.add_argument("--output", default=str(RESULTS / "cache_memory.json"))
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(asyncio.run(measure(args.kubeconfig, args.measure))), flush=True)
        return 0

    from jobset.sim.process import start_sim

    tmp = Path(tempfile.mkdtemp(prefix="cache-memory-"))
    sim = start_sim(tmp, "--sim-level", "none")
    try:
        print(f"creating {args.count} Jobs ...", flush=True)
        create_seconds = asyncio.run(populate(str(sim.kubeconfig), args.count, args.concurrency))
        print(f"created in {create_seconds:.0f}s", flush=True)
        variants = {}
        for variant in ("full", "slim_job"):
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
    full, slim = variants["full"], variants["slim_job"]
    report = {
        "scenario": "cache_memory",
        "count": args.count,
        "create_seconds": round(create_seconds, 1),
        "variants": variants,
        "deep_bytes_ratio_full_over_slim": round(
            full["deep_bytes_per_job"] / max(1, slim["deep_bytes_per_job"]), 2
        ),
        "rss_bytes_ratio_full_over_slim": round(
            full["rss_bytes_per_job"] / max(1, slim["rss_bytes_per_job"]), 2
        ),
        "machine": f"{platform.machine()}, {psutil.cpu_count()} cpu, "
        f"{round(psutil.virtual_memory().total / 2**30)} GiB, Python {platform.python_version()}",
    }
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
