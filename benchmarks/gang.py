"""Gang scheduling: N gangs competing for a cluster that holds only some of them.

Each run starts `jobset dev` (controller and simulated cluster, Workload-Aware Scheduling
gates on) with `--domains` pools of `--nodes-per-domain` nodes of `--cpu` CPUs, and submits
`--jobsets` JobSets at once, each of `--jobs` Jobs x `--pods` one-CPU pods:

- `gang`: every JobSet annotated `scheduling.jobset-py.dev/gang: JobSet` (one gang each);
- `none`: the same JobSets without the annotation, pods scheduled one by one.

Reported per run: the JobSets the cluster can hold whole (`fit`), the time from submission
until every pod of the JobSets that got placed is Running, how many JobSets ended with all
pods Running and how many partly placed (some pods bound, some pending - what gangs
prevent), the most JobSets ever seen partly bound while binding writes were in flight, and
the simulated scheduler's counters (`/debug/scheduler`: pods' kube-scheduler evaluations,
gang cycles and trials).

    .venv/bin/python -m benchmarks.gang --jobsets 12

Writes `benchmarks/results/gang.json`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.placement import sleeper_jobset
from jobset.api import constants as c
from jobset.dev.examplekit import start_dev
from jobset.runtime.client import PODS, Client, Resource
from kubesim.process import SimProcess

RESULTS = Path(__file__).parent / "results"
JOBSETS = Resource(c.GROUP, c.VERSION, c.PLURAL, c.KIND)
GATES = "GenericWorkload=true,GangScheduling=true"
MODES = ("gang", "none")
SETTLE_SECONDS = 3.0  # nothing more placed for this long: the scheduler is done


def jobset(name: str, gang: bool, jobs: int, pods: int) -> dict[str, Any]:
    annotations = {"scheduling.jobset-py.dev/gang": "JobSet"} if gang else {}
    return sleeper_jobset(name, annotations, jobs, pods)


def _tally(items: list[dict[str, Any]], size: int) -> dict[str, dict[str, int]]:
    per: dict[str, dict[str, int]] = {}
    for p in items:
        if p["metadata"].get("deletionTimestamp"):
            continue
        js = p["metadata"]["labels"].get(c.JOBSET_NAME_KEY, "")
        t = per.setdefault(js, {"pods": 0, "bound": 0, "running": 0})
        t["pods"] += 1
        t["bound"] += bool((p.get("spec") or {}).get("nodeName"))
        t["running"] += (p.get("status") or {}).get("phase") == "Running"
    return per


async def measure(dev: SimProcess, gang: bool, args: argparse.Namespace) -> dict[str, Any]:
    client = await Client.connect(str(dev.kubeconfig), qps=1000, burst=2000)
    size = args.jobs * args.pods
    names = [f"js-{i:02d}" for i in range(args.jobsets)]
    try:
        t0 = time.monotonic()
        await asyncio.gather(
            *(client.create(JOBSETS, jobset(n, gang, args.jobs, args.pods)) for n in names)
        )
        max_partial, last_change, last_bound = 0, time.monotonic(), -1
        done_at = None
        while True:
            items = (await client.list(PODS, "default"))["items"]
            per = _tally(items, size)
            bound = sum(t["bound"] for t in per.values())
            partial = sum(1 for t in per.values() if 0 < t["bound"] < size)
            max_partial = max(max_partial, partial)
            placed = [t for t in per.values() if t["bound"]]
            if bound != last_bound:
                last_bound, last_change = bound, time.monotonic()
            all_running = all(t["running"] == t["bound"] for t in placed)
            if all_running and len(per) == len(names) and bound and done_at is None:
                done_at = time.monotonic() - t0
            if not all_running:
                done_at = None
            if done_at is not None and time.monotonic() - last_change > SETTLE_SECONDS:
                break
            if time.monotonic() - t0 > 600:
                raise TimeoutError(f"not settled after 600 s: {per}")
            await asyncio.sleep(0.1)
        sched = await client.request("GET", "/debug/scheduler")
        return {
            "mode": "gang" if gang else "none",
            "jobsets": len(names),
            "pods_per_jobset": size,
            "seconds_to_placed_running": round(done_at, 3),
            "pods_bound": bound,
            "jobsets_all_running": sum(1 for t in per.values() if t["running"] == size),
            "jobsets_partly_placed_at_end": sum(1 for t in per.values() if 0 < t["bound"] < size),
            "max_jobsets_partly_bound_seen": max_partial,
            "scheduling_cycles": sched["cycles"],
            "kube_scheduler_evaluations": sched["kubeSchedulerEvaluations"]["total"],
            "gang": sched.get("gang"),
        }
    finally:
        await client.close()


def run_one(gang: bool, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        dev = start_dev(
            Path(tmp),
            "--kube-feature-gates",
            GATES,
            "--nodes",
            f"pools={args.domains}x{args.nodes_per_domain},cpu={args.cpu}",
            "--time-scale",
            "1",
            "--no-events",
        )
        try:
            return asyncio.run(measure(dev, gang, args))
        finally:
            dev.stop()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--jobsets", type=int, default=12)
    p.add_argument("--jobs", type=int, default=4, help="Jobs per JobSet")
    p.add_argument("--pods", type=int, default=6, help="one-CPU pods per Job")
    p.add_argument("--domains", type=int, default=8)
    p.add_argument("--nodes-per-domain", type=int, default=4)
    p.add_argument("--cpu", type=int, default=8, help="CPUs per node")
    p.add_argument("--out", default=str(RESULTS / "gang.json"))
    args = p.parse_args()
    capacity = args.domains * args.nodes_per_domain * args.cpu
    fit = capacity // (args.jobs * args.pods)
    runs = []
    for mode in MODES:
        result = run_one(mode == "gang", args)
        result["fit"] = fit
        print(json.dumps(result), flush=True)
        runs.append(result)
    out = {
        "benchmark": "gang",
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "cluster": {"cpus": capacity, "jobsets_that_fit": fit},
        "runs": runs,
    }
    RESULTS.mkdir(exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
