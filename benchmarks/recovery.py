"""Recovery time: from one worker's failure to every pod Running again, per restart strategy,
with the pod-creation limit beside it.

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
generation is its `restart-attempt` label, then its `in-place-restart-attempt` annotation: a
pod counts as recovered when Running, every container running, at a generation above the
setup's.

InPlaceRestart needs its agent in every pod, which only a real process can be
(`benchmarks/in_place.py`): its pods run the agent and the worker as real processes
(`--run-image`, needs root), the controller runs with the `InPlaceRestart` gate, and the
failure is the victim's worker process killed (exit 137; its `restartPolicyRules` restart
the pod in place). Its recovery is also split into phases: every agent back and its attempt
written (`agents_back_seconds`), the controller lifting the barrier
(`barrier_lifted_seconds`), every worker running again (`recovery_seconds`). The simulator's
pod network holds `in_place.MAX_REAL_PODS` real pods, so that case runs with at most that
many (`jobs` capped; `requested_jobs` says so). Recreate and BlockingRecreate run simulated
pods.

    .venv/bin/python -m benchmarks.recovery [--strategies Recreate,BlockingRecreate,InPlaceRestart]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import sysconfig
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

from benchmarks import in_place
from benchmarks.harness import Options, prepared_client, start_controller, wait_idle, wait_ready
from benchmarks.workload import NAMESPACE, RUN_FOREVER, jobset
from jobset.api import constants as c
from jobset.resources import JOBSETS
from jobset.runtime.client import PODS, Client, Object
from jobset.runtime.informer import FuncHandler, Informer
from jobset.runtime.logging import configure_logging
from kubesim.process import start_sim

JOBS = 32
PODS_PER_JOB = 8
NODES = "pools=32x1,cpu=16,memory=64Gi,pods=110"
STRATEGIES: dict[str, str] = {
    "Recreate": c.RESTART_STRATEGY_RECREATE,
    "BlockingRecreate": c.RESTART_STRATEGY_BLOCKING_RECREATE,
    "InPlaceRestart": c.RESTART_STRATEGY_IN_PLACE_RESTART,
}
# Strategies whose pods run real processes (the in-place agent, `in_place.py`).
REAL_PODS = frozenset({"InPlaceRestart"})
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
    status = pod.get("status") or {}
    containers = status.get("containerStatuses") or []
    return {
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "labels", "annotations", "deletionTimestamp")
            if k in meta
        },
        "status": {
            "phase": status.get("phase"),
            "containers_running": bool(containers)
            and all("running" in (cs.get("state") or {}) for cs in containers),
        },
    }


class PodWatch:
    """Pods by generation (all, and those Running with every container running), with the
    time each count was reached."""

    def __init__(self, client: Client) -> None:
        self.informer = Informer(client, PODS, namespace=NAMESPACE, transform=_thin)
        self.running: dict[str, tuple[int, int]] = {}
        self.generations: dict[str, tuple[int, int]] = {}
        self.informer.add_event_handler(
            FuncHandler(add=self._seen, update=lambda _o, n: self._seen(n), delete=self._gone)
        )

    def _seen(self, pod: Object) -> None:
        uid = str(pod["metadata"].get("uid"))
        status = pod.get("status") or {}
        deleting = bool(pod["metadata"].get("deletionTimestamp"))
        if deleting:
            self.generations.pop(uid, None)
        else:
            self.generations[uid] = generation(pod)
        if status.get("phase") == "Running" and status.get("containers_running") and not deleting:
            self.running[uid] = generation(pod)
        else:
            self.running.pop(uid, None)

    def _gone(self, pod: Object) -> None:
        self.running.pop(str(pod["metadata"].get("uid")), None)
        self.generations.pop(str(pod["metadata"].get("uid")), None)

    def count_generation(self, above: tuple[int, int]) -> int:
        """Pods (running or not) at a generation above `above`."""
        return sum(1 for g in self.generations.values() if g > above)

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
    if strategy == c.RESTART_STRATEGY_IN_PLACE_RESTART:
        in_place.in_place_pod_template(spec)
    return js


def sized(name: str, jobs: int, pods: int, real_jobs: int | None = None) -> int:
    """The Jobs a strategy runs with: all of `jobs`, or for real pods `real_jobs` (default
    `jobs`) but no more than the simulator's pod network holds."""
    if name in REAL_PODS:
        want = jobs if real_jobs is None else real_jobs
        return max(1, min(want, in_place.MAX_REAL_PODS // max(1, pods)))
    return jobs


async def _barrier_lifted(client: Client, above: int) -> float:
    """When the JobSet's `currentInPlaceRestartAttempt` passes `above` (polled)."""
    while True:
        js = await client.get(JOBSETS, "rec", NAMESPACE)
        current = (js.get("status") or {}).get(c.STATUS_CURRENT_IN_PLACE_RESTART_ATTEMPT)
        if current is not None and int(current) > above:
            return time.monotonic()
        await asyncio.sleep(0.05)


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


async def _fail(
    client: Client, victim: dict[str, Any], pids: list[int], setup_gen: tuple[int, int]
) -> asyncio.Task[float]:
    """Kill the real worker of `victim`; the task says when the barrier was lifted."""
    lifted = asyncio.create_task(_barrier_lifted(client, setup_gen[1]))
    if in_place.fail_worker(pids) == 0:
        raise RuntimeError(f"the worker of {victim['metadata']['name']} was gone")
    return lifted


async def _fail_simulated(client: Client, victim: dict[str, Any]) -> None:
    """Write `victim`'s status Failed, as a kubelet writes it."""
    await client.patch(
        PODS,
        victim["metadata"]["name"],
        {"status": _failed_pod_status()},
        NAMESPACE,
        subresource="status",
    )


async def run_strategy(name: str, opts: Options, jobs: int, pods: int) -> dict[str, Any]:
    strategy = STRATEGIES[name]
    total = jobs * pods
    real = name in REAL_PODS
    if real and os.geteuid() != 0:
        raise PermissionError(f"{name} runs its agent as real processes (--run-image): needs root")
    tmp = Path(tempfile.mkdtemp(prefix=f"bench-recovery-{name}-"))
    flags = ["--sim-level", "pods", "--nodes", NODES]
    if real:
        (tmp / "empty").mkdir()
        flags += in_place.sim_flags(sysconfig.get_path("scripts"), tmp / "empty")
    sim = start_sim(tmp, *flags)
    client: Client | None = None
    watch: PodWatch | None = None
    lifted: asyncio.Task[float] | None = None
    proc = None
    try:
        client = await prepared_client(sim)
        if real:
            for resource, body in in_place.RBAC:
                await client.create(resource, body, NAMESPACE)
        watch = PodWatch(client)
        watch.informer.start()
        await watch.informer.wait_for_sync(60)
        proc = start_controller(sim, tmp, opts, in_place.CONTROLLER_FLAGS if real else ())
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
        pids = in_place.worker_pids(victim["metadata"]["name"]) if real else []
        if real and not pids:
            raise RuntimeError(f"no worker process found for {victim['metadata']['name']}")
        cpu0 = proc.cpu()
        t1 = time.monotonic()
        lifted = await _fail(client, victim, pids, setup_gen) if real else None
        if not real:
            await _fail_simulated(client, victim)
        phases: dict[str, float] = {}
        if real:
            t_agents = await w.until(
                lambda: w.count_generation(setup_gen) >= total,
                opts.timeout,
                "every agent back at the next attempt",
            )
            phases["agents_back_seconds"] = round(t_agents - t1, 3)
        t_back = await w.until(
            lambda: w.count(above=setup_gen) >= total, opts.timeout, "all pods Running again"
        )
        if lifted is not None:
            phases["barrier_lifted_seconds"] = round(await lifted - t1, 3)
        await wait_idle(proc)
        cpu = proc.cpu() - cpu0
    finally:
        if lifted is not None and not lifted.done():
            lifted.cancel()
        if proc is not None:
            proc.stop()
        if watch is not None:
            await watch.informer.stop()
        if client is not None:
            await client.close()
        sim.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return _result(name, jobs, total, real, t_up - t0, t_back - t1, phases, cpu)


def _result(
    name: str,
    jobs: int,
    total: int,
    real: bool,
    fresh: float,
    recovery: float,
    phases: dict[str, float],
    cpu: float,
) -> dict[str, Any]:
    """One strategy's line of the recovery results."""
    return {
        "strategy": name,
        "jobs": jobs,
        "pods": total,
        "pod_processes": "real (agent + worker)" if real else "simulated",
        "fresh_seconds": round(fresh, 3),
        "recovery_seconds": round(recovery, 3),
        **phases,
        "fresh_over_recovery": round(fresh / recovery, 3),
        "pods_per_second_fresh": round(total / fresh, 1),
        "controller_cpu_seconds": round(cpu, 3),
        "load_1m": round(psutil.getloadavg()[0], 2),
    }


async def run_all(
    names: list[str],
    opts: Options,
    jobs: int = JOBS,
    pods: int = PODS_PER_JOB,
    real_jobs: int | None = None,
) -> dict[str, Any]:
    """Every strategy in `names` at `jobs` x `pods`; those with real pods at `real_jobs`
    Jobs (`sized`)."""
    runs: list[dict[str, Any]] = []
    for name in names:
        n = sized(name, jobs, pods, real_jobs)
        try:
            run = await run_strategy(name, opts, n, pods)
        except Exception as exc:  # reported; the goal shows it not met
            run = {"strategy": name, "jobs": n, "pods": n * pods, "error": repr(exc)}
        if n != jobs:
            run["requested_jobs"] = jobs
        runs.append(run)
    return {"runs": runs, "nodes": NODES}


def one_line(r: dict[str, Any]) -> str:
    if "error" in r:
        return f"recovery {r['strategy']}: failed ({r['error'][:200]})"
    phases = "".join(
        f", {k.removesuffix('_seconds').replace('_', ' ')} {r[k]:.1f}s"
        for k in ("agents_back_seconds", "barrier_lifted_seconds")
        if k in r
    )
    return (
        f"recovery {r['strategy']} ({r['jobs']} Jobs, {r['pods']} pods, "
        f"{r.get('pod_processes', 'simulated')}): fresh {r['fresh_seconds']:.1f}s, "
        f"recovery {r['recovery_seconds']:.1f}s{phases}, "
        f"fresh/recovery {r['fresh_over_recovery']:.2f}"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--strategies", default=",".join(STRATEGIES))
    p.add_argument("--jobs", type=int, default=JOBS)
    p.add_argument("--pods", type=int, default=PODS_PER_JOB)
    p.add_argument(
        "--real-jobs",
        type=int,
        default=None,
        help=f"Jobs of the real-pod case (InPlaceRestart; default --jobs, at most "
        f"{in_place.MAX_REAL_PODS} pods)",
    )
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    names = [s for s in args.strategies.split(",") if s]
    for s in names:
        if s not in STRATEGIES:
            p.error(f"unknown or not yet enabled strategy {s!r} (enabled: {', '.join(STRATEGIES)})")
    configure_logging("console", "WARNING")
    data = asyncio.run(
        run_all(names, Options(timeout=args.timeout), args.jobs, args.pods, args.real_jobs)
    )
    for r in data["runs"]:
        print(one_line(r))
    if args.out:
        Path(args.out).write_text(json.dumps(data, indent=2) + "\n")
    return 1 if any("error" in r for r in data["runs"]) else 0


if __name__ == "__main__":
    sys.exit(main())
