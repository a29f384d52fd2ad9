"""Training time lost per failure on a real JAX job, per restart strategy.

The job is examples/jax-train: N processes of a data-parallel JAX program (CPU, gloo) that
checkpoint to a volumeClaimPolicies claim, under `jobset dev --run-image` (real processes,
cluster DNS, real volumes; needs root). One rank exits with an error at a fixed step, once.
Each strategy runs on a fresh `jobset dev`, one after the other:

- `Recreate`: the JobSet deletes and recreates every Job;
- `BlockingRecreate`: the same, but new Jobs wait until every old pod is gone;
- `InPlaceRestart`: every pod runs the in-place-restart agent as a sidecar (as in
  examples/in-place-restart.yaml); the failed pod restarts its containers in place, the
  others follow, no pod or Job is recreated.

The training program appends one line per step to `progress.jsonl` in the checkpoint
volume, and the failing rank writes the step and time of its failure to a marker file
there; the benchmark reads both from the volume's directory on the host. Per run:

- `downtime_seconds`: failure -> the first step completed after the restart;
- `lost_seconds`: failure -> the step counter back above the step at which it failed (the
  downtime plus redoing the steps since the last checkpoint): the training time the failure
  cost;
- `steps_redone`: steps between the checkpoint resumed from and the failure.

The goal: InPlaceRestart loses at most a quarter of Recreate's time.

    .venv/bin/python -m benchmarks.train_recovery [--processes 4] [--strategies ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import yaml

from benchmarks import in_place
from benchmarks.harness import commit
from jobset.dev.examplekit import EXAMPLES_DIR, jobset_bin, start_dev, train_bin
from kubesim.process import SimProcess

STRATEGIES: Final = ("Recreate", "BlockingRecreate", "InPlaceRestart")
TRAIN_IMAGE: Final = "example.com/jax-train"
EXAMPLE: Final = EXAMPLES_DIR / "jax-train"
NAME: Final = "jax-train"
CLAIM: Final = f"checkpoints-{NAME}"
RESULTS: Final = Path(__file__).parent / "results" / "train_recovery.json"
GOAL_RATIO: Final = 0.25  # InPlaceRestart's lost time / Recreate's
RESTART_GOAL_RATIO: Final = 0.5  # InPlaceRestart's time until the process started / Recreate's
WAIT_SECONDS: Final = 600.0


def jobset_manifest(strategy: str, processes: int, steps: int, fail_at: int) -> dict[str, Any]:
    """examples/jax-train/jobset.yaml with this strategy, process count and failure step."""
    js: dict[str, Any] = yaml.safe_load((EXAMPLE / "jobset.yaml").read_text())
    js["spec"]["failurePolicy"]["restartStrategy"] = strategy
    (rjob,) = js["spec"]["replicatedJobs"]
    job = rjob["template"]["spec"]
    job["parallelism"] = job["completions"] = processes
    (worker,) = job["template"]["spec"]["containers"]
    settings = {"STEPS": str(steps), "FAIL_ONCE_AT_STEP": str(fail_at)}
    settings["FAIL_RANK"] = str(processes - 1)
    for env in worker["env"]:
        env["value"] = settings.get(env["name"], env.get("value"))
        if env["value"] is None:
            del env["value"]
    if strategy == "InPlaceRestart":
        in_place.add_agent(job)
    return js


def dev_flags(jobset_dir: str, train_dir: str) -> list[str]:
    return [
        "--feature-gates",
        "InPlaceRestart=true",
        "--run-image",
        f"{TRAIN_IMAGE}={train_dir}",
        "--run-image",
        f"{in_place.AGENT_IMAGE}={jobset_dir}",
    ]


def submit(dev: SimProcess, strategy: str, processes: int, steps: int, fail_at: int) -> None:
    dev.kubectl(
        "create", "configmap", NAME, f"--from-file=train.py={EXAMPLE / 'train.py'}", "-n", "default"
    )
    docs: list[dict[str, Any]] = []
    if strategy == "InPlaceRestart":
        docs += [dict(obj, kind=res.kind, apiVersion=res.api_version) for res, obj in in_place.RBAC]
    docs.append(jobset_manifest(strategy, processes, steps, fail_at))
    dev.kubectl("apply", "-n", "default", "-f", "-", input=yaml.safe_dump_all(docs))


def volume_dir(dev: SimProcess) -> Path | None:
    """The host directory behind the checkpoint claim, once it is bound."""
    pvc = json.loads(dev.kubectl("get", "pvc", CLAIM, "-o", "json", check=False).stdout or "{}")
    volume = (pvc.get("spec") or {}).get("volumeName")
    if not volume:
        return None
    pv = json.loads(dev.kubectl("get", "pv", volume, "-o", "json").stdout)
    source = pv["spec"].get("hostPath") or pv["spec"].get("local") or {}
    return Path(source["path"]) if source.get("path") else None


def wait_finished(dev: SimProcess, within: float) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        raw = dev.kubectl("get", "jobset", NAME, "-o", "json", check=False).stdout
        js = json.loads(raw) if raw.strip() else {}
        if (js.get("status") or {}).get("terminalState"):
            return js
        time.sleep(1.0)
    raise TimeoutError(f"{NAME} did not finish within {within:.0f}s")


def timeline(progress: Sequence[dict[str, Any]], failure: dict[str, Any]) -> dict[str, Any]:
    """What the failure cost, from rank 0's progress lines and the failing rank's marker.

    Steps count as after the restart only once the new attempt's `start` line is written: the
    other ranks may still record the step the failing rank had finished before it exited."""
    failed_at, failed_step = float(failure["time"]), int(failure["step"])
    starts = [p for p in progress if p.get("event") == "start" and float(p["time"]) > failed_at]
    if not starts:
        raise ValueError("no attempt started after the failure")
    start = starts[0]
    steps = [p for p in progress if "event" not in p]
    after = [p for p in steps if float(p["time"]) > float(start["time"])]
    if not after:
        raise ValueError("no step was recorded after the failure's restart")
    back = next(p for p in after if int(p["step"]) > failed_step)
    before = [p for p in steps if float(p["time"]) <= failed_at]
    launched = float(start.get("launched", start["time"]))

    def since(t: float, then: float = failed_at) -> float:
        return round(t - then, 3)

    return {
        "failed_step": failed_step,
        "resumed_from_step": int(start["step"]),
        "steps_redone": failed_step - int(start["step"]),
        "downtime_seconds": since(float(after[0]["time"])),
        "lost_seconds": since(float(back["time"])),
        "phases": {
            "until_process_started": since(launched),
            "process_start_to_training": since(float(start["time"]), launched),
            "first_step": since(float(after[0]["time"]), float(start["time"])),
        },
        "steps_per_second": _rate(before),
    }


def _rate(steps: Sequence[dict[str, Any]]) -> float | None:
    if len(steps) < 2:
        return None
    span = float(steps[-1]["time"]) - float(steps[0]["time"])
    return round((len(steps) - 1) / span, 1) if span > 0 else None


def read_run(directory: Path) -> dict[str, Any]:
    progress = [
        json.loads(line) for line in (directory / "progress.jsonl").read_text().splitlines()
    ]
    (marker,) = directory.glob("failed-once-*")
    return timeline(progress, json.loads(marker.read_text()))


def run_strategy(strategy: str, processes: int, steps: int, fail_at: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="train-recovery-") as tmp:
        dev = start_dev(Path(tmp), *dev_flags(jobset_bin(), train_bin()), timeout=120)
        try:
            started = time.monotonic()
            submit(dev, strategy, processes, steps, fail_at)
            js = wait_finished(dev, WAIT_SECONDS)
            directory = volume_dir(dev)
            if directory is None:
                raise RuntimeError(f"claim {CLAIM} is not bound to a host directory")
            result = read_run(directory)
        finally:
            dev.stop()
    status = js.get("status") or {}
    return {
        "strategy": strategy,
        "processes": processes,
        "terminal_state": status.get("terminalState"),
        "restarts": status.get("restarts", 0),
        "in_place_attempt": status.get("currentInPlaceRestartAttempt"),
        "wall_seconds": round(time.monotonic() - started, 1),
        **result,
    }


def summary(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The two goals: the whole job's lost time, and the restart phase (failure -> every
    process running again, `until_process_started`)."""
    lost = {r["strategy"]: r["lost_seconds"] for r in runs}
    out: dict[str, Any] = {
        "goal": f"InPlaceRestart lost <= {GOAL_RATIO} x Recreate lost",
        "restart_goal": (
            f"InPlaceRestart until the process started <= {RESTART_GOAL_RATIO} x Recreate's"
        ),
    }
    if "Recreate" in lost and "InPlaceRestart" in lost and lost["Recreate"] > 0:
        ratio = lost["InPlaceRestart"] / lost["Recreate"]
        out.update(in_place_over_recreate=round(ratio, 3), goal_met=ratio <= GOAL_RATIO)
    started = {r["strategy"]: (r.get("phases") or {}).get("until_process_started") for r in runs}
    recreate, in_place = started.get("Recreate"), started.get("InPlaceRestart")
    if recreate and in_place is not None:
        ratio = in_place / recreate
        out.update(
            restart_phase_ratio=round(ratio, 3), restart_goal_met=ratio <= RESTART_GOAL_RATIO
        )
    return out


