"""Pod admission under load: the pod webhooks at 1,000 pod creations/s, and
the simulated Job controller's pod creation rate with the webhooks against without them.

The webhook process is the controller harness (`tests/integration/placement/harness.py
--no-reconciler`: the pod and JobSet webhooks over TLS with their caches, as `jobset
controller` serves them, in one asyncio process - one core at most).

- `load`: open-loop generators (`GENERATORS` processes) send, at `RATE` pods a second for
  `SECONDS`, each pod's two admission calls in the order kube-apiserver makes them
  (mutating, then validating) straight to the webhook port, over `WARM_CONNECTIONS`
  kept-alive connections each, opened before the run (`benchmarks/keepalive.py`). The pods
  are what the Job controller creates for a JobSet with exclusive placement
  (`alpha.jobset.sigs.k8s.io/exclusive-topology`, the affinity strategy): leader pods
  (completion index 0), the ones the mutating webhook does the most for (it computes their
  exclusive affinities), built from the controller's own Job bodies. A pod's latency runs
  from the time it was due (not when it was sent: a stalled webhook must not hide its
  backlog) to the validating answer. Reported: admissions/s sustained, p50/p99/max latency,
  the worst latency per half second, the webhook process's CPU seconds per admission and
  its share of one core - and, to tell the webhook's time from the shared machine's, its
  server-side review time, event-loop lag and GC pauses (scraped from its /metrics), the
  seconds its loop thread waited runnable for a CPU, the generators' CPU per pod and the
  load average.
- `jobs`: on `jobset sim --sim-level pods`, `JOBS` Jobs of `PODS` pods each (JobSet pods,
  as the controller builds them) are created at once and the time until every pod exists is
  taken from the harness's pod watch - once with the webhooks registered, once without
  (configurations deleted; the same webhook process still runs). Ratio: with / without
  pods per second; each phase also gives the simulator's and the webhook's CPU per pod.
  Each phase starts once both processes are idle, so the second is not charged for the
  first one's pods still finishing.
  `python -m benchmarks.admission jobs [RUNS]` runs this comparison alone, on RUNS fresh
  clusters, and reports the medians.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import shutil
import ssl
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import psutil
from prometheus_client.parser import text_string_to_metric_families

from benchmarks.harness import ROOT
from benchmarks.keepalive import KeepAlivePool, request_bytes
from benchmarks.workload import FINISH, JOBSETS, NAMESPACE, jobset
from jobset.api import constants as c
from jobset.controllers.crd import apply_crds
from jobset.controllers.plan import PlanInput, plan
from jobset.runtime.cache import strip_managed_fields
from jobset.runtime.client import JOBS, NAMESPACES, PODS, ApiError, Client, Object
from jobset.runtime.informer import FuncHandler, Informer
from jobset.webhooks.certcontroller import MUTATING_CONFIGURATIONS, VALIDATING_CONFIGURATIONS
from jobset.webhooks.manifests import MUTATING, VALIDATING
from kubesim.process import SimProcess, free_port, start_sim
from kubeutil.gcfreeze import GcFreezer
from tests.integration.placement.process import HarnessProcess, start_harness

RATE = 1000.0
SECONDS = 5.0
DISTINCT_PODS = 500  # distinct leader pods, reused round robin
JOBS_B, PODS_B = 16, 32
GOAL_P99_MS = 20.0
GOAL_POD_RATE = 0.9
POOL_KEY = "cloud.google.com/gke-nodepool"


def _exclusive(name: str, jobs: int, pods: int) -> dict[str, Any]:
    js = jobset(name, jobs, command=FINISH)
    js["metadata"]["annotations"] = {c.EXCLUSIVE_KEY: POOL_KEY}
    spec = js["spec"]["replicatedJobs"][0]["template"]["spec"]
    spec["parallelism"] = spec["completions"] = pods
    spec["completionMode"] = "Indexed"
    return js


async def _jobs_of(client: Client, js: dict[str, Any]) -> list[Object]:
    """The controller's Job bodies for `js` (created in the cluster, planned here)."""
    await client.create(JOBSETS, js)
    stored = strip_managed_fields(await client.get(JOBSETS, js["metadata"]["name"], NAMESPACE))
    p = plan(PlanInput(jobset=stored, jobs=[], now=datetime.now(UTC)))
    return [dict(j) for j in p.create_jobs]


