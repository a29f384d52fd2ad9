"""The machinery of the scale benchmarks: processes, measurements, the observer.

One *phase* is one side of a comparison: a fresh `jobset sim --sim-level jobs` process, the
JobSet CRD, and the measured process - the controller (`jobset controller`) or the
baseline (`python -m benchmarks.baseline`) - started and synced before the clock starts.
The harness (this process) plays the user (creates JobSets, fails a Job) and watches Jobs
and JobSets with its own informers: every time reported is wall time between two events
seen on those watches (or between the harness's own action and an event).

Measured, for the measured process only: CPU seconds (user + system, psutil) over the
scenario's window, peak and settled RSS (sampled every 50 ms), and the API requests the
simulated server served to it, by verb and resource (`/debug/requests`, counted per user
agent, so the harness's own requests are not included).

Each phase gets its own sim so both sides start from an identical, empty cluster: sharing
one server would hand the second side the first side's objects and watch history.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import psutil
from prometheus_client.parser import text_string_to_metric_families

from benchmarks.workload import (
    BASELINE_AGENT,
    CONTROLLER_AGENT,
    JOBSETS,
    NAMESPACE,
    OBSERVER_USER_AGENT,
    attempt_of,
    condition_true,
)
from jobset.api import constants as c
from jobset.controllers.crd import apply_crds
from jobset.runtime.client import JOBS, NAMESPACES, ApiError, Client, Object
from jobset.runtime.informer import FuncHandler, Informer
from kubesim.process import SimProcess, controller_command, free_port, start_sim

ROOT = Path(__file__).resolve().parents[1]
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})


@dataclass(frozen=True)
class Options:
    """What both sides of a comparison share."""

    qps: float = 500.0
    burst: int = 500
    concurrency: int = 5
    parallelism: int = c.MAX_PARALLELISM
    time_scale: float = 1.0
    timeout: float = 600.0


# ---------------------------------------------------------------------- the measured process


class Measured:
    """A child process whose CPU and memory are measured (psutil), with a 50 ms RSS sampler."""

    def __init__(
        self,
        side: str,
        cmd: list[str],
        log: Path,
        metrics_port: int | None = None,
        health_port: int | None = None,
    ):
        self.side = side
        self.health_port = health_port
        self.agent = CONTROLLER_AGENT if side == "controller" else BASELINE_AGENT
        self.metrics_port = metrics_port
        self.log_path = log
        self._log = log.open("a")
        self.spawned = time.monotonic()
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=self._log, text=True, cwd=ROOT
        )
        self.ps = psutil.Process(self.proc.pid)
        self.peak_rss = 0
        self.lines: list[tuple[float, str]] = []
        self._stop = threading.Event()
        threading.Thread(target=self._sample, daemon=True).start()
        threading.Thread(target=self._read, daemon=True).start()

    def _sample(self) -> None:
        while not self._stop.is_set():
            try:
                self.peak_rss = max(self.peak_rss, self.ps.memory_info().rss)
            except psutil.Error:
                return
            time.sleep(0.05)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append((time.monotonic(), line))
            self._log.write(line)
            self._log.flush()

    def cpu(self) -> float:
        t = self.ps.cpu_times()
        return float(t.user + t.system)

    def rss(self) -> int:
        return int(self.ps.memory_info().rss)

    def reset_peak(self) -> None:
        self.peak_rss = self.rss()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._stop.set()
        self._log.close()

    def tail(self, n: int = 30) -> str:
        with contextlib.suppress(OSError):
            return "".join(self.log_path.read_text().splitlines(keepends=True)[-n:])
        return ""


async def prepared_client(sim: SimProcess, user_agent: str | None = None) -> Client:
    """An unthrottled client of `sim` with the JobSet CRDs applied and the benchmark's
    namespaces created: what every benchmark does first on its fresh simulator."""
    extra: dict[str, Any] = {} if user_agent is None else {"user_agent": user_agent}
    client = await Client.connect(str(sim.kubeconfig), qps=0, burst=0, **extra)
    try:
        await apply_crds(client)
        for ns in (NAMESPACE, "jobset-system"):
            with contextlib.suppress(ApiError):
                await client.create(NAMESPACES, {"metadata": {"name": ns}})
    except BaseException:
        await client.close()
        raise
    return client


def start_controller(
    sim: SimProcess, tmp: Path, opts: Options, extra: Sequence[str] = ()
) -> Measured:
    """`jobset controller` on `sim` at the shipped defaults but for `opts` (and `extra`
    flags, e.g. a feature gate)."""
    metrics, health = free_port(), free_port()
    cmd = controller_command(
        sim.kubeconfig,
        "--metrics-port",
        str(metrics),
        # Plain HTTP, the explicit opt-in: the harness scrapes its own loopback controller
        # (the default is HTTPS with TokenReview, which the benchmark does not measure).
        "--metrics-secure=false",
        "--health-port",
        str(health),
        "--webhook-port",
        str(free_port()),
        "--bind-address",
        "127.0.0.1",
        "--concurrency",
        str(opts.concurrency),
        "--qps",
        str(opts.qps),
        "--burst",
        str(opts.burst),
        *extra,
    )
    return Measured(
        "controller", cmd, tmp / "controller.log", metrics_port=metrics, health_port=health
    )


def start_baseline(sim: SimProcess, tmp: Path, opts: Options) -> Measured:
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.baseline",
        "--kubeconfig",
        str(sim.kubeconfig),
        "--qps",
        str(opts.qps),
        "--burst",
        str(opts.burst),
        "--concurrency",
        str(opts.concurrency),
        "--parallelism",
        str(opts.parallelism),
    ]
    return Measured("baseline", cmd, tmp / "baseline.log")


async def wait_ready(m: Measured, within: float = 120.0) -> float:
    """Until the process's caches are synced and it works; returns the monotonic time."""
    deadline = time.monotonic() + within
    if m.side == "baseline":
        while time.monotonic() < deadline:
            for t, line in m.lines:
                if line.startswith("baseline ready"):
                    return float(line.split()[2]) if len(line.split()) > 2 else t
            if not m.alive():
                break
            await asyncio.sleep(0.02)
        raise RuntimeError(f"baseline not ready:\n{m.tail()}")
    port = m.health_port
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            with contextlib.suppress(aiohttp.ClientError, OSError):
                async with session.get(f"http://127.0.0.1:{port}/readyz") as resp:
                    if resp.status == 200:
                        return time.monotonic()
            if not m.alive():
                break
            await asyncio.sleep(0.02)
    raise RuntimeError(f"controller not ready:\n{m.tail()}")


