"""`make bench`: the JobSet controller against a minimal baseline, side by side, at scale.

For every size (default 1k, 4k, 16k child Jobs; `--large` adds 64k) and every scenario
(`benchmarks/scenarios.py`: wide, many, restart-recreate with steady, restart-blocking),
two phases run one after the other on identical fresh `jobset sim --sim-level jobs`
processes: the baseline (`benchmarks/baseline.py`: only the API calls the scenario needs,
same client, QPS, burst and parallelism) and the controller (`jobset controller`). Which
side goes first alternates from size to size. The headline is the ratio baseline time /
controller time (1.0: as fast as the minimum; > 1: faster); absolute seconds are printed
but mean nothing across runs on a shared machine.

With `--pods yes` (the default), fairness, recovery, pod admission and the pod-scale climb
(`benchmarks/pod_scale.py`: one step of 1,000 pods here, 1k to 200k with `--large`) run
after the rate and before the scenarios.

`--budget` (seconds, default 570) keeps `make bench` under 10 minutes: before each step the
time it will take is predicted from the same scenario at the previous size (scaled by the
number of Jobs); a step that would overrun the budget is skipped and listed as skipped.

Writes `benchmarks/results/scale.json` (`scale_large.json` with `--large`), PNG plots and
`benchmarks/RESULTS.md` (see `benchmarks/report.py`, which can also redo them from JSON).

    .venv/bin/python -m benchmarks.run [--sizes 1000,4000,16000] [--large] [--budget 570]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from benchmarks import (
    admission,
    cpu_guard,
    dns_latency,
    fairness,
    pod_scale,
    profiling,
    rate,
    recovery,
    report,
)
from benchmarks.harness import Options, commit, machine, phase
from benchmarks.scenarios import RUNNERS, SCENARIOS
from jobset.runtime.logging import configure_logging

RESULTS = Path(__file__).parent / "results"
SIDES = ("baseline", "controller")
# Jobs (x 8 pods) of the real-process InPlaceRestart recovery case in `make bench`.
BENCH_IN_PLACE_JOBS = 4


def _load() -> float:
    return round(os.getloadavg()[0], 2)


async def run_side(
    side: str, scenario: str, n: int, opts: Options, status: Any
) -> tuple[dict[str, Any], float]:
    t = time.monotonic()
    load = _load()
    async with phase(side, opts) as p:
        result = await RUNNERS[scenario](p, n, status)
        result["idle_rss_mib"] = round(p.extra["idle_rss_bytes"] / 2**20, 1)
    result["load_1m"] = [load, _load()]
    return result, time.monotonic() - t


def _command(argv: list[str] | None) -> str:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        return "make bench"
    if args == ["--large"]:
        return "make bench-large"
    return "python -m benchmarks.run " + " ".join(args)


def predict(durations: dict[tuple[str, int], float], scenario: str, n: int) -> float | None:
    """Seconds the step (both sides) will take: a line through the two largest smaller
    sizes measured (fixed start-up costs do not scale), else proportional to one."""
    known = sorted((m, d) for (s, m), d in durations.items() if s == scenario and m < n)
    if not known:
        return None
    if len(known) == 1:
        m, d = known[0]
        return d * n / m * 1.1
    (m1, d1), (m2, d2) = known[-2:]
    slope = max(0.0, (d2 - d1) / (m2 - m1))
    return (d2 + slope * (n - m2)) * 1.15


def step_order(sizes: list[int], scenarios: list[str]) -> list[tuple[int, int, str]]:
    """(size index, size, scenario) in the order the steps run: every scenario at the
    smallest size, then `wide` at each larger size, then the other scenarios by size. The
    goals at 16k rest on `wide` (throughput, CPU growth from 1k, status writes over a
    JobSet's life), so when the budget runs short it is the other 4k/16k steps that are
    skipped, not those."""
    steps = [(i, n, s) for i, n in enumerate(sizes) for s in scenarios]
    first = [st for st in steps if st[0] == 0]
    wide = [st for st in steps if st[0] > 0 and st[2] == "wide"]
    rest = [st for st in steps if st[0] > 0 and st[2] != "wide"]
    return first + wide + rest


def _pod_scale_sizes(flag: str, large: bool) -> list[int]:
    """The pod-scale steps: `make bench` one small step (its budget), `--large` the climb."""
    if flag == "none":
        return []
    if flag:
        return sorted(int(x) for x in flag.split(",") if x)
    return list(pod_scale.LARGE_PODS) if large else [pod_scale.BENCH_PODS]


def run_module(console: Console, module: str, out: Path, *args: str) -> dict[str, Any] | None:
    """Run `python -m benchmarks.MODULE ARGS --out OUT` from the repository and read OUT;
    None, with the tail of what it printed, when it fails."""
    cmd = [sys.executable, "-m", f"benchmarks.{module}", *args, "--out", str(out)]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1]
    )
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr)[-2000:]
        console.print(f"[red]{module} benchmark failed[/red]\n{tail}")
        return None
    data: dict[str, Any] = json.loads(out.read_text())
    return data


def run_placement(console: Console, out: Path) -> dict[str, Any] | None:
    return run_module(console, "placement", out, "--domains", "64", "--pods", "8")


def run_gang(console: Console, out: Path) -> dict[str, Any] | None:
    """benchmarks/gang.py: gangs competing for a cluster that holds only some of them."""
    return run_module(console, "gang", out)


def run_cli_latency(console: Console, out: Path) -> dict[str, Any] | None:
    """benchmarks/cli_latency.py: jobset get/describe/tree beside kubectl get, wall time."""
    return run_module(console, "cli_latency", out)


def main(argv: list[str] | None = None) -> int:
    p = _parser()
    args = p.parse_args(argv)

    sizes = sorted({int(s) for s in args.sizes.split(",") if s})
    if args.large:
        sizes = sorted({*sizes, 64000})
        args.budget = 0
    scenarios = [s for s in args.scenarios.split(",") if s]
    for s in scenarios:
        if s not in RUNNERS:
            p.error(f"unknown scenario {s!r} (known: {', '.join(RUNNERS)})")
    out = (
        Path(args.out)
        if args.out
        else RESULTS / ("scale_large.json" if args.large else "scale.json")
    )
    opts = Options(
        qps=args.qps,
        burst=args.burst,
        concurrency=args.concurrency,
        parallelism=args.parallelism,
        time_scale=args.time_scale,
        timeout=args.timeout,
    )
    configure_logging("console", "WARNING")  # the harness's own informers stay quiet
    console = Console()
    if not console.is_terminal:  # piped: do not squeeze the table into 80 columns
        console = Console(width=170)
    console.print(
        f"[bold]jobset bench[/bold]: sizes {sizes}, scenarios {scenarios}, "
        f"budget {args.budget or 'none'} s, {machine()}"
    )
    started = datetime.now(UTC)
    run = _Run(args, console, time.monotonic())
    rate_runs = _rate_runs(run, sizes, opts) if args.rate == "yes" else []
    extra = _pod_sections(run, sizes, opts) if args.pods == "yes" else {}
    runs = _scenario_runs(run, sizes, scenarios, opts)
    data: dict[str, Any] = {
        "benchmark": "scale",
        "machine": machine(),
        "started": started.isoformat(timespec="seconds"),
        "commit": commit(),
        "wall_seconds": 0.0,
        "command": _command(argv),
        "options": {
            "sizes": sizes,
            "scenarios": scenarios,
            "budget_seconds": args.budget,
            "qps": opts.qps,
            "burst": opts.burst,
            "concurrency": opts.concurrency,
            "parallelism": opts.parallelism,
            "time_scale": opts.time_scale,
            "sim_level": "jobs",
        },
        "runs": runs,
        "rate": {"runs": rate_runs, "limit_clients": rate.LIMIT_CLIENTS},
        **extra,
        "skipped": run.skipped,
    }
    return _finish(run, data, out)


@dataclass
class _Run:
    """What the steps of one `benchmarks.run` share: the flags, the console, when it
    started, how long each step took (to predict the next) and the steps skipped."""

    args: argparse.Namespace
    console: Console
    t_start: float
    durations: dict[tuple[str, int], float] = field(default_factory=dict)
    skipped: list[dict[str, Any]] = field(default_factory=list)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--sizes", default="1000,4000,16000", help="child Jobs per scenario")
    p.add_argument("--large", action="store_true", help="also 64000 Jobs, no budget")
    p.add_argument("--scenarios", default=",".join(SCENARIOS))
    p.add_argument("--budget", type=float, default=570.0, help="seconds (0: none)")
    p.add_argument("--placement", choices=("auto", "yes", "no"), default="auto")
    p.add_argument(
        "--cli",
        choices=("auto", "yes", "no"),
        default="auto",
        help="the CLI latency (benchmarks/cli_latency.py) last; auto: if 60 s of budget remain",
    )
    p.add_argument(
        "--dns",
        choices=("auto", "yes", "no"),
        default="auto",
        help="cluster DNS latency idle and loaded (benchmarks/dns_latency.py) last; auto: if "
        "30 s of budget remain",
    )
    p.add_argument("--qps", type=float, default=500.0)
    p.add_argument("--burst", type=int, default=500)
    p.add_argument("--concurrency", type=int, default=5, help="controller reconcile workers")
    p.add_argument("--parallelism", type=int, default=50, help="API calls at once per JobSet")
    p.add_argument("--time-scale", type=float, default=1.0)
    p.add_argument("--timeout", type=float, default=900.0, help="per wait, seconds")
    p.add_argument("--out", default=None, help="JSON file (default results/scale[_large].json)")
    p.add_argument("--no-report", action="store_true", help="no plots, no RESULTS.md")
    p.add_argument(
        "--rate",
        choices=("yes", "no"),
        default="yes",
        help="the unthrottled rate against the minimal client (benchmarks/rate.py), first",
    )
    p.add_argument(
        "--pods",
        choices=("yes", "no"),
        default="yes",
        help="fairness, recovery (--sim-level pods), pod admission and pod scale, after the rate",
    )
    p.add_argument(
        "--pod-scale",
        default="",
        metavar="PODS,...",
        help="pod-scale steps (benchmarks/pod_scale.py) after the admission section: pods per "
        f"step (default {pod_scale.BENCH_PODS}; --large: "
        f"{','.join(map(str, pod_scale.LARGE_PODS))}; 'none': skip)",
    )
    return p


def _rate_runs(run: _Run, sizes: list[int], opts: Options) -> list[dict[str, Any]]:
    """The unthrottled rate against the minimal client at each size the budget allows."""
    rate_runs: list[dict[str, Any]] = []
    for i, n in enumerate(sizes):
        elapsed = time.monotonic() - run.t_start
        guess = predict(run.durations, "rate", n)
        if run.args.budget and guess is not None and elapsed + guess > run.args.budget:
            run.skipped.append({"scenario": "rate", "jobs": n, "reason": f"budget: {guess:.0f}s"})
            continue
        run.console.print(f"rate {n}: controller, minimal client, sim limit ...")
        t = time.monotonic()
        first = "controller" if i % 2 == 0 else "minimal"
        rate_entry = asyncio.run(rate.run_size(n, opts, first))
        run.durations[("rate", n)] = rate_entry["step_seconds"] = round(time.monotonic() - t, 1)
        rate_runs.append(rate_entry)
        run.console.print(rate.one_line(rate_entry))
    return rate_runs


def _pod_sections(run: _Run, sizes: list[int], opts: Options) -> dict[str, Any]:
    """Fairness, recovery, pod admission and the pod-scale climb."""
    args, console = run.args, run.console
    extra: dict[str, Any] = {}
    console.print(f"fairness at {max(sizes)} Jobs per large JobSet ...")
    extra["fairness"] = asyncio.run(fairness.run(max(sizes), opts))
    console.print(fairness.one_line(extra["fairness"]))
    console.print("recovery per restart strategy ...")
    # InPlaceRestart runs real agents (~0.4 s CPU each to start, twice per recovery):
    # `make bench` runs it at BENCH_IN_PLACE_JOBS Jobs to stay in its budget, `--large`
    # at the full 32 x 8.
    extra["recovery"] = asyncio.run(
        recovery.run_all(
            list(recovery.STRATEGIES),
            Options(timeout=args.timeout),
            real_jobs=None if args.large else BENCH_IN_PLACE_JOBS,
        )
    )
    for r in extra["recovery"]["runs"]:
        console.print(recovery.one_line(r))
    console.print("pod admission under load ...")
    extra["admission"] = asyncio.run(admission.run(min(args.timeout, 180.0)))
    console.print(admission.one_line(extra["admission"]))
    steps = _pod_scale_sizes(args.pod_scale, args.large)
    if steps:
        console.print(f"pod scale at --sim-level pods: {steps} pods ...")
        # bench-large also records where each process's CPU went (py-spy, if installed).
        prof = RESULTS / "profiles" if args.large and profiling.available() else None
        extra["pod_scale"] = asyncio.run(pod_scale.run(steps, progress=console.print, profile=prof))
    return extra


def _over_budget(run: _Run, scenario: str, n: int) -> str | None:
    """Why the step is skipped, if it would overrun the budget."""
    elapsed = time.monotonic() - run.t_start
    guess = predict(run.durations, scenario, n)
    budget = run.args.budget
    if guess is None and budget and elapsed > budget * 0.85:
        guess = budget  # nothing to predict from and little time left
    if budget and guess is not None and elapsed + guess > budget:
        return f"budget: predicted {guess:.0f}s at {elapsed:.0f}s of {budget:.0f}s"
    return None


def _scenario_runs(
    run: _Run, sizes: list[int], scenarios: list[str], opts: Options
) -> list[dict[str, Any]]:
    """Both sides of every scenario at every size the budget allows, with a progress bar."""
    runs: list[dict[str, Any]] = []
    weight = {n: n for n in sizes}
    total = sum(weight[n] * 2 for n in sizes for _ in scenarios)
    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
        console=run.console,
    ) as progress:
        task = progress.add_task("starting", total=total)
        for i, n, scenario in step_order(sizes, scenarios):
            order = SIDES if i % 2 == 0 else SIDES[::-1]
            reason = _over_budget(run, scenario, n)
            if reason is not None:
                run.skipped.append({"scenario": scenario, "jobs": n, "reason": reason})
                progress.console.print(f"[yellow]skip[/yellow] {scenario} {n}: {reason}")
                progress.advance(task, weight[n] * 2)
                continue
            entry: dict[str, Any] = {"scenario": scenario, "jobs": n, "order": list(order)}
            step_t = 0.0
            for side in order:
                label = f"{scenario} {n // 1000}k {side}"

                def status(msg: str, label: str = label) -> None:
                    progress.update(task, description=f"{label}: {msg}")

                status("starting")
                try:
                    result, took = asyncio.run(run_side(side, scenario, n, opts, status))
                except Exception as exc:
                    progress.console.print(f"[red]{label} failed:[/red] {exc!r}")
                    result, took = {"error": repr(exc)}, 0.0
                entry[side] = result
                step_t += took
                progress.advance(task, weight[n])
            run.durations[(scenario, n)] = step_t
            entry["step_seconds"] = round(step_t, 1)
            entry["ratio"] = report.ratios(entry)
            runs.append(entry)
            progress.console.print(report.one_line(entry))
    return runs


def _guard(console: Console, data: dict[str, Any], path: Path = cpu_guard.SERIES_FILE) -> None:
    """Append the simulator's CPU per pod at the guard's size to its series and say whether
    it rose more than the guard allows (benchmarks/cpu_guard.py)."""
    new = cpu_guard.entry(
        data.get("pod_scale") or {}, data.get("commit") or "", data["command"], data["started"]
    )
    if new is None:
        return
    entries = cpu_guard.record(new, path)
    data["sim_cpu_guard"] = {"entry": new, "verdicts": cpu_guard.verdicts(entries)}
    for v in data["sim_cpu_guard"]["verdicts"]:
        style = "bold red" if v["flagged"] else "green"
        console.print(f"[{style}]{cpu_guard.verdict_line(v)}[/{style}]")


def _finish(run: _Run, data: dict[str, Any], out: Path) -> int:
    """Placement if there is time, the goals, the JSON, the tables and RESULTS.md; 1 if a
    side or a rate phase failed."""
    args, console = run.args, run.console
    elapsed = time.monotonic() - run.t_start
    want_placement = args.placement == "yes" or (
        args.placement == "auto" and (not args.budget or elapsed + 90 < args.budget)
    )
    if want_placement:
        console.print("placement: 4 strategies on 64 domains ...")
        data["placement"] = run_placement(console, RESULTS / "placement_64.json")
        console.print("placement: 12 gangs for a cluster that holds 10 ...")
        data["placement_gang"] = run_gang(console, RESULTS / "gang.json")
    elapsed = time.monotonic() - run.t_start
    if args.cli == "yes" or (
        args.cli == "auto" and (not args.budget or elapsed + 60 < args.budget)
    ):
        console.print("cli latency: jobset get/describe/tree beside kubectl get ...")
        data["cli_latency"] = run_cli_latency(console, RESULTS / "cli_latency.json")
    elapsed = time.monotonic() - run.t_start
    if args.dns == "yes" or (
        args.dns == "auto" and (not args.budget or elapsed + 30 < args.budget)
    ):
        console.print("dns latency: cluster DNS with the API server idle and loaded ...")
        dns = dns_latency.run(300, command="make bench")
        console.print(f"dns latency: {dns['unloaded']['median_ms']} ms idle, "
                      f"{dns['loaded']['median_ms']} ms loaded (median)")  # fmt: skip
        data["dns_latency"] = dns
    _guard(console, data)
    data["goals"] = report.goals(data)
    data["wall_seconds"] = round(time.monotonic() - run.t_start, 1)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=2) + "\n")
    console.print(report.table(data))
    console.print(report.goals_table(data))
    console.print(f"wrote {out} ({data['wall_seconds']:.0f}s)")
    if not args.no_report:
        for path in report.write_all(RESULTS):
            console.print(f"wrote {path}")
    runs, rate_runs = data["runs"], data["rate"]["runs"]
    failed = [s for r in runs for s in SIDES if "error" in r.get(s, {})]
    failed += [s for r in rate_runs for s in ("controller", "minimal", "limit") if "error" in r[s]]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
