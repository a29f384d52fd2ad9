"""How long `jobset get`, `describe` and `tree` take, wall clock, beside `kubectl get`.

A user runs these many times a day against a running cluster; kubectl answers the
equivalent `kubectl get jobsets` in a few tens of milliseconds. On a fresh `jobset dev`
with one running JobSet of three Jobs, each command runs `--runs` times (interleaved, so a
burst of load on the shared machine hits all alike), output to a pipe, as a script or a
shell's `$(...)` sees it, and the median and 90th percentile of the wall time are kept.
Python's bytecode cache is on (one warm-up run each, in a cache directory of its own), as
for an installed package.

The goal: the median of each jobset command at most `GOAL_SECONDS`.

    .venv/bin/python -m benchmarks.cli_latency [--runs 15] [--out results/cli_latency.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from benchmarks.harness import commit, machine

RESULTS: Final = Path(__file__).parent / "results"
OUT: Final = RESULTS / "cli_latency.json"
GOAL_SECONDS: Final = 0.3
JOBSET: Final = "three"
MANIFEST: Final = f"""
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: {JOBSET}
spec:
  replicatedJobs:
  - name: workers
    replicas: 3
    template:
      spec:
        template:
          spec:
            restartPolicy: Never
            containers:
            - name: main
              image: busybox
              command: ["sleep", "infinity"]
"""


def _commands() -> dict[str, list[str]]:
    # The console script, as a user runs it (`python -m` would add runpy's start-up).
    script = Path(sys.executable).parent / "jobset"
    jobset = [str(script)] if script.exists() else [sys.executable, "-m", "jobset.cli"]
    return {
        "jobset get": [*jobset, "get"],
        "jobset describe": [*jobset, "describe", JOBSET],
        "jobset tree": [*jobset, "tree", JOBSET],
        "kubectl get jobsets": ["kubectl", "get", "jobsets"],
    }


def _start_dev(tmp: Path) -> tuple[subprocess.Popen[str], Path]:
    kubeconfig = tmp / "kubeconfig"
    cmd = [sys.executable, "-m", "jobset.cli", "dev", "--port", "0", "--kubeconfig",
           str(kubeconfig), "--nodes", "pools=1x4", "--log-level", "WARNING"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if "ready" in line:
            return proc, kubeconfig
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise RuntimeError("jobset dev did not start")


def _running(env: dict[str, str]) -> bool:
    out = subprocess.run(
        ["kubectl", "get", "pods", "-o", "jsonpath={.items[*].status.phase}"],
        capture_output=True, text=True, env=env, check=False,
    ).stdout.split()  # fmt: skip
    return out == ["Running"] * 3


def measure(runs: int) -> dict[str, Any]:
    """Start `jobset dev`, create the JobSet, time every command `runs` times."""
    with tempfile.TemporaryDirectory(prefix="cli-latency-") as tmpdir:
        tmp = Path(tmpdir)
        proc, kubeconfig = _start_dev(tmp)
        try:
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            env |= {"KUBECONFIG": str(kubeconfig), "PYTHONPYCACHEPREFIX": str(tmp / "pyc")}
            subprocess.run(["kubectl", "apply", "-f", "-"], input=MANIFEST, text=True, env=env,
                           check=True, capture_output=True)  # fmt: skip
            deadline = time.monotonic() + 120
            while not _running(env):
                if time.monotonic() > deadline:
                    raise RuntimeError("the JobSet's pods did not start")
                time.sleep(0.5)
            return _time_all(_commands(), env, runs)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _time_all(commands: dict[str, list[str]], env: dict[str, str], runs: int) -> dict[str, Any]:
    for cmd in commands.values():  # warm-up: bytecode cache, page cache
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    samples: dict[str, list[float]] = {name: [] for name in commands}
    load = [round(os.getloadavg()[0], 2)]
    for _ in range(runs):
        for name, cmd in commands.items():
            t0 = time.perf_counter()
            subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
            samples[name].append(time.perf_counter() - t0)
    load.append(round(os.getloadavg()[0], 2))
    return {
        "commands": {name: _summary(values) for name, values in samples.items()},
        "load_1m": load,
    }


def _summary(values: Sequence[float]) -> dict[str, Any]:
    ordered = sorted(values)
    return {
        "median_seconds": round(statistics.median(ordered), 4),
        "p90_seconds": round(ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], 4),
        "samples": [round(v, 4) for v in values],
    }


def goal_met(data: dict[str, Any]) -> bool:
    cmds = data["commands"]
    return all(
        v["median_seconds"] <= GOAL_SECONDS for k, v in cmds.items() if k.startswith("jobset")
    )


def markdown(data: dict[str, Any]) -> str:
    """The RESULTS.md section of one run."""
    rows = ["| command | median (s) | p90 (s) |", "|---|---|---|"]
    for name, v in data["commands"].items():
        rows.append(f"| `{name}` | {v['median_seconds']:.3f} | {v['p90_seconds']:.3f} |")
    verdict = "met" if goal_met(data) else "not met"
    return (
        f"`{data.get('command', 'python -m benchmarks.cli_latency')}` on {data['date']}, "
        f"commit `{data.get('commit')}`, {data['machine']}: {data['runs']} runs each against "
        f"`jobset dev` with one running 3-Job JobSet, output to a pipe; 1-minute load "
        f"{data['load_1m'][0]} → {data['load_1m'][1]}.\n\n"
        + "\n".join(rows)
        + f"\n\nGoal: `jobset get`, `describe` and `tree` at most {GOAL_SECONDS} s at the "
        f"median: {verdict}.\n"
    )


def run(runs: int, out: Path = OUT, command: str = "") -> dict[str, Any]:
    data: dict[str, Any] = {
        "benchmark": "cli_latency",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit(),
        "machine": machine(),
        "command": command or f"python -m benchmarks.cli_latency --runs {runs}",
        "runs": runs,
        **measure(runs),
    }
    data["goal_met"] = goal_met(data)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=2) + "\n")
    return data


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--runs", type=int, default=15, help="timed runs of each command")
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    data = run(args.runs, args.out)
    print(markdown(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
