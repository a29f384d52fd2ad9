"""Scale at `--sim-level pods`: the largest JobSet this machine takes end to end,
against the published anchor of 50,000 training pods scheduled in under 2 minutes
on a 65,000-node cluster (417 pods/s).

One step is one size: a fresh `jobset sim --sim-level pods` (Job controller, scheduler and
kubelets simulated; `nodes_for` gives every pod room, `PODS_PER_NODE` one-CPU pods per node
plus a quarter spare so the scheduler never hunts for the last free slot) and `jobset
controller` as a real process at its shipped defaults (QPS 500, burst 500, 5 workers), the
same pair `benchmarks/recovery.py` starts. The harness creates one JobSet of J Jobs x P
pods (simulated pod processes: `sleep infinity`, one CPU each) and watches pods. Measured
from the create, on the harness's watch:

- *all created*: every pod exists (the controller created the Jobs, the sim's Job
  controller their pods); *Jobs created* beside it comes from the API server's own record
  of the controller's last `create jobs` (`/debug/requests`, the host's monotonic clock);
- *all scheduled*: every pod has a node;
- *all Running*: every pod Running with its container running - the headline, and pods/s
  = pods / that time.

The controller's, the simulator's and the harness's CPU seconds over the step (psutil;
each as a share of the wall time, so the report can say which process held the 2 cores)
and the controller's and simulator's peak RSS (sampled every 50 ms).

Steps grow (`LARGE_PODS`: 1k, 4k, 16k, 50k, 100k, 200k pods in `make bench-large`) until one
does not complete: it passes the per-step time limit or a process passes the memory limit.
The largest size that completed is the answer; the step that stopped the climb is kept
with how far it got. `make bench` runs one small step (`BENCH_PODS`).

    .venv/bin/python -m benchmarks.pod_scale [--pods 1000,4000,16000,50000] [--step-limit 600]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import psutil

from benchmarks import profiling, sim_parts
from benchmarks.harness import (
    Options,
    commit,
    controller_metrics,
    machine,
    prepared_client,
    request_counts,
    start_controller,
    wait_idle,
    wait_ready,
)
from benchmarks.workload import (
    CONTROLLER_AGENT,
    JOBSETS,
    NAMESPACE,
    OBSERVER_USER_AGENT,
    RUN_FOREVER,
    jobset,
)
from jobset.runtime.client import PODS, Client, Object
from jobset.runtime.informer import FuncHandler, Informer
from jobset.runtime.logging import configure_logging
from kubesim.process import start_sim

RESULTS: Final = Path(__file__).parent / "results"

# The published anchor: 50,000 training pods scheduled in under 2 minutes, 65,000 nodes.
ANCHOR_PODS: Final = 50_000
ANCHOR_SECONDS: Final = 120.0
ANCHOR_RATE: Final = ANCHOR_PODS / ANCHOR_SECONDS  # 416.7 pods/s
# The simulator's own goal at the anchor's size, tighter than the anchor's time: every pod of
# the ANCHOR_PODS-pod step Running within these seconds on 2 cores, per series.
GOAL_SERVICE_SECONDS: Final = 60.0
GOAL_NO_SERVICE_SECONDS: Final = 45.0

PODS_PER_JOB: Final = 8  # one Job per 8-host slice of a multislice-like training run
PODS_PER_NODE: Final = 8  # one-CPU pods per 8-CPU node
SPARE_NODES: Final = 1.25
LARGE_PODS: Final = (1_000, 4_000, 16_000, 50_000, 100_000, 200_000)
BENCH_PODS: Final = 1_000  # `make bench`: one step of ~20-30 s on a loaded machine
STEP_LIMIT: Final = 600.0  # seconds from create to all Running, per step
# RSS of the controller plus the simulator; also stopped when the host has less than
# MIN_AVAILABLE left (the machine is shared).
MEMORY_LIMIT_GIB: Final = 8.0
MIN_AVAILABLE_GIB: Final = 1.5
NAME: Final = "scale"
SERIES: Final = {True: "headless Service (default)", False: "no Service"}


def nodes_for(pods: int, per_node: int = PODS_PER_NODE) -> int:
    return max(1, math.ceil(pods * SPARE_NODES / per_node))


def node_spec(nodes: int, per_node: int = PODS_PER_NODE) -> str:
    return f"pools={nodes},cpu={per_node},memory={per_node * 4}Gi,pods=110"


def scale_jobset(jobs: int, pods: int, dns_hostnames: bool = True) -> dict[str, Any]:
    """One JobSet of `jobs` Indexed Jobs x `pods` pods that run until deleted; with
    `dns_hostnames` (the JobSet default) its headless Service gives every pod a DNS name."""
    js = jobset(NAME, jobs, command=RUN_FOREVER)
    if not dns_hostnames:
        js["spec"]["network"] = {"enableDNSHostnames": False}
    spec = js["spec"]["replicatedJobs"][0]["template"]["spec"]
    spec["parallelism"] = spec["completions"] = pods
    spec["completionMode"] = "Indexed"
    return js


def _thin(pod: Object) -> Object:
    status = pod.get("status") or {}
    containers = status.get("containerStatuses") or []
    return {
        "metadata": {"name": pod["metadata"].get("name"), "uid": pod["metadata"].get("uid")},
        "spec": {"nodeName": (pod.get("spec") or {}).get("nodeName")},
        "status": {
            "phase": status.get("phase"),
            "running": bool(containers)
            and all("running" in (cs.get("state") or {}) for cs in containers),
        },
    }


class PodCounts:
    """Pods seen, scheduled and Running (by uid) on the harness's watch, and when each count
    first reached the total."""

    def __init__(self, client: Client, total: int) -> None:
        self.total = total
        self.informer = Informer(client, PODS, namespace=NAMESPACE, transform=_thin)
        self.seen: set[str] = set()
        self.scheduled: set[str] = set()
        self.running: set[str] = set()
        self.reached: dict[str, float] = {}
        self.informer.add_event_handler(
            FuncHandler(add=self._pod, update=lambda _o, n: self._pod(n), delete=self._gone)
        )

    def _pod(self, pod: Object) -> None:
        uid = str(pod["metadata"]["uid"])
        self.seen.add(uid)
        if pod["spec"].get("nodeName"):
            self.scheduled.add(uid)
        if pod["status"]["phase"] == "Running" and pod["status"]["running"]:
            self.running.add(uid)
        else:
            self.running.discard(uid)
        now = time.monotonic()
        for what, s in (("created", self.seen), ("scheduled", self.scheduled)):
            if what not in self.reached and len(s) >= self.total:
                self.reached[what] = now
        if "running" not in self.reached and len(self.running) >= self.total:
            self.reached["running"] = now

    def _gone(self, pod: Object) -> None:
        uid = str(pod["metadata"]["uid"])
        for s in (self.seen, self.scheduled, self.running):
            s.discard(uid)


@dataclass
class Sampler:
    """Peak RSS of some processes every 50 ms, the host's lowest available memory and its
    highest 1-minute load average."""

    procs: dict[str, psutil.Process]
    peak: dict[str, int] = field(default_factory=dict)
    min_available: int = 0
    max_load: float = 0.0
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> Sampler:
        self.min_available = psutil.virtual_memory().available
        threading.Thread(target=self._run, daemon=True).start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            for name, ps in self.procs.items():
                with contextlib.suppress(psutil.Error):
                    self.peak[name] = max(self.peak.get(name, 0), ps.memory_info().rss)
            self.min_available = min(self.min_available, psutil.virtual_memory().available)
            self.max_load = max(self.max_load, os.getloadavg()[0])
            time.sleep(0.05)

    def stop(self) -> None:
        self._stop.set()

    def rss_total(self) -> int:
        return sum(self.peak.values())


def _cpu(ps: psutil.Process) -> float:
    t = ps.cpu_times()
    return float(t.user + t.system)


async def _jobs_created_at(client: Client) -> tuple[int, float | None]:
    """The controller's `create jobs` so far and the arrival of the last one (monotonic)."""
    body = await client.request("GET", "/debug/requests")
    for r in body["byUserAgent"]:
        if (r["userAgent"], r["verb"], r["resource"]) == (CONTROLLER_AGENT, "create", "jobs"):
            return int(r["count"]), float(r["last"])
    return 0, None


