"""Generate the Grafana dashboard of the JobSet controller.

    python tools/gen_dashboard.py   # writes charts/jobset/files/dashboards/jobset-controller.json

The chart ships the JSON as a ConfigMap for the Grafana sidecar. Panels are written here
as (title, PromQL, legend) so they stay consistent: a datasource variable, a `$job`
variable (the scrape job; "jobset-controller", the ServiceMonitor's relabeling, by default,
any job that exports the controller's series to choose from), `$controller` and
`$namespace` variables chained on it, grid positions computed. No query names a job
itself. A test checks the committed file matches this output, and
tests/integration/deploy/test_prometheus.py resolves the variables through a real
Prometheus scraping a real `jobset dev` and runs every query with them.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "charts/jobset/files/dashboards/jobset-controller.json"
UID = "jobset-controller"
DEFAULT_JOB = "jobset-controller"
JOB = 'job=~"$job"'
CTRL = f'{JOB}, controller=~"$controller"'
NS = f'{JOB}, namespace=~"$namespace"'
RATE = "$__rate_interval"


@dataclass
class Panel:
    title: str
    targets: list[tuple[str, str]]  # (expr, legendFormat)
    unit: str = "short"
    description: str = ""
    kind: str = "timeseries"
    width: int = 8
    stack: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def _quantiles(metric: str, selector: str, by: str = "") -> list[tuple[str, str]]:
    group = f"{by}, le" if by else "le"
    legend_by = f"{{{{{by}}}}} " if by else ""
    return [
        (
            f"histogram_quantile({q}, sum by ({group}) "
            f"(rate({metric}_bucket{{{selector}}}[{RATE}])))",
            f"{legend_by}p{int(q * 100)}",
        )
        for q in (0.5, 0.9, 0.99)
    ]


ROWS: list[tuple[str, list[Panel]]] = [
    (
        "Controller",
        [
            Panel(
                "Replicas up",
                [(f"sum(up{{{JOB}}})", "up")],
                kind="stat",
                width=4,
                description="Controller replicas Prometheus scrapes successfully.",
            ),
            Panel(
                "Leader",
                [(f"max by (name) (leader_election_master_status{{{JOB}}})", "{{name}}")],
                kind="stat",
                width=4,
                description="1 when a replica holds the leader-election lease (with "
                "--leader-elect). 0 for 5 minutes fires JobSetControllerNoLeader.",
            ),
            Panel(
                "Leading replica",
                [(f"leader_election_master_status{{{JOB}}} == 1", "{{instance}}")],
                kind="table",
                width=4,
                description="Which replica reconciles.",
            ),
            Panel(
                "Active workers",
                [
                    (
                        f"sum by (controller) (controller_runtime_active_workers{{{CTRL}}})",
                        "{{controller}} active",
                    ),
                    (
                        f"sum by (controller) (controller_runtime_max_concurrent_reconciles{{{CTRL}}})",
                        "{{controller}} max",
                    ),
                ],
                width=12,
            ),
            Panel(
                "Reconciles by result",
                [
                    (
                        f"sum by (controller, result) (rate(controller_runtime_reconcile_total{{{CTRL}}}[{RATE}]))",
                        "{{controller}} {{result}}",
                    )
                ],
                unit="ops",
                stack=True,
            ),
            Panel(
                "Reconcile errors",
                [
                    (
                        f"sum by (controller) (rate(controller_runtime_reconcile_errors_total{{{CTRL}}}[{RATE}]))",
                        "{{controller}}",
                    ),
                    (
                        f"sum by (controller) (rate(controller_runtime_reconcile_panics_total{{{CTRL}}}[{RATE}]))",
                        "{{controller}} unexpected exceptions",
                    ),
                    (
                        f"sum by (controller) (rate(controller_runtime_terminal_reconcile_errors_total{{{CTRL}}}[{RATE}]))",
                        "{{controller}} terminal (not retried)",
                    ),
                ],
                unit="ops",
                description="Failed passes are retried with exponential backoff, terminal "
                'errors are not; see the controller\'s logs ("Reconciler error") for the '
                "JobSet key and error.",
            ),
            Panel(
                "Reconcile latency",
                _quantiles("controller_runtime_reconcile_time_seconds", CTRL),
                unit="s",
            ),
        ],
    ),
    (
        "Work queue",
        [
            Panel(
                "Depth",
                [(f"sum by (name) (workqueue_depth{{{JOB}}})", "{{name}}")],
                description="Keys waiting for a worker. Above 100 for 15 minutes fires "
                "JobSetWorkqueueBackingUp.",
            ),
            Panel(
                "Adds and retries",
                [
                    (
                        f"sum by (name) (rate(workqueue_adds_total{{{JOB}}}[{RATE}]))",
                        "{{name}} adds",
                    ),
                    (
                        f"sum by (name) (rate(workqueue_retries_total{{{JOB}}}[{RATE}]))",
                        "{{name}} retries",
                    ),
                ],
                unit="ops",
            ),
            Panel(
                "Longest running / unfinished work",
                [
                    (
                        f"max by (name) (workqueue_longest_running_processor_seconds{{{JOB}}})",
                        "{{name}} longest running",
                    ),
                    (
                        f"sum by (name) (workqueue_unfinished_work_seconds{{{JOB}}})",
                        "{{name}} unfinished",
                    ),
                ],
                unit="s",
            ),
            Panel(
                "Queue latency (time waiting)",
                _quantiles("workqueue_queue_duration_seconds", JOB, by="name"),
                unit="s",
                width=12,
            ),
            Panel(
                "Work duration (time processing)",
                _quantiles("workqueue_work_duration_seconds", JOB, by="name"),
                unit="s",
                width=12,
            ),
        ],
    ),
    (
        "JobSets",
        [
            Panel(
                "JobSets by phase",
                [(f"sum by (phase) (jobset_jobsets{{{NS}}})", "{{phase}}")],
                stack=True,
                width=12,
            ),
            Panel(
                "Completed and failed",
                [
                    (f"sum(increase(jobset_completed_total{{{NS}}}[{RATE}]))", "completed"),
                    (f"sum(increase(jobset_failed_total{{{NS}}}[{RATE}]))", "failed"),
                ],
                width=12,
                description="JobSets that finished in each interval.",
            ),
            Panel(
                "Restarts by scope",
                [
                    (
                        f"sum by (scope) (increase(jobset_restarts_total{{{NS}}}[{RATE}]))",
                        "{{scope}}",
                    )
                ],
                description="Restarts applied by failure policies: scope=jobset restarts "
                "every Job, scope=job one Job.",
            ),
            Panel(
                "Time to all Jobs created",
                _quantiles("jobset_time_to_jobs_created_seconds", NS),
                unit="s",
            ),
            Panel(
                "Time to all Jobs ready",
                _quantiles("jobset_time_to_ready_seconds", NS),
                unit="s",
            ),
        ],
    ),
    (
        "API client",
        [
            Panel(
                "Requests by code",
                [
                    (
                        f"sum by (code) (rate(rest_client_requests_total{{{JOB}}}[{RATE}]))",
                        "{{code}}",
                    )
                ],
                unit="reqps",
                stack=True,
            ),
            Panel(
                "Requests by method",
                [
                    (
                        f"sum by (method) (rate(rest_client_requests_total{{{JOB}}}[{RATE}]))",
                        "{{method}}",
                    )
                ],
                unit="reqps",
                stack=True,
            ),
            Panel(
                "Request latency p99 by verb",
                [
                    (
                        f"histogram_quantile(0.99, sum by (verb, le) "
                        f"(rate(rest_client_request_duration_seconds_bucket{{{JOB}}}[{RATE}])))",
                        "{{verb}}",
                    )
                ],
                unit="s",
            ),
            Panel(
                "Client rate limiter wait p99",
                [
                    (
                        f"histogram_quantile(0.99, sum by (verb, le) "
                        f"(rate(rest_client_rate_limiter_duration_seconds_bucket{{{JOB}}}[{RATE}])))",
                        "{{verb}}",
                    )
                ],
                unit="s",
                width=12,
                description="Time requests wait for the client-side --qps/--burst limiter. "
                "Long waits: raise --qps and --burst.",
            ),
            Panel(
                "Admission requests by webhook and code",
                [
                    (
                        f"sum by (webhook, code) (rate(controller_runtime_webhook_requests_total{{{JOB}}}[{RATE}]))",
                        "{{webhook}} {{code}}",
                    )
                ],
                unit="reqps",
                width=12,
            ),
        ],
    ),
    (
        "Process",
        [
            Panel(
                "CPU",
                [(f"rate(process_cpu_seconds_total{{{JOB}}}[{RATE}])", "{{instance}}")],
                unit="percentunit",
                width=12,
            ),
            Panel(
                "Resident memory",
                [(f"process_resident_memory_bytes{{{JOB}}}", "{{instance}}")],
                unit="bytes",
                width=12,
            ),
        ],
    ),
]


def _datasource() -> dict[str, str]:
    return {"type": "prometheus", "uid": "${datasource}"}


def _panel(panel: Panel, pid: int, x: int, y: int, height: int) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": pid,
        "type": panel.kind,
        "title": panel.title,
        "datasource": _datasource(),
        "gridPos": {"h": height, "w": panel.width, "x": x, "y": y},
        "targets": [
            {
                "datasource": _datasource(),
                "expr": expr,
                "legendFormat": legend,
                "refId": chr(ord("A") + i),
                **({"instant": True, "format": "table"} if panel.kind == "table" else {}),
            }
            for i, (expr, legend) in enumerate(panel.targets)
        ],
        "fieldConfig": {"defaults": {"unit": panel.unit}, "overrides": []},
        "options": {},
    }
    if panel.description:
        out["description"] = panel.description
    if panel.kind == "timeseries":
        out["fieldConfig"]["defaults"]["custom"] = {
            "stacking": {"mode": "normal" if panel.stack else "none"},
            "fillOpacity": 20 if panel.stack else 0,
        }
        out["options"] = {"legend": {"displayMode": "list", "placement": "bottom"}}
    out.update(panel.extra)
    return out


def _variable(name: str, label: str, query: str) -> dict[str, Any]:
    return {
        "name": name,
        "label": label,
        "type": "query",
        "datasource": _datasource(),
        "query": {"query": query, "refId": name},
        "definition": query,
        "includeAll": True,
        "multi": True,
        "allValue": ".*",
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
        "refresh": 2,
        "sort": 1,
    }


def _job_variable() -> dict[str, Any]:
    """The scrape job: every job with the controller's reconcile series, the chart's
    ServiceMonitor job by default (a Prometheus set up by hand names its own)."""
    query = "label_values(controller_runtime_reconcile_total, job)"
    variable = _variable("job", "Job", query)
    del variable["allValue"]
    return {
        **variable,
        "includeAll": False,
        "current": {"selected": True, "text": [DEFAULT_JOB], "value": [DEFAULT_JOB]},
    }


def dashboard() -> dict[str, Any]:
    panels: list[dict[str, Any]] = []
    pid = 1
    y = 0
    for row_title, row_panels in ROWS:
        panels.append(
            {
                "id": pid,
                "type": "row",
                "title": row_title,
                "collapsed": False,
                "gridPos": {"h": 1, "w": 24, "x": 0, "y": y},
                "panels": [],
            }
        )
        pid += 1
        y += 1
        x = 0
        height = 8
        for panel in row_panels:
            if x + panel.width > 24:
                x = 0
                y += height
            panels.append(_panel(panel, pid, x, y, height))
            pid += 1
            x += panel.width
        y += height
    return {
        "uid": UID,
        "title": "JobSet controller",
        "description": "Reconciles, work queue, JobSets, API client and process of the JobSet "
        "controller (jobset-py). Alerts: docs/operations.md#alerts.",
        "tags": ["jobset", "kubernetes", "controller"],
        "editable": True,
        "graphTooltip": 1,
        "refresh": "30s",
        "schemaVersion": 39,
        "version": 1,
        "time": {"from": "now-6h", "to": "now"},
        "timezone": "",
        "annotations": {"list": []},
        "links": [],
        "templating": {
            "list": [
                {
                    "name": "datasource",
                    "label": "Data source",
                    "type": "datasource",
                    "query": "prometheus",
                    "current": {},
                    "hide": 0,
                },
                _job_variable(),
                _variable(
                    "controller",
                    "Controller",
                    f"label_values(controller_runtime_reconcile_total{{{JOB}}}, controller)",
                ),
                _variable(
                    "namespace", "Namespace", f"label_values(jobset_jobsets{{{JOB}}}, namespace)"
                ),
            ]
        },
        "panels": panels,
    }


def render() -> str:
    return json.dumps(dashboard(), indent=2, sort_keys=False) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="gen_dashboard.py", description="Write the Grafana dashboard JSON."
    )
    parser.add_argument("out", nargs="?", type=Path, default=OUT, help=f"default: {OUT}")
    out: Path = parser.parse_args(argv[1:]).out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render())
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
