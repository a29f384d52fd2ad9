"""Goals, RESULTS.md section and plot of the pod-scale climb (`benchmarks/pod_scale.py`),
for `benchmarks.report`: the largest JobSet that runs end to end at `--sim-level pods`,
against the published anchor (50,000 pods in under 120 s, 417 pods/s)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.pod_scale import (
    ANCHOR_PODS,
    ANCHOR_RATE,
    ANCHOR_SECONDS,
    GOAL_NO_SERVICE_SECONDS,
    GOAL_SERVICE_SECONDS,
    SERIES,
)

PROCESSES = ("controller", "sim", "harness")


def _series(data: dict[str, Any]) -> list[dict[str, Any]]:
    return list((data.get("pod_scale") or {}).get("series") or [])


def _goal_name(ser: dict[str, Any]) -> str:
    return (
        f"largest JobSet at --sim-level pods vs the anchor ({ANCHOR_PODS:,} pods Running in "
        f"< {ANCHOR_SECONDS:.0f} s = {ANCHOR_RATE:.0f} pods/s), {ser['series']}"
    )


def _size(s: dict[str, Any]) -> str:
    return f"{s['pods']:,} pods ({s['jobs']:,} Jobs x {s['pods_per_job']})"


def goals(data: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for ser in _series(data):
        largest = ser.get("largest")
        stopped = ser.get("stopped")
        steps = ser.get("steps") or []
        if largest is None:
            why = stopped["reason"][:200] if stopped else "no step ran"
            out.append({"goal": _goal_name(ser), "measured": f"failed: {why}", "met": None})
            continue
        step = next(s for s in steps if s["completed"] and s["pods"] == largest["pods"])
        text = (
            f"largest {_size(step)}: all Running in {largest['seconds_to_all_running']:.1f} s, "
            f"{largest['pods_per_second']:.0f} pods/s = {largest['ratio_to_anchor']:.2f} x the "
            f"anchor's rate; busiest process {largest['bottleneck']}"
        )
        reached = ser.get("anchor_size_within_anchor_time")
        met: bool | None
        if reached is not None:
            met = bool(reached)
            at = next(s for s in steps if s["completed"] and s["pods"] >= ANCHOR_PODS)
            if at is not step:
                text += (
                    f"; {_size(at)}: all Running in {at['seconds']['running']:.1f} s, "
                    f"{at['pods_per_second']:.0f} pods/s = {at['ratio_to_anchor']:.2f} x"
                )
        elif stopped is not None:
            text += f"; stopped at {stopped['pods']:,} pods: {stopped['reason'][:160]}"
            met = False
        else:
            text += f"; {ANCHOR_PODS:,} pods not tried in this run (make bench-large)"
            met = None
        out.append({"goal": _goal_name(ser), "measured": text, "met": met})
    return out + [_time_goal(ser) for ser in _series(data)]


def _time_goal(ser: dict[str, Any]) -> dict[str, Any]:
    """The simulator's own goal: the anchor's size all Running within the series' seconds."""
    limit = GOAL_SERVICE_SECONDS if ser["series"] == SERIES[True] else GOAL_NO_SERVICE_SECONDS
    name = f"{ANCHOR_PODS:,} pods all Running in < {limit:.0f} s on 2 cores, {ser['series']}"
    at = next((s for s in ser.get("steps") or [] if s["pods"] == ANCHOR_PODS), None)
    if at is None:
        text = f"{ANCHOR_PODS:,} pods not tried in this run"
        return {"goal": name, "measured": text, "met": None}
    if not at["completed"]:
        text = f"did not complete: {str(at.get('stopped', ''))[:160]}"
        return {"goal": name, "measured": text, "met": False}
    running = float(at["seconds"]["running"])
    sim_ms = 1000.0 * float(at["cpu_seconds"]["sim"]) / ANCHOR_PODS
    text = f"all Running in {running:.1f} s; simulator {sim_ms:.2f} ms CPU per pod"
    return {"goal": name, "measured": text, "met": running < limit}


