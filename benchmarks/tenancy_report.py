"""Goals and RESULTS.md sections of the admission, recovery and fairness benchmarks
(`benchmarks/admission.py`, `recovery.py`, `fairness.py`), for `benchmarks.report`."""

from __future__ import annotations

from typing import Any

from benchmarks import in_place
from benchmarks.admission import GOAL_P99_MS, GOAL_POD_RATE
from benchmarks.fairness import GOAL_SECONDS

GOAL_RECOVERY = "measured against the pod-creation limit (no fixed goal)"


def goals(data: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    adm = data.get("admission") or {}
    lo = adm.get("load") or {}
    g1 = f"pod webhooks at 1,000 pods/s: p99 <= {GOAL_P99_MS:.0f} ms on one core"
    if "p99_ms" in lo:
        out.append(
            {
                "goal": g1,
                "measured": f"p99 {lo['p99_ms']:.1f} ms, p50 {lo['p50_ms']:.1f} ms, "
                f"{lo['pods_per_second']:.0f} pods/s sustained of {lo['target_pods_per_second']:.0f}, "
                f"webhook {lo['webhook_cpu_ms_per_pod']:.2f} ms CPU/pod, "
                f"{lo['webhook_core_share']:.2f} core",
                "met": lo["p99_ms"] <= GOAL_P99_MS
                and lo["pods_per_second"] >= 0.95 * lo["target_pods_per_second"],
            }
        )
    else:
        out.append({"goal": g1, "measured": _why(lo), "met": None})
    g2 = f"Job controller pod creation with the webhooks >= {GOAL_POD_RATE} x without"
    ratio = adm.get("pod_rate_with_over_without")
    if ratio is not None:
        w, wo = adm["with_webhook"], adm["without_webhook"]
        out.append(
            {
                "goal": g2,
                "measured": f"{ratio:.2f} x ({w['pods_per_second']:.0f} vs "
                f"{wo['pods_per_second']:.0f} pods/s, {w['pods']} pods)"
                + (
                    f"; sim CPU {w['sim_cpu_ms_per_pod']:.2f} vs {wo['sim_cpu_ms_per_pod']:.2f}"
                    f" ms/pod, webhook {w['webhook_cpu_ms_per_pod']:.2f} ms/pod"
                    if "sim_cpu_ms_per_pod" in w and "sim_cpu_ms_per_pod" in wo
                    else ""
                ),
                "met": ratio >= GOAL_POD_RATE,
            }
        )
    else:
        out.append({"goal": g2, "measured": _why(adm.get("with_webhook")), "met": None})
    rec = (data.get("recovery") or {}).get("runs") or []
    if rec:
        parts = [
            f"{r['strategy']}: {r['recovery_seconds']:.1f}s vs {r['fresh_seconds']:.1f}s fresh "
            f"({r['fresh_over_recovery']:.2f})"
            if "error" not in r
            else f"{r['strategy']}: failed"
            for r in rec
        ]
        sizes = sorted({f"{r['jobs']} Jobs x {r['pods'] // max(1, r['jobs'])} pods" for r in rec})
        out.append(
            {
                "goal": f"recovery time to all pods Running, {' / '.join(sizes)} ({GOAL_RECOVERY})",
                "measured": "; ".join(parts),
                "met": None if any("error" in r for r in rec) else "measured (no fixed goal)",
            }
        )
    fair = (data.get("fairness") or {}).get("cases") or []
    for case in fair:
        goal = (
            f"a 3-Job JobSet gets its Jobs within {GOAL_SECONDS:.0f} s while "
            f"{case['large_jobsets']} x {case['jobs_per_large']:,}-Job JobSet(s) are created"
        )
        if "error" in case:
            out.append({"goal": goal, "measured": _why(case), "met": None})
            continue
        out.append(
            {
                "goal": goal,
                "measured": f"{case['small_seconds']:.2f} s ({case['large_jobs_created_meanwhile']} "
                f"large Jobs created meanwhile)",
                "met": case["small_seconds"] <= GOAL_SECONDS,
            }
        )
    return out


def _why(x: Any) -> str:
    if isinstance(x, dict) and "error" in x:
        return f"failed: {x['error'][:200]}"
    return "not measured in this run"


def _opt(r: dict[str, Any], key: str) -> str:
    return f"{r[key]:.2f}" if key in r else "-"


def section(data: dict[str, Any]) -> list[str]:
    """RESULTS.md's sections on pod admission, recovery and fairness."""
    return _admission_section(data) + _recovery_section(data) + _fairness_section(data)


def _admission_section(data: dict[str, Any]) -> list[str]:
    from benchmarks.report import markdown_table

    lines: list[str] = []
    adm = data.get("admission") or {}
    lo = adm.get("load") or {}
    side = lo.get("server_side") or {}
    if "p99_ms" in lo:
        lines += [
            "### Pod admission under load",
            "",
            f"`benchmarks/admission.py`: open-loop generators ({lo.get('generators', '?')} "
            "processes) send each pod's "
            "mutating then validating review straight to the webhook process (the controller "
            "harness, one asyncio process) at the target rate; latency from when the pod was "
            "due. The webhook's own time against the machine's: its mean server-side "
            "review time, event-loop lag p99 (bucket bound), the seconds its loop waited "
            "for a CPU, the generators' CPU per pod, their full garbage collections while pods "
            "were due (each froze its heap first: a pause of theirs would count as the "
            "webhook's latency) and the load average at the end. "
            "Then the simulated Job controller creates the pods of "
            f"{adm.get('with_webhook', {}).get('pods', '?')} pods' worth of Jobs with the "
            "webhooks registered and without.",
            "",
            markdown_table(
                [
                    "target pods/s",
                    "sustained",
                    "p50 ms",
                    "p99 ms",
                    "max ms",
                    "CPU ms/pod",
                    "core",
                    "server ms/review",
                    "loop lag p99 ms",
                    "CPU wait s",
                    "generators CPU ms/pod",
                    "generators' full GCs",
                    "load avg",
                ],
                [
                    [
                        f"{lo['target_pods_per_second']:.0f}",
                        f"{lo['pods_per_second']:.0f}",
                        f"{lo['p50_ms']:.1f}",
                        f"{lo['p99_ms']:.1f}",
                        f"{lo['max_ms']:.1f}",
                        f"{lo['webhook_cpu_ms_per_pod']:.3f}",
                        f"{lo['webhook_core_share']:.2f}",
                        f"{side.get('review_mean_ms', 0):.3f}" if side else "-",
                        f"<= {side.get('loop_lag_p99_le_ms', 0):g}" if side else "-",
                        f"{lo['webhook_runqueue_wait_seconds']:.1f}"
                        if "webhook_runqueue_wait_seconds" in lo
                        else "-",
                        f"{lo['generator_cpu_ms_per_pod']:.2f}"
                        if "generator_cpu_ms_per_pod" in lo
                        else "-",
                        str(lo.get("generator_full_collections", "-")),
                        f"{lo['load_average_1m'][-1]:.1f}" if "load_average_1m" in lo else "-",
                    ]
                ],
            ),
            "",
        ]
    return lines


def _recovery_section(data: dict[str, Any]) -> list[str]:
    from benchmarks.report import markdown_table

    lines: list[str] = []
    rec = (data.get("recovery") or {}).get("runs") or []
    ok = [r for r in rec if "error" not in r]
    if ok:
        lines += [
            "### Recovery after a worker failure",
            "",
            "`benchmarks/recovery.py` (`--sim-level pods`, controller at the shipped defaults): "
            "*fresh* is JobSet created -> every pod Running, the pod-creation limit of this "
            "cluster; *recovery* is one worker failed -> every pod of the next attempt Running. "
            "InPlaceRestart's pods run its agent and worker as real processes (`--run-image`); "
            "its recovery is split into every agent back at the next attempt, and the "
            "controller lifting the barrier.",
            "",
            markdown_table(
                [
                    "strategy",
                    "Jobs",
                    "pods",
                    "pod processes",
                    "fresh s",
                    "recovery s",
                    "agents back s",
                    "barrier lifted s",
                    "fresh / recovery",
                ],
                [
                    [
                        r["strategy"],
                        str(r["jobs"]),
                        str(r["pods"]),
                        r.get("pod_processes", "simulated"),
                        f"{r['fresh_seconds']:.2f}",
                        f"{r['recovery_seconds']:.2f}",
                        _opt(r, "agents_back_seconds"),
                        _opt(r, "barrier_lifted_seconds"),
                        f"{r['fresh_over_recovery']:.2f}",
                    ]
                    for r in ok
                ],
            ),
            "",
        ]
        capped = [r for r in rec if "requested_jobs" in r]
        for r in capped:
            per_job = r["pods"] // max(1, r["jobs"])
            why = (
                f"the simulator's pod network holds {in_place.MAX_REAL_PODS} real pods"
                if r["requested_jobs"] * per_job > in_place.MAX_REAL_PODS
                else "its real agents are started at this size to keep the run in its budget"
            )
            lines += [
                f"{r['strategy']} ran {r['jobs']} Jobs instead of {r['requested_jobs']}: {why}.",
                "",
            ]
    return lines


def _fairness_section(data: dict[str, Any]) -> list[str]:
    from benchmarks.report import markdown_table

    lines: list[str] = []
    fair = [c for c in (data.get("fairness") or {}).get("cases") or [] if "error" not in c]
    if fair:
        lines += [
            "### Fairness between tenants (shipped defaults)",
            "",
            markdown_table(
                [
                    "large JobSets",
                    "Jobs each",
                    "small JobSet's Jobs after s",
                    "large Jobs meanwhile",
                ],
                [
                    [
                        str(c["large_jobsets"]),
                        f"{c['jobs_per_large']:,}",
                        f"{c['small_seconds']:.2f}",
                        str(c["large_jobs_created_meanwhile"]),
                    ]
                    for c in fair
                ],
            ),
            "",
        ]
    return lines