async def controller_metrics(m: Measured) -> dict[str, float]:
    """A few samples of the controller's /metrics, summed over other labels."""
    out: dict[str, float] = defaultdict(float)
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{m.metrics_port}/metrics") as resp,
    ):
        text = await resp.text()
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.labels.get("controller") == "jobset" or s.labels.get("name") == "jobset":
                out[s.name] += s.value
    return dict(out)


async def wait_synced(m: Measured, jobsets: int, within: float = 600.0) -> float:
    """Until every JobSet was reconciled once and the work queue is empty (controller), or
    the caches are synced (baseline); returns the monotonic time."""
    if m.side == "baseline":
        return await wait_ready(m, within)
    await wait_ready(m, within)
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        with contextlib.suppress(aiohttp.ClientError, OSError):
            s = await controller_metrics(m)
            if (
                s.get("controller_runtime_reconcile_total", 0) >= jobsets
                and s.get("workqueue_depth", 0) == 0
                and s.get("controller_runtime_active_workers", 0) == 0
            ):
                return time.monotonic()
        await asyncio.sleep(0.05)
    raise TimeoutError(f"controller not synced:\n{m.tail()}")


# Longer than any work the controller defers on purpose: it writes a change of Job counts
# alone at most once a second per JobSet (`counts_interval`), so a shorter quiet spell can
# fall between a change and its write - and a process restarted then writes it afterwards.
QUIET_SECONDS = 1.5


