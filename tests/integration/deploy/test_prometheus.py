"""Real Prometheus scrapes a real `jobset dev` while JobSets run; its HTTP API is the judge.

One `jobset dev` (simulated cluster + controller, /metrics on a free port) and one
`prometheus` (Debian package; 127.0.0.1, a temporary TSDB, 1 s scrapes, the chart's alert
rules loaded) per module. JobSets that succeed, and one that fails after restarting, run
while Prometheus watches. Then, through /api/v1:

- the target is up and the runtime and JobSet series arrive, and move;
- the Grafana dashboard's variables resolve as Grafana resolves them (`label_values` through
  /api/v1/label), and every panel's query, with them substituted, is valid PromQL; the
  panels whose series exist after the run have data, under either scrape job: the same
  controller is scraped a second time under another job name, as a Prometheus set up by
  hand would name it, and the dashboard's `$job` offers both;
- every alert rule evaluates without error, and "controller down" does not fire;
- the scraped text passes `promtool check metrics`, and docs/metrics.md lists every family.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesim.process import SimProcess
from tests.integration.deploy.helpers import (
    CHART,
    CRD_FILE,
    REPO,
    eventually,
    free_port,
    http_get,
)

pytestmark = [pytest.mark.kubectl, pytest.mark.prometheus]

RULES = CHART / "files" / "prometheus-rules.yaml"
DASHBOARD = CHART / "files" / "dashboards" / "jobset-controller.json"
JOB = "jobset-controller"
# The same /metrics scraped under a job name of someone's own (the dashboard must not care).
OTHER_JOB = "jobset-by-hand"

JOBSETS = """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: ok-1, namespace: default}
spec:
  replicatedJobs:
    - name: workers
      replicas: 2
      template:
        spec:
          parallelism: 2
          completions: 2
          template:
            spec:
              restartPolicy: Never
              containers: [{name: main, image: busybox, command: [sleep, "20s"]}]
---
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: ok-2, namespace: default}
spec:
  network: {enableDNSHostnames: true}
  replicatedJobs:
    - name: leader
      replicas: 1
      template:
        spec:
          template:
            spec:
              restartPolicy: Never
              containers: [{name: main, image: busybox, command: [sleep, "20s"]}]
    - name: workers
      replicas: 3
      template:
        spec:
          template:
            spec:
              restartPolicy: Never
              containers: [{name: main, image: busybox, command: [sleep, "30s"]}]
---
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: flaky, namespace: default}
spec:
  failurePolicy: {maxRestarts: 2}
  replicatedJobs:
    - name: workers
      replicas: 1
      template:
        spec:
          backoffLimit: 0
          template:
            spec:
              restartPolicy: Never
              containers: [{name: main, image: busybox, command: [sh, -c, "sleep 10; exit 1"]}]