def one_line(r: dict[str, Any]) -> str:
    p = r["phases"]
    return (
        f"{r['strategy']:<17} {r['processes']} processes: lost {r['lost_seconds']:.2f} s "
        f"(down {r['downtime_seconds']:.2f} s: {p['until_process_started']:.2f} s until the "
        f"process started, {p['process_start_to_training']:.2f} s to import jax and join, "
        f"{p['first_step']:.2f} s to the first step; {r['steps_redone']} steps redone), "
        f"{r['terminal_state']}, restarts={r['restarts']}"
    )


def markdown(data: dict[str, Any]) -> str:
    """The RESULTS.md section of one run."""
    rows = [
        "| strategy | lost (s) | down (s) | until the process started | import jax and join "
        "| first step | steps redone | end |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in data["runs"]:
        p = r["phases"]
        rows.append(
            f"| {r['strategy']} | {r['lost_seconds']:.2f} | {r['downtime_seconds']:.2f} "
            f"| {p['until_process_started']:.2f} | {p['process_start_to_training']:.2f} "
            f"| {p['first_step']:.2f} | {r['steps_redone']} "
            f"| {r['terminal_state']}, restarts={r['restarts']} |"
        )
    s = data["summary"]
    verdict = "met" if s.get("goal_met") else "not met"
    ratio = s.get("in_place_over_recreate")
    processes = data["runs"][0]["processes"] if data["runs"] else 0
    return (
        f"`{data.get('command', 'python -m benchmarks.train_recovery')}` on "
        f"{data['date']}, commit `{data.get('commit')}`: examples/jax-train with {processes} "
        f"JAX processes, one failure at step {data['runs'][0]['failed_step']}.\n\n"
        + "\n".join(rows)
        + f"\n\nGoal: {s['goal']}: {verdict}"
        + (f" ({ratio:.2f} x)." if ratio is not None else ".")
        + _restart_goal(s)
        + "\n"
    )


def _restart_goal(s: dict[str, Any]) -> str:
    if "restart_goal" not in s:  # a run recorded before the restart phase had a goal
        return ""
    verdict = "met" if s.get("restart_goal_met") else "not met"
    ratio = s.get("restart_phase_ratio")
    return f"\n\nGoal: {s['restart_goal']}: {verdict}" + (
        f" ({ratio:.2f} x)." if ratio is not None else "."
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--fail-at", type=int, default=1550)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    runs = []
    for strategy in args.strategies.split(","):
        runs.append(run_strategy(strategy, args.processes, args.steps, args.fail_at))
        print(one_line(runs[-1]), flush=True)
    data = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit(),
        "command": f"python -m benchmarks.train_recovery --processes {args.processes}",
        "runs": runs,
        "summary": summary(runs),
    }
    Path(args.out).write_text(json.dumps(data, indent=2) + "\n")
    print(json.dumps(data["summary"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
