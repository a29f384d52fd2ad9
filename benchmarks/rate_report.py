"""Goals, table and plots of the unthrottled creation rate (`benchmarks.rate`), for
`benchmarks.report`: the controller against the independent minimal client and against
the simulator's limit, as ratios measured in one run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

GOAL_RATE = 0.9  # controller Jobs/s over the minimal client's, at 16k
GOAL_CPU = 1.25  # controller CPU per Job over the minimal client's, at 16k
GOAL_AT = 16000


def _ok(x: Any) -> bool:
    return isinstance(x, dict) and "error" not in x and bool(x.get("jobs_per_second"))


def _runs(data: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted((data.get("rate") or {}).get("runs") or [], key=lambda r: int(r["jobs"]))


def goals(data: dict[str, Any]) -> list[dict[str, Any]]:
    runs = [r for r in _runs(data) if r["jobs"] >= GOAL_AT and r.get("ratio")]
    rate_goal = f"unthrottled creation rate >= {GOAL_RATE} x the minimal client at 16k"
    cpu_goal = f"client CPU per Job <= {GOAL_CPU} x the minimal client's at 16k (unthrottled)"
    if not runs:
        return [
            {"goal": g, "measured": "not measured at 16k in this run", "met": None}
            for g in (rate_goal, cpu_goal)
        ]
    r = runs[0]
    ratio = r["ratio"]
    rate = ratio.get("rate_controller_over_minimal")
    cpu = ratio.get("cpu_per_job_controller_over_minimal")
    lim = ratio.get("controller_of_limit")
    mlim = ratio.get("minimal_of_limit")
    c, m = r.get("controller") or {}, r.get("minimal") or {}
    limit_text = (
        f"; of the sim's limit: controller {lim:.2f}, minimal {mlim:.2f}"
        if lim is not None and mlim is not None
        else ""
    )
    return [
        {
            "goal": rate_goal,
            "measured": (
                f"{rate:.2f} x at {r['jobs']} Jobs ({c.get('jobs_per_second', 0):.0f} vs "
                f"{m.get('jobs_per_second', 0):.0f} Jobs/s{limit_text})"
                if rate is not None
                else "a side failed"
            ),
            "met": None if rate is None else rate >= GOAL_RATE,
        },
        {
            "goal": cpu_goal,
            "measured": (
                f"{cpu:.2f} x at {r['jobs']} Jobs ({c.get('cpu_ms_per_job', 0):.3f} vs "
                f"{m.get('cpu_ms_per_job', 0):.3f} ms)"
                if cpu is not None
                else "a side failed"
            ),
            "met": None if cpu is None else cpu <= GOAL_CPU,
        },
    ]


HEADERS = [
    "Jobs",
    "Jobs/s ctl / minimal / limit",
    "rate ctl / minimal",
    "ctl of limit",
    "minimal of limit",
    "CPU ms/Job ctl / minimal",
    "CPU ctl / minimal",
    "bytes/Job ctl / minimal",
    "sim CPU ms/Job ctl / minimal",
]


def rows(data: dict[str, Any]) -> list[list[str]]:
    out: list[list[str]] = []
    for r in _runs(data):
        c, m, lim, ratio = r.get("controller"), r.get("minimal"), r.get("limit"), r["ratio"]

        def f(x: Any, key: str, fmt: str = "{:.0f}") -> str:
            return fmt.format(x[key]) if _ok(x) and x.get(key) is not None else "failed"

        def q(key: str, fmt: str = "{:.2f}", ratio: dict[str, Any] = ratio) -> str:
            return fmt.format(ratio[key]) if key in ratio else "-"

        n = int(r["jobs"])

        def sim(x: Any, n: int = n) -> str:
            return f"{1000 * x['sim_cpu_seconds'] / n:.2f}" if _ok(x) else "failed"

        out.append(
            [
                f"{n:,}",
                f"{f(c, 'jobs_per_second')} / {f(m, 'jobs_per_second')} / "
                f"{f(lim, 'jobs_per_second')}",
                q("rate_controller_over_minimal"),
                q("controller_of_limit"),
                q("minimal_of_limit"),
                f"{f(c, 'cpu_ms_per_job', '{:.3f}')} / {f(m, 'cpu_ms_per_job', '{:.3f}')}",
                q("cpu_per_job_controller_over_minimal"),
                f"{f(c, 'bytes_per_job')} / {f(m, 'bytes_per_job')}",
                f"{sim(c)} / {sim(m)}",
            ]
        )
    return out


def section(data: dict[str, Any], prefix: str, with_plots: bool) -> list[str]:
    if not _runs(data):
        return []
    from benchmarks.report import markdown_table

    lines = [
        "### Unthrottled creation rate: controller vs independent minimal client",
        "",
        "`benchmarks/rate.py`: one JobSet of N Jobs on a fresh `--sim-level none` sim per "
        "phase, no client rate limit; the minimal client (`benchmarks/minimal_client.py`, plain "
        "aiohttp, no project code) sends the controller's own Job bodies (the bytes/Job column "
        "is the sim's count: equal on both sides) 50 at a time; *limit*: "
        "3 minimal clients in parallel processes. Rates are from the sim's request record "
        "(first to last `create jobs` arrival). CPU per Job: the controller's includes "
        "planning, body building, its watch of the Jobs and its status write; the minimal "
        "client's is the sending alone.",
        "",
        markdown_table(HEADERS, rows(data)),
        "",
    ]
    errors = [
        f"- {r['jobs']:,} {side}: {r[side]['error'][:300]}"
        for r in _runs(data)
        for side in ("controller", "minimal", "limit")
        if isinstance(r.get(side), dict) and "error" in r[side]
    ]
    if errors:
        lines += ["Failed phases:", "", *errors, ""]
    if with_plots:
        lines += [f"![unthrottled rate](results/{prefix}_rate.png)", ""]
    return lines


def plots(data: dict[str, Any], results: Path, prefix: str) -> list[Path]:
    runs = _runs(data)
    if len(runs) < 2:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4.2), dpi=110)
    ns = [int(r["jobs"]) for r in runs]
    for side, style in (("controller", "o-"), ("minimal", "s--"), ("limit", "^:")):
        ys = [r[side]["jobs_per_second"] if _ok(r.get(side)) else None for r in runs]
        pts = [(n, y) for n, y in zip(ns, ys, strict=True) if y]
        if pts:
            a1.plot([p[0] for p in pts], [p[1] for p in pts], style, label=side)
    a1.set_title("Jobs created per second, unthrottled", fontsize=11)
    a1.set_ylabel("Jobs / s")
    for key, style, label in (
        ("rate_controller_over_minimal", "o-", "rate ctl / minimal"),
        ("cpu_per_job_controller_over_minimal", "s--", "CPU per Job ctl / minimal"),
        ("controller_of_limit", "^:", "ctl rate / sim limit"),
    ):
        pts = [(n, r["ratio"][key]) for n, r in zip(ns, runs, strict=True) if key in r["ratio"]]
        if pts:
            a2.plot([p[0] for p in pts], [p[1] for p in pts], style, label=label)
    a2.axhline(GOAL_RATE, color="r", linestyle=":", linewidth=0.8, label=f"rate goal {GOAL_RATE}")
    a2.axhline(GOAL_CPU, color="m", linestyle=":", linewidth=0.8, label=f"CPU goal {GOAL_CPU}")
    a2.set_title("Ratios measured side by side", fontsize=11)
    for ax in (a1, a2):
        ax.set_xscale("log")
        ax.set_xlabel("child Jobs (N)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    path = results / f"{prefix}_rate.png"
    fig.savefig(path)
    plt.close(fig)
    return [path]