async def wait_idle(
    m: Measured, *, quiet: float = QUIET_SECONDS, threshold: float = 0.02, within: float = 60.0
) -> float:
    """Until the process used less than `threshold` CPU seconds over `quiet` seconds."""
    t0 = time.monotonic()
    samples: list[tuple[float, float]] = [(t0, m.cpu())]
    while time.monotonic() - t0 < within:
        await asyncio.sleep(0.1)
        now, cpu = time.monotonic(), m.cpu()
        samples.append((now, cpu))
        old = [s for s in samples if now - s[0] >= quiet]
        if old and cpu - old[-1][1] < threshold:
            return now
    return time.monotonic()


# ---------------------------------------------------------------------- requests


async def request_counts(client: Client, agent: str) -> dict[str, int]:
    """Requests the sim served to one user agent so far: {"verb resource": count}."""
    body = await client.request("GET", "/debug/requests")
    return {
        f"{r['verb']} {r['resource']}": int(r["count"])
        for r in body["byUserAgent"]
        if r["userAgent"] == agent
    }


def diff_counts(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    out = {k: v - before.get(k, 0) for k, v in after.items()}
    return {k: v for k, v in sorted(out.items()) if v}


def writes(counts: dict[str, int]) -> int:
    return sum(v for k, v in counts.items() if k.split()[0] in WRITE_VERBS)


# ---------------------------------------------------------------------- the observer


def _thin(obj: Object) -> Object:
    meta = obj.get("metadata") or {}
    status = obj.get("status") or {}
    return {
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "labels", "ownerReferences")
            if k in meta
        },
        "status": {
            k: status[k]
            for k in ("conditions", "ready", "active", "restarts", "terminalState")
            if k in status
        },
    }


class Observer:
    """The harness's watches on Jobs and JobSets, with the time each event was seen."""

    def __init__(self, client: Client) -> None:
        self.jobs = Informer(client, JOBS, namespace=NAMESPACE, transform=_thin)
        self.jobsets = Informer(client, JOBSETS, namespace=NAMESPACE, transform=_thin)
        self.added: dict[int, list[float]] = defaultdict(list)  # per restart attempt
        self.deleted: dict[int, list[float]] = defaultdict(list)
        self.ready: dict[int, set[str]] = defaultdict(set)
        self.complete: set[str] = set()
        self.completed_jobsets: dict[str, float] = {}
        self.last_event = time.monotonic()
        self.jobs.add_event_handler(
            FuncHandler(
                add=self._job_added, update=lambda _o, n: self._job_changed(n), delete=self._gone
            )
        )
        self.jobsets.add_event_handler(
            FuncHandler(add=self._jobset, update=lambda _o, n: self._jobset(n))
        )

    async def start(self) -> None:
        self.jobs.start()
        self.jobsets.start()
        await self.jobs.wait_for_sync(60)
        await self.jobsets.wait_for_sync(60)

    async def stop(self) -> None:
        await self.jobs.stop()
        await self.jobsets.stop()

    def _job_added(self, job: Object) -> None:
        self.last_event = t = time.monotonic()
        self.added[attempt_of(job)].append(t)
        self._job_changed(job)

    def _job_changed(self, job: Object) -> None:
        self.last_event = time.monotonic()
        uid = str(job["metadata"].get("uid"))
        status = job.get("status") or {}
        if int(status.get("ready") or 0) > 0:
            self.ready[attempt_of(job)].add(uid)
        if condition_true(job, "Complete"):
            self.complete.add(uid)

    def _gone(self, job: Object) -> None:
        self.last_event = t = time.monotonic()
        self.deleted[attempt_of(job)].append(t)

    def _jobset(self, js: Object) -> None:
        self.last_event = t = time.monotonic()
        uid = str(js["metadata"].get("uid"))
        if uid not in self.completed_jobsets and condition_true(js, c.CONDITION_COMPLETED):
            self.completed_jobsets[uid] = t

    def nth_added(self, attempt: int, n: int) -> float:
        return sorted(self.added[attempt])[n - 1]

    async def until(self, what: str, predicate: Callable[[], bool], within: float) -> None:
        deadline = time.monotonic() + within
        while not predicate():
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {within:.0f}s waiting for {what}")
            await asyncio.sleep(0.02)


# ---------------------------------------------------------------------- a phase