def _row(ser: dict[str, Any], s: dict[str, Any]) -> list[str]:
    secs = s.get("seconds") or {}

    def sec(k: str) -> str:
        return f"{secs[k]:.1f}" if k in secs else "-"

    cpu = s.get("cpu_seconds") or {}
    share = s.get("cpu_share") or {}
    rss = s.get("rss_peak_mib") or {}
    return [
        ser["series"],
        f"{s['jobs']:,} x {s['pods_per_job']}",
        f"{s['pods']:,}",
        f"{s['nodes']:,}",
        sec("jobs_created"),
        sec("created"),
        sec("scheduled"),
        sec("running") if s.get("completed") else f"> {s.get('wall_seconds', 0):.0f}",
        f"{s.get('pods_per_second', 0):.0f}",
        f"{s.get('ratio_to_anchor', 0):.2f}",
        " / ".join(f"{cpu[p]:.1f} ({share.get(p, 0):.2f})" for p in PROCESSES if p in cpu),
        " / ".join(f"{rss[p]:.0f}" for p in ("controller", "sim") if p in rss),
        f"{s.get('load_1m_max', max(s.get('load_1m') or [0])):.1f}",
        "yes" if s.get("completed") else f"no: {s.get('stopped', '')[:120]}",
    ]


HEADERS = [
    "series",
    "Jobs x pods",
    "pods",
    "nodes",
    "Jobs created s",
    "pods created s",
    "all scheduled s",
    "all Running s",
    "pods/s",
    "x anchor",
    "CPU s (core share) controller / sim / harness",
    "peak RSS MiB controller / sim",
    "load (1 min, max)",
    "completed",
]


def _profile_lines(data: dict[str, Any]) -> list[str]:
    """Where the simulator's CPU went in the largest profiled step of each series."""
    lines: list[str] = []
    for ser in _series(data):
        profiled = [s for s in ser.get("steps") or [] if (s.get("profile") or {}).get("sim")]
        if not profiled:
            continue
        s = max(profiled, key=lambda x: x["pods"])
        by = s["profile"]["sim"].get("by_component") or {}
        top = ", ".join(f"{k} {v:.0%}" for k, v in list(by.items())[:6])
        lines.append(f"- {ser['series']}, {s['pods']:,} pods: simulator CPU by component: {top}")
    return lines + _part_tables(data)


def _part_tables(data: dict[str, Any]) -> list[str]:
    """Per series, the simulator's CPU ms per pod by part (`benchmarks/sim_parts.py`) in the
    largest step profiled with parts."""
    from benchmarks.report import markdown_table

    lines: list[str] = []
    for ser in _series(data):
        profiled = [
            s
            for s in ser.get("steps") or []
            if ((s.get("profile") or {}).get("sim") or {}).get("by_part")
        ]
        if not profiled:
            continue
        s = max(profiled, key=lambda x: x["pods"])
        ms = (s.get("cpu_seconds") or {}).get("sim", 0.0) * 1000.0 / s["pods"]
        rows = [
            [part, f"{share:.0%}", f"{share * ms:.2f}"]
            for part, share in s["profile"]["sim"]["by_part"].items()
        ]
        rows.append(["all", "100%", f"{ms:.2f}"])
        lines += [
            "",
            f"Where the simulator's CPU per pod goes, {ser['series']}, {s['pods']:,} pods "
            "(py-spy samples by the innermost part of the simulator they ran in, "
            "`benchmarks/sim_parts.py`; reproduce: `.venv/bin/python -m benchmarks.pod_scale "
            f"--pods {s['pods']} --profile DIR`):",
            "",
            markdown_table(["part", "share of samples", "sim CPU ms per pod"], rows),
        ]
    return lines