def leader_pod(job: Object) -> Object:
    """Pod 0 of `job` as the Job controller creates it (owner reference, index annotation)."""
    tmpl = job["spec"]["template"]
    meta = tmpl.get("metadata") or {}
    name = job["metadata"]["name"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-0-{uuid.uuid4().hex[:5]}",
            "namespace": NAMESPACE,
            "labels": {
                **(meta.get("labels") or {}),
                "batch.kubernetes.io/job-name": name,
                "batch.kubernetes.io/job-completion-index": "0",
            },
            "annotations": {
                **(meta.get("annotations") or {}),
                c.JOB_COMPLETION_INDEX_ANNOTATION: "0",
            },
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": name,
                    "uid": str(uuid.uuid4()),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {**tmpl["spec"], "hostname": f"{name}-0"},
    }


def review(pod: Object) -> bytes:
    return orjson.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": str(uuid.uuid4()),
                "kind": {"group": "", "version": "v1", "kind": "Pod"},
                "resource": {"group": "", "version": "v1", "resource": "pods"},
                "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
                "requestResource": {"group": "", "version": "v1", "resource": "pods"},
                "name": pod["metadata"]["name"],
                "namespace": NAMESPACE,
                "operation": "CREATE",
                "userInfo": {
                    "username": "system:serviceaccount:kube-system:job-controller",
                    "uid": "job-controller",
                    "groups": ["system:serviceaccounts", "system:authenticated"],
                },
                "object": pod,
                "oldObject": None,
                "dryRun": False,
                "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
            },
        }
    )


def _pct(xs: list[float], q: float) -> float:
    if not xs:
        return 0.0
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


GENERATORS = 2  # load-generator processes, one per core of the benchmark machine: with the
# lean client one could send all 2,000 requests a second (~0.3 ms CPU per pod), but two keep
# each one's own loop lag (which counts in the latency) small. Three made the p99 4-8 x
# worse on 2 cores: more processes than cores, each send waking one that preempts the
# webhook under test.
# Kept-alive connections of each generator, all opened before the run (kube-apiserver at
# this rate holds its connections already); beyond them requests wait for a free one, and
# that wait counts in their latency. A pool that dials whenever none is free (Go's default
# transport) turned each 100 ms stall of this shared machine into a burst of ~250 TLS
# handshakes, a second of the webhook's CPU, and a 1.5 s p99 (docs/benchmarks.md).
WARM_CONNECTIONS = 32


def quiet_collector() -> None:
    """Freeze the generator's heap after its set-up, as the webhook process freezes its own.

    A generator stands in for kube-apiserver, whose Go collector runs beside it; CPython's
    stops the loop for each collection, and a full one walks every tracked object - the
    imports, the prebuilt reviews. With 1,000 pods a second in flight such a collection
    came about 2 s into every run and paused the generator for ~50 ms: every pod due
    meanwhile was sent late, and since latency counts from when a pod was due, the
    generator's own pause was the p99 the run reported for the webhook (11-55 ms, against
    2.4-3.0 ms once frozen). The frozen count and the full collections during the run are
    reported, so a run shows its generators did not pause this way.
    """
    freezer = GcFreezer()  # its callback stays installed: later full collections freeze too
    freezer.install()
    freezer.collect_and_freeze()


