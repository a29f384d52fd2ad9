"""How long cluster DNS takes to answer, with the API server idle and with it loaded.

`jobset sim` serves DNS (`--dns-address`) from the process that serves the API; a pod
resolving a Service name must not wait behind a client that keeps the API server busy. One
fresh `jobset sim` on a loopback DNS port; the harness asks `kubernetes.default.svc.<zone>`
(A, over UDP, one query at a time, as a pod's resolver does) `--queries` times with nothing
else running, then again while `--clients` load processes each keep
`--concurrency` requests in flight against the API server (a create of a ConfigMap of
`PAYLOAD_BYTES`, then a list of all of them, over and over). The median, 90th and 99th
percentile of each are kept, with the API requests the load made per second and the 1-minute
load average. The load runs in processes of its own so that the harness's timing loop does
not share an interpreter with it.

The goal: the loaded median at most `GOAL_RATIO` times the unloaded one plus `GOAL_SLACK_MS`.

    .venv/bin/python -m benchmarks.dns_latency [--queries 300] [--out results/dns_latency.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import dns.message
import dns.query

from benchmarks.harness import commit, machine
from kubesim.process import free_port, start_sim

RESULTS: Final = Path(__file__).parent / "results"
OUT: Final = RESULTS / "dns_latency.json"
NAME: Final = "kubernetes.default.svc.cluster.local"
PAYLOAD_BYTES: Final = 16 * 1024
GOAL_RATIO: Final = 3.0
GOAL_SLACK_MS: Final = 5.0


def _ask(port: int, queries: int) -> list[float]:
    """Seconds per answer of `queries` A queries, one after another."""
    samples: list[float] = []
    for _ in range(queries):
        query = dns.message.make_query(NAME, "A")
        t0 = time.perf_counter()
        answer = dns.query.udp(query, "127.0.0.1", port=port, timeout=10)
        samples.append(time.perf_counter() - t0)
        if not answer.answer:
            raise RuntimeError(f"no answer for {NAME}")
    return samples


async def _load_loop(kubeconfig: str, concurrency: int, stop_at: float, prefix: str) -> int:
    """Creates and lists of ConfigMaps until `stop_at`; the number of requests made."""
    from kubernetes_asyncio import client, config

    api_client = await config.new_client_from_config(config_file=kubeconfig)
    core = client.CoreV1Api(api_client)
    done = 0

    async def worker(w: int) -> None:
        nonlocal done
        i = 0
        while time.monotonic() < stop_at:
            body = client.V1ConfigMap(
                metadata=client.V1ObjectMeta(name=f"{prefix}-{w}-{i}"),
                data={"x": "x" * PAYLOAD_BYTES},
            )
            await core.create_namespaced_config_map("default", body)
            await core.list_namespaced_config_map("default", _preload_content=False)
            done += 2
            i += 1

    try:
        await asyncio.gather(*(worker(w) for w in range(concurrency)))
    finally:
        await api_client.close()
    return done


def _load_process(kubeconfig: str, concurrency: int, seconds: float, prefix: str, out: Any) -> None:
    stop_at = time.monotonic() + seconds
    out.put(asyncio.run(_load_loop(kubeconfig, concurrency, stop_at, prefix)))


def _summary(values: Sequence[float]) -> dict[str, Any]:
    ordered = sorted(values)

    def pct(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 3)

    return {
        "median_ms": round(statistics.median(ordered) * 1000, 3),
        "p90_ms": pct(0.9),
        "p99_ms": pct(0.99),
        "max_ms": round(ordered[-1] * 1000, 3),
    }


def _loaded(port: int, kubeconfig: str, queries: int, clients: int, concurrency: int) -> Any:
    """The answers' latency while `clients` load processes run; and the load's request rate."""
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    seconds = max(5.0, queries * 0.02)
    procs = [
        ctx.Process(
            target=_load_process, args=(kubeconfig, concurrency, seconds, f"load{c}", results)
        )
        for c in range(clients)
    ]
    for p in procs:
        p.start()
    time.sleep(1.5)  # the clients connected and busy before the first query
    t0 = time.monotonic()
    samples = _ask(port, queries)
    asked = time.monotonic() - t0
    requests = sum(results.get(timeout=seconds + 120) for _ in procs)
    for p in procs:
        p.join(timeout=30)
    still_loaded = asked <= seconds - 1.5
    return samples, round(requests / seconds, 1), still_loaded


def measure(queries: int, clients: int, concurrency: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="dns-latency-") as tmpdir:
        port = free_port()
        sim = start_sim(Path(tmpdir), "--dns-address", f"127.0.0.1:{port}")
        try:
            _ask(port, 20)  # warm-up
            load = [round(os.getloadavg()[0], 2)]
            idle = _ask(port, queries)
            busy, rate, covered = _loaded(port, str(sim.kubeconfig), queries, clients, concurrency)
            load.append(round(os.getloadavg()[0], 2))
        finally:
            sim.stop()
    return {
        "unloaded": _summary(idle),
        "loaded": _summary(busy),
        "load_requests_per_second": rate,
        "queries_within_load": covered,
        "load_1m": load,
    }


def goal_met(data: dict[str, Any]) -> bool:
    idle, busy = data["unloaded"]["median_ms"], data["loaded"]["median_ms"]
    return bool(busy <= idle * GOAL_RATIO + GOAL_SLACK_MS)


def markdown(data: dict[str, Any]) -> str:
    """The RESULTS.md section of one run."""
    rows = [
        "| API server | median (ms) | p90 (ms) | p99 (ms) | max (ms) |",
        "|---|---|---|---|---|",
    ]
    for label, key in (("idle", "unloaded"), ("loaded", "loaded")):
        v = data[key]
        rows.append(
            f"| {label} | {v['median_ms']:.2f} | {v['p90_ms']:.2f} | "
            f"{v['p99_ms']:.2f} | {v['max_ms']:.2f} |"
        )
    verdict = "met" if goal_met(data) else "not met"
    return (
        f"`{data.get('command', 'python -m benchmarks.dns_latency')}` on {data['date']}, "
        f"commit `{data.get('commit')}`, {data['machine']}: {data['queries']} A queries for "
        f"`{NAME}` one at a time over UDP; loaded: {data['clients']} client processes x "
        f"{data['concurrency']} requests in flight, {data['load_requests_per_second']} API "
        f"requests/s; 1-minute load {data['load_1m'][0]} → {data['load_1m'][1]}.\n\n"
        + "\n".join(rows)
        + f"\n\nGoal: the loaded median at most {GOAL_RATIO:g} x the idle one + "
        f"{GOAL_SLACK_MS:g} ms: {verdict}.\n"
    )


def run(
    queries: int, clients: int = 2, concurrency: int = 8, out: Path = OUT, command: str = ""
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "benchmark": "dns_latency",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit(),
        "machine": machine(),
        "command": command or f"python -m benchmarks.dns_latency --queries {queries}",
        "queries": queries,
        "clients": clients,
        "concurrency": concurrency,
        **measure(queries, clients, concurrency),
    }
    data["goal_met"] = goal_met(data)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=2) + "\n")
    return data


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--queries", type=int, default=300, help="timed queries per phase")
    p.add_argument("--clients", type=int, default=2, help="load processes")
    p.add_argument("--concurrency", type=int, default=8, help="requests in flight per client")
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    data = run(args.queries, args.clients, args.concurrency, args.out)
    print(markdown(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