@dataclass
class Phase:
    """One side of one scenario at one size: its own sim, observer and measured process."""

    side: str
    opts: Options
    tmp: Path
    sim: SimProcess
    client: Client
    observer: Observer
    proc: Measured
    sim_ps: psutil.Process
    extra: dict[str, Any] = field(default_factory=dict)

    def spawn(self) -> Measured:
        start = start_controller if self.side == "controller" else start_baseline
        return start(self.sim, self.tmp, self.opts)

    async def restart_measured(self) -> Measured:
        """Stop the measured process and start a new one (the clock is the caller's)."""
        self.proc.stop()
        self.proc = self.spawn()
        return self.proc


@contextlib.asynccontextmanager
async def phase(side: str, opts: Options) -> Any:
    """Start sim, CRD, observer and the measured process; stop them all at the end."""
    tmp = Path(tempfile.mkdtemp(prefix=f"bench-{side}-"))
    sim = start_sim(tmp, "--sim-level", "jobs", "--time-scale", str(opts.time_scale))
    client: Client | None = None
    observer: Observer | None = None
    proc: Measured | None = None
    try:
        client = await prepared_client(sim, OBSERVER_USER_AGENT)
        observer = Observer(client)
        await observer.start()
        p = Phase(side, opts, tmp, sim, client, observer, None, psutil.Process(sim.proc.pid))  # type: ignore[arg-type]
        p.proc = proc = p.spawn()
        await wait_ready(proc)
        await wait_idle(proc, quiet=0.5)
        p.extra["idle_rss_bytes"] = proc.rss()
        yield p
        proc = p.proc
    finally:
        if proc is not None:
            proc.stop()
        if observer is not None:
            await observer.stop()
        if client is not None:
            await client.close()
        sim.stop()
        if os.environ.get("BENCH_KEEP_TMP") is None:
            _rmtree(tmp)


def _rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


@dataclass
class Window:
    """CPU, memory and requests of the measured process (and the sim's CPU) over a span."""

    phase: Phase
    cpu0: float = 0.0
    sim_cpu0: float = 0.0
    counts0: dict[str, int] = field(default_factory=dict)
    t0: float = 0.0

    async def open(self) -> Window:
        p = self.phase
        self.counts0 = await request_counts(p.client, p.proc.agent)
        p.proc.reset_peak()
        self.rss0 = p.proc.rss()
        self.cpu0 = p.proc.cpu()
        self.sim_cpu0 = _cpu(p.sim_ps)
        self.t0 = time.monotonic()
        return self

    async def close(self, *, settle: bool = True) -> dict[str, Any]:
        p = self.phase
        if settle:
            await wait_idle(p.proc)
        cpu = p.proc.cpu() - self.cpu0
        sim_cpu = _cpu(p.sim_ps) - self.sim_cpu0
        counts = diff_counts(await request_counts(p.client, p.proc.agent), self.counts0)
        return {
            "cpu_seconds": round(cpu, 3),
            "sim_cpu_seconds": round(sim_cpu, 3),
            "rss_start_mib": round(self.rss0 / 2**20, 1),
            "rss_peak_mib": round(p.proc.peak_rss / 2**20, 1),
            "rss_end_mib": round(p.proc.rss() / 2**20, 1),
            "requests": counts,
            "writes": writes(counts),
        }


def _cpu(ps: psutil.Process) -> float:
    t = ps.cpu_times()
    return float(t.user + t.system)


def machine() -> str:
    import platform

    return (
        f"{platform.machine()}, {psutil.cpu_count()} cpu, "
        f"{round(psutil.virtual_memory().total / 2**30)} GiB, Python {platform.python_version()}"
    )


def chunks(n: int, size: int) -> Iterator[range]:
    for i in range(0, n, size):
        yield range(i, min(n, i + size))


def commit() -> str | None:
    """The checkout's commit, `+dirty` when it has uncommitted changes, so that RESULTS.md
    says what code each figure comes from; None outside a git checkout."""
    repo = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True)
        except OSError:
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    head = git("rev-parse", "--short=12", "HEAD")
    if head is None:
        return None
    return head + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")
