"""The simulated cluster at 100,000 objects: create, paged list, three watchers.

Runs `jobset sim --sim-level none` as a separate process, drives it with
`benchmarks.loadgen` (kubernetes_asyncio over HTTPS), and records the server's peak RSS
and CPU seconds with psutil. Writes `benchmarks/results/sim_scale.json`.

    .venv/bin/python -m benchmarks.sim_scale --count 100000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

from benchmarks.loadgen import run_load
from kubesim.process import start_sim

RESULTS = Path(__file__).parent / "results"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--watchers", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="sim-scale-"))
    sim = start_sim(tmp, "--sim-level", "none")
    proc = psutil.Process(sim.proc.pid)
    peak = [proc.memory_info().rss]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            try:
                peak[0] = max(peak[0], proc.memory_info().rss)
            except psutil.Error:
                return
            time.sleep(0.2)

    threading.Thread(target=sample, daemon=True).start()
    rss_before = proc.memory_info().rss
    t0 = time.perf_counter()
    try:
        result = asyncio.run(
            run_load(str(sim.kubeconfig), "scale", args.count, args.watchers, args.concurrency)
        )
        cpu = proc.cpu_times()
    finally:
        stop.set()
        sim.stop()
    wall = time.perf_counter() - t0
    report = {
        "scenario": "sim_scale",
        "count": args.count,
        "watchers": args.watchers,
        "created": result.created,
        "listed": result.listed,
        "pages": result.pages,
        "watched": result.watched,
        "errors": len(result.errors),
        "create_seconds": round(result.create_seconds, 2),
        "creates_per_second": round(result.created / result.create_seconds, 1),
        "list_seconds": round(result.list_seconds, 2),
        "watch_drain_seconds": round(result.watch_seconds, 2),
        "wall_seconds": round(wall, 2),
        "server_cpu_seconds": round(cpu.user + cpu.system, 2),
        "server_rss_start_mib": round(rss_before / 2**20, 1),
        "server_rss_peak_mib": round(peak[0] / 2**20, 1),
        "server_bytes_per_object": int((peak[0] - rss_before) / max(1, args.count)),
        "machine": f"{platform.machine()}, {psutil.cpu_count()} cpu, "
        f"{round(psutil.virtual_memory().total / 2**30)} GiB, Python {platform.python_version()}",
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "sim_scale.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0 if not result.errors and result.watched == [args.count] * args.watchers else 1


if __name__ == "__main__":
    sys.exit(main())