async def run_step(
    pods: int,
    *,
    per_job: int = PODS_PER_JOB,
    per_node: int = PODS_PER_NODE,
    step_limit: float = STEP_LIMIT,
    memory_limit_gib: float = MEMORY_LIMIT_GIB,
    opts: Options | None = None,
    profile: Path | None = None,
    dns_hostnames: bool = True,
) -> dict[str, Any]:
    """One size end to end; never raises for a step that does not complete (the result says
    why, with how far it got)."""
    opts = opts or Options()
    jobs = max(1, pods // per_job)
    total = jobs * per_job
    nodes = nodes_for(total, per_node)
    result: dict[str, Any] = {
        "jobs": jobs,
        "pods_per_job": per_job,
        "pods": total,
        "nodes": nodes,
        "pods_per_node": per_node,
        "dns_hostnames": dns_hostnames,
        "load_1m": [round(os.getloadavg()[0], 2)],
    }
    await _measure_step(result, jobs, per_job, step_limit, memory_limit_gib, opts, profile)
    result["load_1m"].append(round(os.getloadavg()[0], 2))
    return result


async def _measure_step(
    result: dict[str, Any],
    jobs: int,
    per_job: int,
    step_limit: float,
    memory_limit_gib: float,
    opts: Options,
    profile: Path | None,
) -> None:
    """`run_step` on its own simulator: fills `result` in, never raises."""
    total, nodes = result["pods"], result["nodes"]
    per_node, dns_hostnames = result["pods_per_node"], result["dns_hostnames"]
    tmp = Path(tempfile.mkdtemp(prefix="bench-podscale-"))
    t_start = time.monotonic()
    sim = start_sim(tmp, "--sim-level", "pods", "--nodes", node_spec(nodes, per_node), timeout=300)
    result["sim_start_seconds"] = round(time.monotonic() - t_start, 2)
    client: Client | None = None
    watch: PodCounts | None = None
    proc = None
    sampler: Sampler | None = None
    me = psutil.Process()
    sim_ps = psutil.Process(sim.proc.pid)
    try:
        client = await prepared_client(sim, OBSERVER_USER_AGENT)
        watch = PodCounts(client, total)
        watch.informer.start()
        await watch.informer.wait_for_sync(60)
        proc = start_controller(sim, tmp, opts)
        await wait_ready(proc)
        await wait_idle(proc, quiet=0.5)
        sampler = Sampler({"controller": proc.ps, "sim": sim_ps}).start()
        cpu0 = {"controller": proc.cpu(), "sim": _cpu(sim_ps), "harness": _cpu(me)}
        rss0 = {"controller": proc.rss(), "sim": sim_ps.memory_info().rss}
        spies = [] if profile is None else start_profiles(profile, total, proc.ps.pid, sim_ps.pid)
        t0 = time.monotonic()
        await client.create(JOBSETS, scale_jobset(jobs, per_job, dns_hostnames))
        stop_reason = None
        while "running" not in watch.reached and stop_reason is None:
            await asyncio.sleep(0.1)
            stop_reason = _stop_reason(
                time.monotonic() - t0, step_limit, memory_limit_gib, sampler, proc, sim
            )
        t_end = time.monotonic()
        if spies:
            result["profile"] = stop_profiles(spies)
        cpu = {
            "controller": proc.cpu() - cpu0["controller"],
            "sim": _cpu(sim_ps) - cpu0["sim"],
            "harness": _cpu(me) - cpu0["harness"],
        }
        jobs_created, last_job = await _jobs_created_at(client)
        controller_side = await _controller_side(client, proc)
        wall = t_end - t0
        jobs_done = last_job if jobs_created >= jobs else None
        result |= {
            "completed": stop_reason is None,
            "seconds": _milestones(watch, t0, jobs_done),
            "wall_seconds": round(wall, 3),
            "jobs_created": jobs_created,
            **controller_side,
            **_usage(watch, sampler, cpu, rss0, wall),
        }
        if stop_reason is not None:
            result["stopped"] = stop_reason
        result["ratio_to_anchor"] = round(result["pods_per_second"] / ANCHOR_RATE, 3)
    except Exception as exc:  # reported: the climb stops here
        result |= {"completed": False, "stopped": f"error: {exc!r}"}
    finally:
        if sampler is not None:
            sampler.stop()
        if proc is not None:
            proc.stop()
        if watch is not None:
            await watch.informer.stop()
        if client is not None:
            await client.close()
        sim.stop()
        if os.environ.get("BENCH_KEEP_TMP") is None:
            shutil.rmtree(tmp, ignore_errors=True)


def _milestones(watch: PodCounts, t0: float, jobs_done: float | None) -> dict[str, float]:
    """Seconds from the create to each milestone the pods reached, and to the last Job."""
    seconds = {
        what: round(t - t0, 3) for what, t in sorted(watch.reached.items(), key=lambda i: i[1])
    }
    if jobs_done is not None:
        seconds["jobs_created"] = round(jobs_done - t0, 3)
    return seconds


async def _controller_side(client: Client, proc: Any) -> dict[str, Any]:
    """The controller's requests (the API server's count) and reconciles (its metrics)."""
    requests = await request_counts(client, CONTROLLER_AGENT)
    reconciles = None
    with contextlib.suppress(Exception):  # a controller that exited has no metrics
        reconciles = (await controller_metrics(proc)).get("controller_runtime_reconcile_total")
    return {
        "controller_reconciles": None if reconciles is None else int(reconciles),
        "controller_requests": dict(sorted(requests.items())),
    }


def _stop_reason(
    elapsed: float,
    step_limit: float,
    memory_limit_gib: float,
    sampler: Sampler,
    proc: Any,
    sim: Any,
) -> str | None:
    """Why the step stops before every pod is Running, if it must."""
    if elapsed > step_limit:
        return f"time limit: not all Running after {step_limit:.0f} s"
    if sampler.rss_total() > memory_limit_gib * 2**30:
        return (
            f"memory limit: controller + sim RSS {sampler.rss_total() / 2**30:.1f} GiB "
            f"> {memory_limit_gib:.1f} GiB"
        )
    if sampler.min_available < MIN_AVAILABLE_GIB * 2**30:
        return f"memory limit: host available memory below {MIN_AVAILABLE_GIB} GiB"
    if not proc.alive() or sim.proc.poll() is not None:
        return "a process exited:\n" + str(proc.tail(10))
    return None


def _usage(
    watch: PodCounts,
    sampler: Sampler,
    cpu: dict[str, float],
    rss0: dict[str, int],
    wall: float,
) -> dict[str, Any]:
    """Pods seen, scheduled and Running, and what the processes used over the step."""
    return {
        "pods_seen": len(watch.seen),
        "pods_scheduled": len(watch.scheduled),
        "pods_running": len(watch.running),
        "pods_per_second": round(len(watch.running) / wall, 1) if wall else 0.0,
        "cpu_seconds": {k: round(v, 2) for k, v in cpu.items()},
        "cpu_share": {k: round(v / wall, 3) for k, v in cpu.items()} if wall else {},
        "rss_start_mib": {k: round(v / 2**20, 1) for k, v in rss0.items()},
        "rss_peak_mib": {k: round(v / 2**20, 1) for k, v in sampler.peak.items()},
        "host_min_available_gib": round(sampler.min_available / 2**30, 2),
        "load_1m_max": round(sampler.max_load, 2),
    }


def start_profiles(out: Path, pods: int, controller: int, sim: int) -> list[profiling.Spy]:
    """py-spy on the controller and the simulator for the step (`--profile DIR`)."""
    out.mkdir(parents=True, exist_ok=True)
    return [
        profiling.start(name, pid, out / f"{name}_{pods}.txt")
        for name, pid in (("controller", controller), ("sim", sim))
    ]


def stop_profiles(spies: list[profiling.Spy]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for spy in spies:
        profiling.stop(spy)
        parts = sim_parts.part_of if spy.name == "sim" else None
        out[spy.name] = profiling.summarise_file(
            spy.out, ("kubesim", "jobset", "kubeutil"), parts=parts
        )
    return out


def bottleneck(step: dict[str, Any]) -> str | None:
    """The process that used the most CPU over the step, with its share of the wall time."""
    share = step.get("cpu_share") or {}
    if not share:
        return None
    name = max(share, key=lambda k: share[k])
    return f"{name} ({share[name]:.2f} core)"


def predict(steps: Sequence[dict[str, Any]], pods: int) -> tuple[float, float] | None:
    """Seconds to all Running at `pods`, and the exponent k of t ~ pods^k, from the last two
    completed steps (a step's fixed costs make k an underestimate at small sizes)."""
    done = [s for s in steps if s["completed"] and s["seconds"].get("running")]
    if len(done) < 2:
        return None
    (n1, t1), (n2, t2) = [(s["pods"], s["seconds"]["running"]) for s in done[-2:]]
    k = max(1.0, math.log(t2 / t1) / math.log(n2 / n1)) if n2 > n1 and t2 > t1 else 1.0
    return t2 * (pods / n2) ** k, k


async def run_series(
    sizes: Sequence[int],
    *,
    dns_hostnames: bool = True,
    step_limit: float = STEP_LIMIT,
    progress: Any = None,
    **step: Any,
) -> dict[str, Any]:
    """Steps in increasing size until one does not complete, or is predicted to take more
    than twice the step limit (not run then: `skipped` says so)."""
    steps: list[dict[str, Any]] = []
    skipped: dict[str, Any] | None = None
    for pods in sorted(sizes):
        guess = predict(steps, pods)
        if guess is not None and guess[0] > 2 * step_limit:
            skipped = {
                "pods": pods,
                "reason": f"predicted {guess[0]:.0f} s to all Running (t ~ pods^{guess[1]:.1f} "
                f"from the last two steps) > 2 x the {step_limit:.0f} s step limit",
            }
            break
        if progress is not None:
            progress(f"pod scale {pods} pods ({SERIES[dns_hostnames]}) ...")
        result = await run_step(pods, dns_hostnames=dns_hostnames, step_limit=step_limit, **step)
        steps.append(result)
        if progress is not None:
            progress(one_line(result))
        if not result["completed"]:
            break
    return summarize_series(steps, dns_hostnames=dns_hostnames, skipped=skipped)


def summarize_series(
    steps: list[dict[str, Any]], *, dns_hostnames: bool, skipped: dict[str, Any] | None
) -> dict[str, Any]:
    """A series' record from its steps: the largest completed, whether the anchor's size ran
    within the anchor's time, and where (and why) the climb stopped."""
    done = [s for s in steps if s["completed"]]
    largest = max(done, key=lambda s: s["pods"]) if done else None
    anchor = next((s for s in done if s["pods"] >= ANCHOR_PODS), None)
    failed = next((s for s in steps if not s["completed"]), None)
    return {
        "series": SERIES[dns_hostnames],
        "dns_hostnames": dns_hostnames,
        "steps": steps,
        "largest": None
        if largest is None
        else {
            "pods": largest["pods"],
            "jobs": largest["jobs"],
            "seconds_to_all_running": largest["seconds"]["running"],
            "pods_per_second": largest["pods_per_second"],
            "ratio_to_anchor": largest["ratio_to_anchor"],
            "bottleneck": bottleneck(largest),
        },
        "anchor_size_within_anchor_time": None
        if anchor is None
        else anchor["seconds"]["running"] <= ANCHOR_SECONDS,
        "stopped": skipped
        if failed is None
        else {"pods": failed["pods"], "reason": failed.get("stopped", "")},
    }


async def run(
    sizes: Sequence[int],
    *,
    series: Sequence[bool] = (True, False),
    step_limit: float = STEP_LIMIT,
    memory_limit_gib: float = MEMORY_LIMIT_GIB,
    progress: Any = None,
    **step: Any,
) -> dict[str, Any]:
    """Every series (`True`: the JobSet as written by default, with its headless Service;
    `False`: `enableDNSHostnames: false`), each climbing through `sizes`."""
    out = [
        await run_series(
            sizes,
            dns_hostnames=dns,
            step_limit=step_limit,
            memory_limit_gib=memory_limit_gib,
            progress=progress,
            **step,
        )
        for dns in series
    ]
    return {
        "series": out,
        "sizes": sorted(sizes),
        "step_limit_seconds": step_limit,
        "memory_limit_gib": memory_limit_gib,
        "anchor": {
            "pods": ANCHOR_PODS,
            "seconds": ANCHOR_SECONDS,
            "pods_per_second": round(ANCHOR_RATE, 1),
        },
    }


def one_line(s: dict[str, Any]) -> str:
    head = f"pod scale {s['jobs']} Jobs x {s['pods_per_job']} pods ({s['pods']} pods, "
    head += f"{s['nodes']} nodes): "
    if "seconds" not in s:
        return head + f"failed ({s.get('stopped', '')[:200]})"
    secs = s["seconds"]
    parts = [
        f"{k.replace('_', ' ')} {secs[k]:.1f}s"
        for k in ("jobs_created", "created", "scheduled", "running")
        if k in secs
    ]
    cpu = ", ".join(f"{k} {v:.1f}s" for k, v in s["cpu_seconds"].items())
    text = head + ", ".join(parts) + f"; {s['pods_per_second']:.0f} pods/s "
    text += f"({s['ratio_to_anchor']:.2f} x anchor); CPU {cpu}"
    if not s["completed"]:
        text += f"; STOPPED at {s['pods_running']} Running: {s['stopped'][:200]}"
    return text


def _record(
    name: str, data: dict[str, Any], started: str, argv: list[str] | None, wall: float
) -> None:
    """The step's data as a run of `benchmarks.run` holding only its pod-scale section."""
    args = sys.argv[1:] if argv is None else argv
    run: dict[str, Any] = {
        "benchmark": "scale",
        "machine": machine(),
        "started": started,
        "commit": commit(),
        "command": " ".join(["python -m benchmarks.pod_scale", *args]),
        "wall_seconds": round(wall, 1),
        "options": {
            "sizes": [s["pods"] for s in data["series"][0]["steps"]] if data["series"] else []
        },
        "runs": [],
        "pod_scale": data,
    }
    out = RESULTS / f"scale_{name}.json"
    out.write_text(json.dumps(run, indent=2) + "\n")
    print(f"wrote {out}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--pods", default=",".join(map(str, LARGE_PODS)), help="pods per step")
    p.add_argument("--pods-per-job", type=int, default=PODS_PER_JOB)
    p.add_argument("--pods-per-node", type=int, default=PODS_PER_NODE)
    p.add_argument("--step-limit", type=float, default=STEP_LIMIT, help="seconds per step")
    p.add_argument("--memory-limit-gib", type=float, default=MEMORY_LIMIT_GIB)
    p.add_argument("--out", default=None, help="JSON file")
    p.add_argument(
        "--profile",
        default=None,
        metavar="DIR",
        help="record the controller and the simulator with py-spy (raw stacks in DIR)",
    )
    p.add_argument(
        "--series",
        default="service,no-service",
        help="service: the JobSet's default headless Service (network.enableDNSHostnames); "
        "no-service: enableDNSHostnames false; comma-separated, run in that order",
    )
    p.add_argument(
        "--record",
        default=None,
        metavar="NAME",
        help="also write results/scale_NAME.json as benchmarks.run does, for RESULTS.md "
        "(python -m benchmarks.report)",
    )
    args = p.parse_args(argv)
    names = [x for x in args.series.split(",") if x]
    for name in names:
        if name not in ("service", "no-service"):
            p.error(f"--series: unknown series {name!r} (known: service, no-service)")
    if args.profile and not profiling.available():
        p.error("--profile needs py-spy on PATH (pip install py-spy)")
    sizes = [int(x) for x in args.pods.split(",") if x]
    started = datetime.now(UTC).isoformat(timespec="seconds")
    t_start = time.monotonic()
    configure_logging("console", "WARNING")
    data = asyncio.run(
        run(
            sizes,
            per_job=args.pods_per_job,
            per_node=args.pods_per_node,
            step_limit=args.step_limit,
            memory_limit_gib=args.memory_limit_gib,
            progress=print,
            profile=Path(args.profile) if args.profile else None,
            series=[x == "service" for x in names],
        )
    )
    if args.out:
        Path(args.out).write_text(json.dumps(data, indent=2) + "\n")
    if args.record:
        _record(args.record, data, started, argv, time.monotonic() - t_start)
    for ser in data["series"]:
        print(json.dumps({k: v for k, v in ser.items() if k != "steps"}, indent=2))
    return 0 if all(ser["largest"] is not None for ser in data["series"]) else 1


if __name__ == "__main__":
    sys.exit(main())
