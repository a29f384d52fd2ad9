"""The regression guard on the simulator's cost: its CPU milliseconds per pod at one fixed
size of the pod-scale step, kept as a series across runs.

`make bench` runs the pod-scale step at `GUARD_PODS` pods (both series: with the JobSet's
headless Service and without) and appends one entry to `SERIES_FILE`: when, at which commit,
and per series the simulator process's CPU seconds (psutil, user + system, over the step)
divided by the pods, in ms. Process CPU is steadier than wall time on a shared machine. The
report compares the newest entry with the one before it and flags a series whose CPU per
pod rose by more than `MAX_RISE`; RESULTS.md shows the whole series.

    .venv/bin/python -m benchmarks.cpu_guard record POD_SCALE_JSON   # append a step's figures
    .venv/bin/python -m benchmarks.cpu_guard show                    # the series and verdict
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from benchmarks import pod_scale

# The size the guard compares at: the pod-scale step `make bench` runs.
GUARD_PODS: Final = pod_scale.BENCH_PODS
# A rise of the simulator's CPU per pod above this share over the last recorded run is flagged.
MAX_RISE: Final = 0.15
SERIES_FILE: Final = Path(__file__).parent / "results" / "sim_cpu_per_pod.json"


def ms_per_pod(pod_scale_data: dict[str, Any], pods: int = GUARD_PODS) -> dict[str, float]:
    """Per series, the simulator's CPU ms per pod in the completed step of `pods` pods."""
    out: dict[str, float] = {}
    for ser in pod_scale_data.get("series") or []:
        for step in ser.get("steps") or []:
            cpu = (step.get("cpu_seconds") or {}).get("sim")
            if step.get("pods") == pods and step.get("completed") and cpu is not None:
                out[str(ser["series"])] = round(cpu * 1000.0 / pods, 3)
    return out


def entry(
    pod_scale_data: dict[str, Any], commit: str, command: str, started: str | None = None
) -> dict[str, Any] | None:
    """One point of the series, or None when the data holds no completed guard-size step."""
    figures = ms_per_pod(pod_scale_data)
    if not figures:
        return None
    loads = [
        float(step["load_1m_max"])
        for ser in pod_scale_data.get("series") or []
        for step in ser.get("steps") or []
        if step.get("pods") == GUARD_PODS and step.get("load_1m_max") is not None
    ]
    return {
        "started": started or datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit,
        "command": command,
        "pods": GUARD_PODS,
        "sim_cpu_ms_per_pod": figures,
        # A loaded machine inflates CPU time too (contended caches): shown beside a rise.
        "load_1m_max": max(loads) if loads else None,
    }


def load(path: Path = SERIES_FILE) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    data = json.loads(path.read_text())
    return list(data.get("entries") or [])


def record(new: dict[str, Any], path: Path = SERIES_FILE) -> list[dict[str, Any]]:
    """Append `new` to the series in `path` (oldest first) and return the series."""
    entries = [*load(path), new]
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"pods": GUARD_PODS, "max_rise": MAX_RISE, "entries": entries}
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return entries


def verdicts(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The newest entry against the one before it, per series both measured at the same
    size: the rise and whether it passes `MAX_RISE`."""
    if len(entries) < 2:
        return []
    prev, last = entries[-2], entries[-1]
    if prev.get("pods") != last.get("pods"):
        return []
    out = []
    before = prev.get("sim_cpu_ms_per_pod") or {}
    for series, now in (last.get("sim_cpu_ms_per_pod") or {}).items():
        then = before.get(series)
        if not then:
            continue
        rise = now / then - 1.0
        out.append(
            {
                "series": series,
                "previous": then,
                "latest": now,
                "rise": round(rise, 3),
                "flagged": rise > MAX_RISE,
            }
        )
    return out


def verdict_line(v: dict[str, Any]) -> str:
    word = f"REGRESSION: over +{MAX_RISE:.0%}" if v["flagged"] else "ok"
    return (
        f"simulator CPU per pod, {v['series']}: {v['previous']:.2f} -> {v['latest']:.2f} ms "
        f"({v['rise']:+.0%}): {word}"
    )


def goals(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The guard's verdicts as goals of the run that recorded them (`benchmarks.run`)."""
    out = []
    for v in (data.get("sim_cpu_guard") or {}).get("verdicts") or []:
        out.append(
            {
                "goal": f"simulator CPU per pod at {GUARD_PODS:,} pods, {v['series']}: "
                f"<= +{MAX_RISE:.0%} over the last recorded run",
                "measured": f"{v['previous']:.2f} -> {v['latest']:.2f} ms ({v['rise']:+.0%})",
                "met": not v["flagged"],
            }
        )
    return out


def markdown(entries: list[dict[str, Any]]) -> list[str]:
    """RESULTS.md's section: the series, newest last, and the verdict on the newest."""
    if not entries:
        return []
    names = sorted({s for e in entries for s in e.get("sim_cpu_ms_per_pod") or {}})
    lines = [
        "## Regression guard: the simulator's CPU per pod (`benchmarks/cpu_guard.py`)",
        "",
        f"The simulator process's CPU ms per pod in the pod-scale step of {GUARD_PODS:,} pods "
        "(`make bench`), one row per recorded run; the newest is flagged when it is more than "
        f"{MAX_RISE:.0%} above the one before.",
        "",
        "| run | commit | " + " | ".join(names) + " | load (1 min, max) |",
        "|---|---|" + "---|" * (len(names) + 1),
    ]
    for e in entries:
        figures = e.get("sim_cpu_ms_per_pod") or {}
        cells = [f"{figures[n]:.2f}" if n in figures else "-" for n in names]
        load = e.get("load_1m_max")
        cells.append("-" if load is None else f"{load:.1f}")
        lines.append(
            f"| {e.get('started', '')} | {e.get('commit', '')} | " + " | ".join(cells) + " |"
        )
    lines.append("")
    lines += [f"- {verdict_line(v)}" for v in verdicts(entries)]
    if lines[-1] != "":
        lines.append("")
    return lines


def main(argv: list[str] | None = None) -> int:
    from benchmarks.harness import commit

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record", help="append the guard-size step of a pod_scale JSON")
    rec.add_argument("json", help="the --out file of benchmarks.pod_scale")
    rec.add_argument("--commit", default=None, help="the commit measured (default: this one)")
    sub.add_parser("show", help="print the series' verdict")
    args = p.parse_args(argv)
    if args.cmd == "record":
        data = json.loads(Path(args.json).read_text())
        measured = args.commit or commit() or ""
        new = entry(data, measured, f"benchmarks.pod_scale --pods {GUARD_PODS}")
        if new is None:
            p.error(f"{args.json}: no completed step of {GUARD_PODS} pods")
        record(new)
    entries = load()
    for v in verdicts(entries):
        print(verdict_line(v))
    return 1 if any(v["flagged"] for v in verdicts(entries)) else 0


if __name__ == "__main__":
    sys.exit(main())
