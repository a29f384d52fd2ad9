"""Recovery time: from one worker's failure to every pod Running again, per restart strategy
(issue 17 item 6), with the pod-creation limit beside it.

Per strategy, on a fresh `jobset sim --sim-level pods` (scheduler and kubelets simulated;
`NODES` gives room for every pod) with `jobset controller` at its shipped defaults: one
JobSet of `JOBS` Jobs x `PODS` pods (`sleep infinity`, one CPU each) with that restart
strategy. The harness watches pods:

- `fresh`: JobSet created -> all `JOBS x PODS` pods Running. That is the pod-creation limit
  of this cluster: the sim's Job controller, scheduler and kubelets bringing up that many
  pods from nothing, which no restart can beat (a restart must also remove the old ones);
- `recovery`: one pod is failed (the harness writes its status Failed, exit code 1, as a
  kubelet would when the process dies) -> every pod of the next generation Running.

The headline is fresh / recovery (1.0: recovering costs no more than starting). A pod's
generation is its `restart-attempt` label, then its `in-place-restart-attempt` label: a
pod counts as recovered when Running at a generation above the setup's.

InPlaceRestart is implemented on another branch: it is listed in `PENDING` and the
integrator moves it into `STRATEGIES` once merged (the scenario is parameterised by the
strategy name alone).

    .venv/bin/python -m benchmarks.recovery [--strategies Recreate,BlockingRecreate]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

from benchmarks.harness import Options, start_controller, wait_idle, wait_ready
from benchmarks.workload import NAMESPACE, RUN_FOREVER, jobset
from jobset.api import constants as c
from jobset.controllers.crd import apply_crds
from jobset.resources import JOBSETS
from jobset.runtime.client import NAMESPACES, PODS, ApiError, Client, Object
from jobset.runtime.informer import FuncHandler, Informer
from jobset.runtime.logging import configure_logging
from kubesim.process import start_sim

JOBS = 32
PODS_PER_JOB = 8
NODES = "pools=32x1,cpu=16,memory=64Gi,pods=110"
STRATEGIES: dict[str, str] = {
    "Recreate": c.RESTART_STRATEGY_RECREATE,
    "BlockingRecreate": c.RESTART_STRATEGY_BLOCKING_RECREATE,
}
# Measured once the InPlaceRestart branch is merged: move it into STRATEGIES.
PENDING = ("InPlaceRestart",)
IN_PLACE_KEY = "jobset.sigs.k8s.io/in-place-restart-attempt"


def generation(pod: Object) -> tuple[int, int]:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    annotations = (pod.get("metadata") or {}).get("annotations") or {}

    def num(v: Any) -> int:
        try:
            return int(v or 0)
        except (TypeError, ValueError):
            return -1

    in_place = labels.get(IN_PLACE_KEY) or annotations.get(IN_PLACE_KEY)
    return num(labels.get(c.RESTART_ATTEMPT_KEY)), num(in_place)


def _thin(pod: Object) -> Object:
    meta = pod.get("metadata") or {}
    return {
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "labels", "annotations", "deletionTimestamp")
            if k in meta
        },
        "status": {"phase": (pod.get("status") or {}).get("phase")},
    }


class PodWatch:
    """Running pods by generation, with the time each count was reached."""

    def __init__(self, client: Client) -> None:
        self.informer = Informer(client, PODS, namespace=NAMESPACE, transform=_thin)
        self.running: dict[str, tuple[int, int]] = {}
        self.informer.add_event_handler(
            FuncHandler(add=self._seen, update=lambda _o, n: self._seen(n), delete=self._gone)
        )

    def _seen(self, pod: Object) -> None:
        uid = str(pod["metadata"].get("uid"))
        phase = (pod.get("status") or {}).get("phase")
        if phase == "Running" and not pod["metadata"].get("deletionTimestamp"):
            self.running[uid] = generation(pod)
        else:
            self.running.pop(uid, None)

    def _gone(self, pod: Object) -> None:
        self.running.pop(str(pod["metadata"].get("uid")), None)

    def count(self, above: tuple[int, int] | None = None) -> int:
        if above is None:
            return len(self.running)
        return sum(1 for g in self.running.values() if g > above)

    async def until(self, pred: Any, within: float, what: str) -> float:
        deadline = time.monotonic() + within
        while not pred():
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {within:.0f}s waiting for {what}")
            await asyncio.sleep(0.02)
        return time.monotonic()


def recovery_jobset(strategy: str, jobs: int, pods: int) -> dict[str, Any]:
    js = jobset("rec", jobs, command=RUN_FOREVER, restart_strategy=strategy)
    spec = js["spec"]["replicatedJobs"][0]["template"]["spec"]
    spec["parallelism"] = spec["completions"] = pods
    spec["completionMode"] = "Indexed"
    return js


def _failed_pod_status() -> dict[str, Any]:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "phase": "Failed",
        "containerStatuses": [
            {
                "name": "trainer",
                "ready": False,
                "restartCount": 0,
                "image": "registry.example/trainer:v1",
                "imageID": "",
                "state": {
                    "terminated": {
                        "exitCode": 1,
                        "reason": "Error",
                        "startedAt": now,
                        "finishedAt": now,
                    }
                },
            }
        ],
    }


async def run_strategy(name: str, opts: Options, jobs: int, pods: int) -> dict[str, Any]:
    strategy = STRATEGIES[name]
    total = jobs * pods
    tmp = Path(tempfile.mkdtemp(prefix=f"bench-recovery-{name}-"))
    sim = start_sim(tmp, "--sim-level", "pods", "--nodes", NODES)
    client: Client | None = None
    watch: PodWatch | None = None
    proc = None
    try:
        client = await Client.connect(str(sim.kubeconfig), qps=0, burst=0)
        await apply_crds(client)
        for ns in (NAMESPACE, "jobset-system"):
            with contextlib.suppress(ApiError):
                await client.create(NAMESPACES, {"metadata": {"name": ns}})
        watch = PodWatch(client)
        watch.informer.start()
        await watch.informer.wait_for_sync(60)
        proc = start_controller(sim, tmp, opts)
        await wait_ready(proc)
        await wait_idle(proc, quiet=0.5)
        t0 = time.monotonic()
        await client.create(JOBSETS, recovery_jobset(strategy, jobs, pods))
        w = watch
        t_up = await w.until(lambda: w.count() >= total, opts.timeout, "all pods Running")
        await wait_idle(proc)
        setup_gen = max(w.running.values())
        victim = next(
            p
            for p in watch.informer.store.list()
            if (p["metadata"].get("labels") or {}).get(c.JOB_INDEX_KEY) == str(jobs // 2)
        )
        cpu0 = proc.cpu()
        t1 = time.monotonic()
        await client.patch(
            PODS,
            victim["metadata"]["name"],
            {"status": _failed_pod_status()},
            NAMESPACE,
            subresource="status",
        )
        t_back = await w.until(
            lambda: w.count(above=setup_gen) >= total, opts.timeout, "all pods Running again"
        )
        await wait_idle(proc)
        cpu = proc.cpu() - cpu0
    finally:
        if proc is not None:
            proc.stop()
        if watch is not None:
            await watch.informer.stop()
        if client is not None:
            await client.close()
        sim.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    fresh, recovery = t_up - t0, t_back - t1
    return {
        "strategy": name,
        "jobs": jobs,
        "pods": total,
        "fresh_seconds": round(fresh, 3),
        "recovery_seconds": round(recovery, 3),
        "fresh_over_recovery": round(fresh / recovery, 3),
        "pods_per_second_fresh": round(total / fresh, 1),
        "controller_cpu_seconds": round(cpu, 3),
        "load_1m": round(psutil.getloadavg()[0], 2),
    }


async def run_all(
    names: list[str], opts: Options, jobs: int = JOBS, pods: int = PODS_PER_JOB
) -> dict[str, Any]:
    runs: list[dict[str, Any]] = []
    for name in names:
        try:
            runs.append(await run_strategy(name, opts, jobs, pods))
        except Exception as exc:  # reported; the goal shows it not met
            runs.append({"strategy": name, "jobs": jobs, "pods": jobs * pods, "error": repr(exc)})
    return {"runs": runs, "pending": list(PENDING), "nodes": NODES}


def one_line(r: dict[str, Any]) -> str:
    if "error" in r:
        return f"recovery {r['strategy']}: failed ({r['error'][:200]})"
    return (
        f"recovery {r['strategy']} ({r['jobs']} Jobs, {r['pods']} pods): fresh "
        f"{r['fresh_seconds']:.1f}s, recovery {r['recovery_seconds']:.1f}s, "
        f"fresh/recovery {r['fresh_over_recovery']:.2f}"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--strategies", default=",".join(STRATEGIES))
    p.add_argument("--jobs", type=int, default=JOBS)
    p.add_argument("--pods", type=int, default=PODS_PER_JOB)
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    names = [s for s in args.strategies.split(",") if s]
    for s in names:
        if s not in STRATEGIES:
            p.error(f"unknown or not yet enabled strategy {s!r} (enabled: {', '.join(STRATEGIES)})")
    configure_logging("console", "WARNING")
    data = asyncio.run(run_all(names, Options(timeout=args.timeout), args.jobs, args.pods))
    for r in data["runs"]:
        print(one_line(r))
    if args.out:
        Path(args.out).write_text(json.dumps(data, indent=2) + "\n")
    return 1 if any("error" in r for r in data["runs"]) else 0


if __name__ == "__main__":
    sys.exit(main())