def section(data: dict[str, Any], prefix: str, with_plots: bool = True) -> list[str]:
    from benchmarks.report import markdown_table

    series = _series(data)
    if not any(ser.get("steps") for ser in series):
        return []
    ps = data["pod_scale"]
    lines = [
        "### Scale at `--sim-level pods` (`benchmarks/pod_scale.py`)",
        "",
        "One JobSet of J Jobs x 8 simulated pods (`sleep infinity`, one CPU each) on 8-CPU "
        "nodes (a quarter spare), `jobset controller` at its shipped defaults; sizes climb "
        f"until a step passes {ps.get('step_limit_seconds', 0):.0f} s or "
        f"{ps.get('memory_limit_gib', 0):.0f} GiB of controller + simulator RSS. Times from "
        "the create, on the harness's pod watch (Jobs created: the API server's record of "
        "the controller's last create). *x anchor*: pods/s over the anchor's "
        f"{ANCHOR_PODS:,} pods / {ANCHOR_SECONDS:.0f} s = {ANCHOR_RATE:.0f} pods/s. The "
        "controller, the simulator (API server, Job controller, scheduler, kubelets: one "
        "process) and the harness share the 2 cores; *core share* is CPU seconds over the "
        "wall time to all Running.",
        "",
        markdown_table(HEADERS, [_row(ser, s) for ser in series for s in ser.get("steps") or []]),
        "",
    ]
    for ser in series:
        st = ser.get("stopped")
        if st:
            lines.append(f"- {ser['series']}: stopped at {st['pods']:,} pods: {st['reason']}")
    lines += _profile_lines(data)
    if lines[-1] != "":
        lines.append("")
    if with_plots:
        lines += [f"![pod scale](results/{prefix}_pod_scale.png)", ""]
    return lines


def plots(data: dict[str, Any], results: Path, prefix: str) -> list[Path]:
    """Time to all Running against pods per series, with the anchor's rate; and each
    process's core share per step."""
    series = [ser for ser in _series(data) if ser.get("steps")]
    if not series:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), dpi=110)
    biggest = max(s["pods"] for ser in series for s in ser["steps"])
    xs = [500, max(ANCHOR_PODS * 2, biggest)]
    left.plot(
        xs, [x / ANCHOR_RATE for x in xs], "k:", label=f"anchor rate {ANCHOR_RATE:.0f} pods/s"
    )
    left.plot(
        [ANCHOR_PODS],
        [ANCHOR_SECONDS],
        "k*",
        markersize=12,
        label=f"anchor: {ANCHOR_PODS // 1000}k pods, {ANCHOR_SECONDS:.0f} s",
    )
    for i, ser in enumerate(series):
        done = [s for s in ser["steps"] if s.get("completed")]
        left.plot(
            [s["pods"] for s in done],
            [s["seconds"]["running"] for s in done],
            marker="o",
            color=f"C{i}",
            label=ser["series"],
        )
        for s in ser["steps"]:
            if not s.get("completed") and s.get("wall_seconds"):
                left.plot([s["pods"]], [s["wall_seconds"]], "x", color=f"C{i}", markersize=10)
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("pods in the JobSet")
    left.set_ylabel("seconds to all Running")
    left.set_title("JobSet created -> every pod Running (x: stopped)", fontsize=10)
    left.grid(True, which="both", alpha=0.3)
    left.legend(fontsize=8)
    pairs = [(ser, s) for ser in series for s in ser["steps"] if s.get("cpu_share")]
    steps = [s for _, s in pairs]
    labels = [
        f"{s['pods'] / 1000:g}k\n{'Service' if ser['dns_hostnames'] else 'none'}"
        for ser, s in pairs
    ]
    bottom = [0.0] * len(steps)
    for j, proc in enumerate(PROCESSES):
        vals = [s["cpu_share"].get(proc, 0.0) for s in steps]
        right.bar(range(len(steps)), vals, bottom=bottom, color=f"C{j + 3}", label=proc)
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    right.axhline(2.0, color="r", linestyle=":", label="2 cores")
    right.set_xticks(range(len(steps)))
    right.set_xticklabels(labels, fontsize=7)
    right.set_ylabel("CPU seconds / wall second")
    right.set_title("Core share per process over the step", fontsize=10)
    right.legend(fontsize=8)
    fig.tight_layout()
    path = results / f"{prefix}_pod_scale.png"
    fig.savefig(path)
    plt.close(fig)
    return [path]