async def generate(port: int, bodies: list[bytes], rate: float, seconds: float) -> dict[str, Any]:
    """One generator process: open loop at `rate` pods/s; returns latencies (ms), in the
    order the pods were due."""
    tls = ssl.create_default_context()
    tls.check_hostname = False  # loopback load generator: the webhook's serving cert is
    tls.verify_mode = ssl.CERT_NONE  # for the Service name; the sim verifies it, not this
    total = int(rate * seconds)
    latencies = [0.0] * max(total, WARM_CONNECTIONS)
    errors = 0
    host = f"127.0.0.1:{port}"
    paths = (c.MUTATING_POD_WEBHOOK_PATH, c.VALIDATING_POD_WEBHOOK_PATH)
    requests = [tuple(request_bytes(host, p, b) for p in paths) for b in bodies]
    pool = KeepAlivePool("127.0.0.1", port, tls, limit=WARM_CONNECTIONS)
    try:
        await pool.warm(WARM_CONNECTIONS)
        dialled = pool.opened

        async def one(i: int, due: float) -> None:
            nonlocal errors
            for raw in requests[i % len(requests)]:
                try:
                    status, answer = await pool.post(raw)
                except OSError:
                    errors += 1
                    continue
                if status != 200 or b'"allowed":true' not in answer.replace(b" ", b""):
                    errors += 1
            latencies[i] = 1000 * (time.monotonic() - due)

        # Warm up the handlers' first calls on every connection.
        await asyncio.gather(*(one(i, time.monotonic()) for i in range(WARM_CONNECTIONS)))
        errors = 0
        quiet_collector()
        print("generator ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        full0 = gc.get_stats()[2]["collections"]
        cpu0 = time.process_time()
        t0 = time.monotonic() + 0.05
        tasks = []
        for i in range(total):
            due = t0 + i / rate
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.ensure_future(one(i, due)))
        await asyncio.gather(*tasks)
        wall = time.monotonic() - t0
        cpu = time.process_time() - cpu0
        full_collections = gc.get_stats()[2]["collections"] - full0
    finally:
        pool.close()
    return {
        "latencies_ms": latencies[:total],
        "errors": errors,
        "frozen_objects": gc.get_freeze_count(),
        "full_collections_during_run": full_collections,
        "seconds": wall,
        "cpu_seconds": cpu,
        "connections_opened_during_run": pool.opened - dialled,
        "idle_connections_closed_by_server": pool.closed_idle,
    }


def runqueue_wait(pid: int) -> float:
    """Seconds the process's main thread (its event loop) has spent runnable but waiting
    for a CPU (Linux schedstat; 0 where it is not available): on a shared machine, the
    part of a stall that is the machine's, not the webhook's."""
    try:
        fields = Path(f"/proc/{pid}/schedstat").read_text().split()
    except OSError:
        return 0.0
    return int(fields[1]) / 1e9


Histograms = dict[str, dict[float, float]]  # metric name -> bucket bound -> count (+ sum)


async def scrape(metrics_port: int) -> Histograms:
    """The webhook process's histograms this benchmark reports, summed over labels:
    server-side review time, event-loop lag, GC pauses (bucket bound -> cumulative count;
    key -1: the sum, -2: the count)."""
    wanted = {
        "controller_runtime_webhook_latency_seconds",
        "asyncio_event_loop_lag_seconds",
        "python_gc_duration_seconds",
    }
    out: Histograms = {name: {} for name in wanted}
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{metrics_port}/metrics") as resp,
    ):
        text = await resp.text()
    for family in text_string_to_metric_families(text):
        if family.name not in wanted:
            continue
        h = out[family.name]
        for sample in family.samples:
            if sample.name.endswith("_bucket"):
                le = float(sample.labels["le"])
                h[le] = h.get(le, 0.0) + sample.value
            elif sample.name.endswith("_sum"):
                h[-1] = h.get(-1, 0.0) + sample.value
            elif sample.name.endswith("_count"):
                h[-2] = h.get(-2, 0.0) + sample.value
    return out


def _bucket_quantile(before: dict[float, float], after: dict[float, float], q: float) -> float:
    """The upper bound of the bucket holding quantile `q` of what was observed between
    two scrapes (inf: past the last bound; 0: nothing observed)."""
    count = after.get(-2, 0.0) - before.get(-2, 0.0)
    if count <= 0:
        return 0.0
    for le in sorted(k for k in after if k >= 0):
        if after[le] - before.get(le, 0.0) >= q * count:
            return le
    return float("inf")


def server_side(before: Histograms, after: Histograms) -> dict[str, Any]:
    """What the webhook process itself adds, between two scrapes."""
    out: dict[str, Any] = {}
    for key, name in (
        ("review", "controller_runtime_webhook_latency_seconds"),
        ("loop_lag", "asyncio_event_loop_lag_seconds"),
        ("gc_pause", "python_gc_duration_seconds"),
    ):
        b, a = before[name], after[name]
        n = a.get(-2, 0.0) - b.get(-2, 0.0)
        total = a.get(-1, 0.0) - b.get(-1, 0.0)
        out[f"{key}_count"] = int(n)
        out[f"{key}_mean_ms"] = round(1000 * total / n, 3) if n else 0.0
        out[f"{key}_p99_le_ms"] = round(1000 * _bucket_quantile(b, a, 0.99), 1)
    out["gc_pause_total_ms"] = round(
        1000
        * (
            after["python_gc_duration_seconds"].get(-1, 0.0)
            - before["python_gc_duration_seconds"].get(-1, 0.0)
        ),
        1,
    )
    return out