"""


@dataclass
class Stack:
    dev: subprocess.Popen[str]
    prometheus: subprocess.Popen[str]
    sim: SimProcess
    metrics_url: str
    api: str
    tmp: Path
    reconciles_before: float = 0.0

    def query(self, promql: str) -> list[dict[str, Any]]:
        status, body = http_get(f"{self.api}/query?" + urllib.parse.urlencode({"query": promql}))
        data: dict[str, Any] = json.loads(body) if body.startswith("{") else {"error": body}
        assert status == 200 and data.get("status") == "success", f"{promql}: {status} {data}"
        result: list[dict[str, Any]] = data["data"]["result"]
        return result

    def value(self, promql: str) -> float:
        result = self.query(promql)
        return sum(float(r["value"][1]) for r in result)


def _start_dev(tmp: Path, metrics_port: int) -> tuple[subprocess.Popen[str], SimProcess]:
    kubeconfig = tmp / "kubeconfig"
    log = (tmp / "dev.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jobset.cli", "dev", "--kubeconfig", str(kubeconfig),
         "--time-scale", "0.1", "--nodes", "4", "--metrics-port", str(metrics_port),
         "--log-format", "json"],
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip

    def ready() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"jobset dev exited:\n{(tmp / 'dev.log').read_text()}")
        return "jobset dev ready" in (tmp / "dev.log").read_text()

    eventually(ready, within=90, interval=0.2)
    # A SimProcess view of the same cluster, for kubectl.
    sim = SimProcess(proc, kubeconfig, "", [])
    return proc, sim


def _start_prometheus(tmp: Path, metrics_port: int) -> tuple[subprocess.Popen[str], str]:
    prometheus = shutil.which("prometheus")
    assert prometheus, "prometheus is not installed: `make prometheus` (Debian package prometheus)"
    port = free_port()
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(RULES)],
        "scrape_configs": [
            {
                "job_name": job,
                "scrape_interval": "1s",
                "static_configs": [{"targets": [f"127.0.0.1:{metrics_port}"]}],
            }
            for job in (JOB, OTHER_JOB)
        ],
    }
    (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
    proc = subprocess.Popen(
        [prometheus, f"--config.file={tmp / 'prometheus.yml'}",
         f"--storage.tsdb.path={tmp / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}"],
        stdout=(tmp / "prometheus.log").open("w"),
        stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"prometheus exited:\n{(tmp / 'prometheus.log').read_text()}")
        return http_get(f"{url}/-/ready")[0] == 200

    eventually(ready, within=60, interval=0.2)
    return proc, f"{url}/api/v1"


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp("prometheus")
    metrics_port = free_port()
    dev, sim = _start_dev(tmp, metrics_port)
    prometheus: subprocess.Popen[str] | None = None
    try:
        prometheus, api = _start_prometheus(tmp, metrics_port)
        yield Stack(dev, prometheus, sim, f"http://127.0.0.1:{metrics_port}/metrics", api, tmp)
    finally:
        if prometheus is not None:
            _stop(prometheus)
        _stop(dev)


@pytest.fixture(scope="module")
def ran(stack: Stack) -> Stack:
    """JobSets ran to their ends while Prometheus scraped."""
    eventually(lambda: stack.value(f'up{{job="{JOB}"}}') == 1, within=30)
    before = stack.value(f'sum(controller_runtime_reconcile_total{{job="{JOB}"}})')
    assert CRD_FILE.exists()
    stack.sim.kubectl("apply", "--server-side", "-f", "-", input=JOBSETS)

    def finished() -> bool:
        out = json.loads(stack.sim.kubectl("get", "jobsets", "-o", "json").stdout)
        terminal = {
            js["metadata"]["name"]: js.get("status", {}).get("terminalState") for js in out["items"]
        }
        return terminal == {"ok-1": "Completed", "ok-2": "Completed", "flaky": "Failed"}

    eventually(finished, within=120, interval=0.5)
    # Let Prometheus take a few more scrapes of the final state.
    time.sleep(3)
    stack.reconciles_before = before
    return stack


def test_target_is_up_and_runtime_metrics_move(ran: Stack) -> None:
    targets = json.loads(http_get(f"{ran.api}/targets")[1])["data"]["activeTargets"]
    assert {t["labels"]["job"] for t in targets} == {JOB, OTHER_JOB}
    (target,) = [t for t in targets if t["labels"]["job"] == JOB]
    assert target["health"] == "up", target
    after = ran.value(f'sum(controller_runtime_reconcile_total{{job="{JOB}"}})')
    assert after > ran.reconciles_before
    assert ran.value(f'sum(controller_runtime_reconcile_total{{job="{JOB}",result="success"}})') > 0
    assert ran.value(f'sum(increase(workqueue_adds_total{{job="{JOB}"}}[5m]))') > 0
    assert ran.value(f'max_over_time(workqueue_depth{{job="{JOB}"}}[5m])') >= 0
    assert ran.value(f'sum(controller_runtime_reconcile_time_seconds_count{{job="{JOB}"}})') > 0
    assert (
        ran.value(
            f'controller_runtime_max_concurrent_reconciles{{job="{JOB}",controller="jobset"}}'
        )
        == 5
    )
    codes = {
        r["metric"]["code"] for r in ran.query(f'rest_client_requests_total{{job="{JOB}"}} > 0')
    }
    assert {"200", "201"} <= codes, codes
    methods = {
        r["metric"]["method"] for r in ran.query(f'rest_client_requests_total{{job="{JOB}"}} > 0')
    }
    assert {"GET", "POST", "PUT"} <= methods, methods
    assert ran.value(f'sum(rest_client_request_duration_seconds_count{{job="{JOB}"}})') > 0
    assert ran.value(f'process_resident_memory_bytes{{job="{JOB}"}}') > 10e6


def test_jobset_metrics_move(ran: Stack) -> None:
    assert ran.value(f'sum(jobset_completed_total{{job="{JOB}",namespace="default"}})') == 2
    assert ran.value(f'sum(jobset_failed_total{{job="{JOB}",namespace="default"}})') == 1
    assert ran.value(f'sum(jobset_restarts_total{{job="{JOB}",scope="jobset"}})') == 2
    phases = {r["metric"]["phase"]: float(r["value"][1])
              for r in ran.query(f'jobset_jobsets{{job="{JOB}"}}')}  # fmt: skip
    assert phases.get("Completed") == 2 and phases.get("Failed") == 1, phases
    # The phase gauge went through Running while the JobSets ran.
    assert ran.value(f'max_over_time(jobset_jobsets{{job="{JOB}",phase="Running"}}[5m])') >= 1
    assert ran.value(f'sum(jobset_time_to_jobs_created_seconds_count{{job="{JOB}"}})') >= 3
    assert ran.value(f'sum(jobset_time_to_ready_seconds_count{{job="{JOB}"}})') >= 2
    # The counters grew during the run, as increase() over the window shows.
    assert ran.value(f'sum(increase(jobset_completed_total{{job="{JOB}"}}[5m]))') > 0


# What Grafana's Prometheus data source does with a query variable `label_values(sel, label)`:
# GET /api/v1/label/<label>/values?match[]=<sel> (no selector: every series).
LABEL_VALUES = re.compile(r"^label_values\((?:(?P<selector>.+), )?(?P<label>[a-zA-Z_]\w*)\)$")
# Grafana's $__rate_interval is max(4 x scrape interval, $__interval + scrape interval):
# a few seconds at 1 s scrapes; 5m covers the whole run, as a dashboard zoomed on it would.
BUILTINS = {"__rate_interval": "5m", "__interval": "15s", "__range": "5m"}


def _substitute(text: str, values: dict[str, str]) -> str:
    for name in sorted(values, key=len, reverse=True):  # $namespace before a $name
        text = text.replace(f"${{{name}}}", values[name]).replace(f"${name}", values[name])
    return text


def _variable_values(stack: Stack, definition: str) -> list[str]:
    match = LABEL_VALUES.match(definition)
    assert match, f"not a label_values query: {definition}"
    params = {"match[]": match["selector"]} if match["selector"] else {}
    status, body = http_get(
        f"{stack.api}/label/{match['label']}/values?" + urllib.parse.urlencode(params)
    )
    data = json.loads(body)
    assert status == 200 and data["status"] == "success", (definition, body)
    values: list[str] = data["data"]
    return values


def _panel_queries(values: dict[str, str]) -> list[tuple[str, str]]:
    board = json.loads(DASHBOARD.read_text())
    out = []
    for panel in board["panels"]:
        for target in panel.get("targets", []):
            expr = _substitute(target["expr"], values)
            assert "$" not in expr, f"{panel['title']}: a variable left in {expr}"
            out.append((panel["title"], expr))
    return out


def _choices(stack: Stack, job: str) -> list[dict[str, str]]:
    """The variable values a person could pick with `$job` = job: every multi-value variable
    at "All" (its allValue), then each at one value the variable offers."""
    variables = json.loads(DASHBOARD.read_text())["templating"]["list"]
    picks = {"job": job, "controller": "jobset", "namespace": "default"}
    all_values: dict[str, str] = {**BUILTINS, "job": job}
    one_value: dict[str, str] = {**BUILTINS, "job": job}
    for var in variables:
        if var["type"] == "datasource":
            continue
        offered = _variable_values(stack, _substitute(var["definition"], one_value))
        assert picks[var["name"]] in offered, (var["name"], offered)
        assert all(re.fullmatch(r"[a-z0-9-]+", v) for v in offered), offered  # no escaping
        one_value[var["name"]] = picks[var["name"]]
        if var["name"] != "job":
            assert var["includeAll"] and var["allValue"] == ".*", var
            all_values[var["name"]] = var["allValue"]
    return [all_values, one_value]


# Panels that may stay empty here: no leader election under `jobset dev`. (Every other
# target has data, the terminal-errors rate too: its series is exported at 0 from the start.)
MAY_BE_EMPTY = {"Leader", "Leading replica"}


def test_the_job_variable_offers_every_job_that_scraped_the_controller(ran: Stack) -> None:
    variables = {v["name"]: v for v in json.loads(DASHBOARD.read_text())["templating"]["list"]}
    assert set(_variable_values(ran, variables["job"]["definition"])) == {JOB, OTHER_JOB}
    assert variables["job"]["current"]["value"] == [JOB]


@pytest.mark.parametrize("job", [JOB, OTHER_JOB])
def test_every_panel_query_is_valid_and_has_data_under_either_job(ran: Stack, job: str) -> None:
    for values in _choices(ran, job):
        queries = _panel_queries(values)
        empty = {title for title, expr in queries if not ran.query(expr)}  # query(): success
        titles = {title for title, _ in queries}
        assert not (empty - MAY_BE_EMPTY), f"empty panels with {values}: {sorted(empty)}"
        assert MAY_BE_EMPTY <= titles
        # The job selects: another job's name finds nothing.
        other = {**values, "job": "no-such-job"}
        assert not any(ran.query(expr) for _, expr in _panel_queries(other))


def test_alert_rules_evaluate_and_stay_quiet(ran: Stack) -> None:
    groups = json.loads(http_get(f"{ran.api}/rules")[1])["data"]["groups"]
    rules = [r for g in groups for r in g["rules"]]
    assert {r["name"] for r in rules} == {
        r["alert"] for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]
    }
    for r in rules:
        assert r["health"] == "ok", r
    firing = {
        a["labels"]["alertname"]
        for a in json.loads(http_get(f"{ran.api}/alerts")[1])["data"]["alerts"]
    }
    assert "JobSetControllerDown" not in firing
    assert "JobSetReconcileErrorsHigh" not in firing


def test_exposition_passes_promtool(ran: Stack) -> None:
    status, text = http_get(ran.metrics_url)
    assert status == 200
    promtool = shutil.which("promtool")
    assert promtool, "promtool is not installed: `make prometheus`"
    out = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True,
                         timeout=60, check=False)  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr


def _documented() -> list[str]:
    """Metric names (or `prefix_*` patterns) in the tables of docs/metrics.md."""
    names: list[str] = []
    for line in (REPO / "docs" / "metrics.md").read_text().splitlines():
        if line.startswith("|"):
            first = line.split("|")[1]
            names += re.findall(r"`([a-z_:][a-z0-9_:]*\*?)`", first)
    return names


def test_docs_list_every_exported_metric(ran: Stack) -> None:
    _, text = http_get(ran.metrics_url)
    families = re.findall(r"^# TYPE (\S+) \S+", text, flags=re.M)
    documented = _documented()
    missing = [
        f
        for f in families
        if f not in documented
        and not any(d.endswith("*") and f.startswith(d[:-1]) for d in documented)
    ]
    assert not missing, f"exported but not in docs/metrics.md: {missing}"