async def _start_generator(port: int, bodies: Path) -> asyncio.subprocess.Process:
    """One load generator process (`generate`), waiting for its go signal on stdin."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "benchmarks.admission",
        "generate",
        str(port),
        str(bodies),
        str(RATE / GENERATORS),
        str(SECONDS),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        cwd=ROOT,
    )


def _worst_by_half_second(results: list[dict[str, Any]]) -> list[float]:
    """The worst latency of the pods due in each half second: a stall shows as one bad
    slot, a webhook that cannot keep up as slots growing worse to the end."""
    per_slot = int(RATE / GENERATORS / 2)
    slots = max(len(r["latencies_ms"]) for r in results) // per_slot
    return [
        round(
            max(
                max(r["latencies_ms"][k * per_slot : (k + 1) * per_slot] or [0.0]) for r in results
            ),
            1,
        )
        for k in range(slots)
    ]


async def load(
    port: int, pods: list[Object], harness_ps: psutil.Process, tmp: Path, metrics_port: int
) -> dict[str, Any]:
    bodies = tmp / "reviews.jsonl"
    bodies.write_bytes(b"\n".join(review(p) for p in pods) + b"\n")
    procs = [await _start_generator(port, bodies) for _ in range(GENERATORS)]
    try:
        for p in procs:
            assert p.stdout is not None
            line = await asyncio.wait_for(p.stdout.readline(), 60)
            if not line.startswith(b"generator ready"):
                raise RuntimeError(f"generator not ready: {line!r}")
        before = await scrape(metrics_port)
        load0 = psutil.getloadavg()[0]
        cpu0 = sum(harness_ps.cpu_times()[:2])
        wait0 = runqueue_wait(harness_ps.pid)
        t0 = time.monotonic()
        for p in procs:
            assert p.stdin is not None
            p.stdin.write(b"go\n")
            await p.stdin.drain()
        results = []
        for p in procs:
            out, _ = await asyncio.wait_for(p.communicate(), 300)
            results.append(orjson.loads(out.splitlines()[-1]))
        wall = time.monotonic() - t0
        cpu = sum(harness_ps.cpu_times()[:2]) - cpu0
        waited = runqueue_wait(harness_ps.pid) - wait0
        after = await scrape(metrics_port)
        load1 = psutil.getloadavg()[0]
    finally:
        for p in procs:
            if p.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    p.kill()
                await p.wait()
    ms = [x for r in results for x in r["latencies_ms"]]
    worst = _worst_by_half_second(results)
    total = len(ms)
    span = max(r["seconds"] for r in results)
    return {
        "target_pods_per_second": RATE,
        "generators": GENERATORS,
        "pods": total,
        "admissions": 2 * total,
        "errors": sum(r["errors"] for r in results),
        "seconds": round(span, 3),
        "pods_per_second": round(total / span, 1),
        "p50_ms": round(_pct(ms, 0.50), 2),
        "p99_ms": round(_pct(ms, 0.99), 2),
        "max_ms": round(max(ms), 2),
        "mean_ms": round(statistics.fmean(ms), 2),
        "worst_ms_by_half_second": worst,
        "webhook_cpu_seconds": round(cpu, 3),
        "webhook_cpu_ms_per_pod": round(1000 * cpu / total, 4),
        "webhook_core_share": round(cpu / wall, 3),
        "webhook_runqueue_wait_seconds": round(waited, 3),
        # The webhook's own share of the latency: each review's decode, handler and encode
        # (controller-runtime's webhook latency), how late its event loop ran what was due,
        # its GC pauses - against what the generators spent and the machine's load.
        "server_side": server_side(before, after),
        "connections_opened_during_run": sum(r["connections_opened_during_run"] for r in results),
        "idle_connections_closed_by_server": sum(
            r["idle_connections_closed_by_server"] for r in results
        ),
        # Each generator froze its heap before the run (`quiet_collector`): 0 here says none
        # of them paused for a full collection while pods were due.
        "generator_full_collections": sum(r["full_collections_during_run"] for r in results),
        "generator_cpu_ms_per_pod": round(
            1000 * sum(r["cpu_seconds"] for r in results) / max(total, 1), 4
        ),
        "load_average_1m": [round(load0, 2), round(load1, 2)],
        "cores": psutil.cpu_count(),
    }


class PodCounter:
    """When each pod of one JobSet's Jobs was first seen (watch events, not polling)."""

    def __init__(self, client: Client, jobset_name: str) -> None:
        self.informer = Informer(
            client,
            PODS,
            namespace=NAMESPACE,
            label_selector=f"{c.JOBSET_NAME_KEY}={jobset_name}",
            transform=lambda p: {
                "metadata": {k: p["metadata"].get(k) for k in ("name", "namespace", "uid")}
            },
        )
        self.times: list[float] = []
        self.informer.add_event_handler(
            FuncHandler(add=lambda _p: self.times.append(time.monotonic()))
        )


async def job_pods(
    client: Client, jobs: list[Object], within: float, procs: dict[str, psutil.Process]
) -> dict[str, Any]:
    """Time until every pod of `jobs` exists, and the CPU each of `procs` spent meanwhile
    (ms per pod: what a webhook call costs the caller and the webhook, apart from the
    machine's load, which moves the seconds)."""
    owner = str(jobs[0]["metadata"]["labels"][c.JOBSET_NAME_KEY])
    counter = PodCounter(client, owner)
    counter.informer.start()
    await counter.informer.wait_for_sync(60)
    want = sum(int(j["spec"]["parallelism"]) for j in jobs)
    cpu0 = {k: sum(p.cpu_times()[:2]) for k, p in procs.items()}
    try:
        t0 = time.monotonic()
        await asyncio.gather(*(client.create(JOBS, j) for j in jobs))
        deadline = t0 + within
        while len(counter.times) < want:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(counter.times)} of {want} pods after {within:.0f}s")
            await asyncio.sleep(0.02)
        last = sorted(counter.times)[want - 1]
        cpu = {k: sum(p.cpu_times()[:2]) - cpu0[k] for k, p in procs.items()}
    finally:
        await counter.informer.stop()
    return {
        "pods": want,
        "seconds": round(last - t0, 3),
        "pods_per_second": round(want / (last - t0), 1),
        **{f"{k}_cpu_ms_per_pod": round(1000 * v / want, 3) for k, v in cpu.items()},
    }


async def settle(
    procs: dict[str, psutil.Process], idle: float = 0.05, window: float = 0.5, limit: float = 60.0
) -> None:
    """Wait until every measured process is idle (under `idle` of a core over `window`
    seconds), so a phase is not charged for the tail of the one before it (its pods still
    finishing). Gives up after `limit` seconds."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        before = {k: sum(p.cpu_times()[:2]) for k, p in procs.items()}
        await asyncio.sleep(window)
        busy = max(sum(p.cpu_times()[:2]) - before[k] for k, p in procs.items())
        if busy < idle * window:
            return


@contextlib.asynccontextmanager
async def _cluster(*sim_args: str) -> Any:
    tmp = Path(tempfile.mkdtemp(prefix="bench-admission-"))
    sim: SimProcess = start_sim(tmp, *sim_args)
    harness: HarnessProcess | None = None
    client: Client | None = None
    try:
        client = await Client.connect(str(sim.kubeconfig), qps=0, burst=0)
        await apply_crds(client)
        with contextlib.suppress(ApiError):
            await client.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
        metrics_port = free_port()
        harness = start_harness(sim, "--no-reconciler", "--metrics-port", str(metrics_port))
        procs = {"sim": psutil.Process(sim.proc.pid), "webhook": psutil.Process(harness.proc.pid)}
        yield client, harness, tmp, metrics_port, procs
    finally:
        if harness is not None:
            harness.stop()
        if client is not None:
            await client.close()
        sim.stop()
        shutil.rmtree(tmp, ignore_errors=True)


async def run(within: float = 120.0) -> dict[str, Any]:
    out: dict[str, Any] = {}
    try:
        async with _cluster("--sim-level", "none") as (client, harness, tmp, metrics_port, _p):
            jobs = await _jobs_of(client, _exclusive("adm", DISTINCT_PODS, 1))
            pods = [leader_pod(j) for j in jobs]
            harness_ps = psutil.Process(harness.proc.pid)
            out["load"] = await load(harness.webhook_port, pods, harness_ps, tmp, metrics_port)
    except Exception as exc:
        out["load"] = {"error": repr(exc)}
    out.update(await job_creation(within))
    w, wo = out.get("with_webhook", {}), out.get("without_webhook", {})
    if "error" not in w and "error" not in wo:
        out["pod_rate_with_over_without"] = round(w["pods_per_second"] / wo["pods_per_second"], 3)
    return out


async def job_creation(within: float = 120.0) -> dict[str, Any]:
    """The `jobs` comparison alone: pod creation with the webhooks, then without."""
    out: dict[str, Any] = {}
    try:
        nodes = f"pools={JOBS_B}x1,cpu=64,memory=256Gi,pods=110"
        async with _cluster("--sim-level", "pods", "--nodes", nodes) as (client, _h, _t, _m, procs):
            with_jobs = await _jobs_of(client, jobset("with", JOBS_B, command=FINISH))
            for j in with_jobs:
                j["spec"]["parallelism"] = j["spec"]["completions"] = PODS_B
            without = await _jobs_of(client, jobset("wout", JOBS_B, command=FINISH))
            for j in without:
                j["spec"]["parallelism"] = j["spec"]["completions"] = PODS_B
            await settle(procs)
            out["with_webhook"] = await job_pods(client, with_jobs, within, procs)
            await client.delete(MUTATING_CONFIGURATIONS, MUTATING)
            await client.delete(VALIDATING_CONFIGURATIONS, VALIDATING)
            await settle(procs)
            out["without_webhook"] = await job_pods(client, without, within, procs)
    except Exception as exc:
        out.setdefault("with_webhook", {"error": repr(exc)})
        out.setdefault("without_webhook", {"error": repr(exc)})
    return out


async def job_creation_runs(runs: int) -> dict[str, Any]:
    """`runs` fresh clusters of the `jobs` comparison, one after another, and the median of
    each figure: a single 512-pod run on a shared machine moves by a factor of two."""
    results = [await job_creation() for _ in range(runs)]
    out: dict[str, Any] = {"runs": results}
    if any("error" in r[k] for r in results for k in ("with_webhook", "without_webhook")):
        return out
    for phase in ("with_webhook", "without_webhook"):
        out[phase] = {
            key: statistics.median(r[phase][key] for r in results) for key in results[0][phase]
        }
    out["pod_rate_with_over_without"] = round(
        statistics.median(
            r["with_webhook"]["pods_per_second"] / r["without_webhook"]["pods_per_second"]
            for r in results
        ),
        3,
    )
    return out


def one_line(d: dict[str, Any]) -> str:
    lo = d.get("load", {})
    if not lo:
        text = "admission (Job pod creation only)"
    elif "error" in lo:
        text = f"admission load failed ({lo['error'][:200]})"
    else:
        side = lo.get("server_side", {})
        text = (
            f"admission at {lo['target_pods_per_second']:.0f} pods/s: {lo['pods_per_second']:.0f} "
            f"sustained, p50 {lo['p50_ms']:.1f} ms, p99 {lo['p99_ms']:.1f} ms, "
            f"webhook {lo['webhook_core_share']:.2f} core, "
            f"{lo['webhook_cpu_ms_per_pod']:.2f} ms CPU/pod, "
            f"{side.get('review_mean_ms', 0):.2f} ms/review server-side, "
            f"waited {lo.get('webhook_runqueue_wait_seconds', 0):.1f} s for a CPU, "
            f"{lo['errors']} errors"
        )
    ratio = d.get("pod_rate_with_over_without")
    return text + (f"; Job pod creation with/without webhook {ratio:.2f}" if ratio else "")


if __name__ == "__main__":
    if sys.argv[1:2] == ["generate"]:
        port, path, rate, secs = sys.argv[2:6]
        reviews = Path(path).read_bytes().splitlines()
        result = asyncio.run(generate(int(port), reviews, float(rate), float(secs)))
        sys.stdout.write(orjson.dumps(result).decode() + "\n")
        sys.exit(0)
    from jobset.runtime.logging import configure_logging

    configure_logging("console", "WARNING")
    if sys.argv[1:2] == ["jobs"]:  # the Job-controller comparison alone: `jobs [RUNS]`
        data = asyncio.run(job_creation_runs(int(sys.argv[2]) if sys.argv[2:] else 1))
        print(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode())
        print(one_line(data))
        sys.exit(0)
    data = asyncio.run(run())
    print(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode())
    print(one_line(data))
