"""Real Prometheus scrapes the in-cluster controller pods through the metrics Service, with
the settings of the chart's ServiceMonitor.

The chart is installed with `metrics.serviceMonitor.enabled` (two replicas), and the
ServiceMonitor the cluster then holds is turned into a Prometheus scrape configuration by
`scrape_config`, the way the Prometheus Operator does it: service discovery of the
Service's EndpointSlices in the ServiceMonitor's namespaces, the keep rules for its label
selector and port name, the operator's target labels (namespace, service, pod, container,
endpoint, job), then its endpoint's path, scheme, interval, timeout, TLS settings, bearer
token file and relabelings. So the test proves that those settings get both pods scraped,
not a configuration written by hand.

Service discovery: Debian's `prometheus` is built without Kubernetes discovery (its
NEWS.Debian: "Kubernetes support has been completely removed"), so `kubernetes_sd_configs`
is the one part played by the test: `EndpointSliceDiscovery` reads the EndpointSlices,
Services and Pods of the namespaces from the API server, with the token of a ServiceAccount
`prometheus` that has exactly the RBAC Prometheus' discovery needs, and gives them to
Prometheus over `http_sd_configs` (127.0.0.1) as the target groups and `__meta_kubernetes_*`
labels of Prometheus' `endpointslice` role. Everything after that - relabelling, scraping
the pod IPs (10.244.x.y, in the namespaces this package's simulator made), TLS and the
bearer token - is Prometheus' own.

Then through Prometheus' HTTP API, with the chart's defaults - secure metrics: the
ServiceMonitor says HTTPS, Prometheus' ServiceAccount token (`bearerTokenFile`) and the
serving CA (`tlsConfig.ca` from the webhook Secret's `ca.crt`, `serverName` the metrics
Service's name), so Prometheus verifies the certificate the controller's internal
management issued although it scrapes pod IPs. The scrapes are refused (403) until that
account is bound to the chart's ClusterRole jobset-metrics-reader, as the chart's notes
say; then both pods' targets are up under job="jobset-controller" (the job the alerts select
and the dashboard's `$job` defaults to), the webhook Service's endpoints are dropped by the selector, and
`controller_runtime_reconcile_total` has series from the pods. The controllers log at
DEBUG meanwhile: no token, private key or certificate is in their logs (`kubectl logs`) or
in any event. With `metrics.secure=false` (a `helm upgrade`, the explicit opt-in) the same
ServiceMonitor turns into a plain-HTTP scrape, up again.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import shutil
import signal
import ssl
import subprocess
import threading
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesim.process import free_port
from tests.integration.deploy.helpers import http_get, leaked
from tests.integration.incluster.conftest import (
    LEADER_ELECTION,
    NS,
    Cluster,
    current_leader,
    eventually,
    finished,
    jobset_manifest,
    namespace,
    thirdparty_crds,
    uninstall,
)

pytestmark = pytest.mark.timeout(600)

MONITOR = "jobset-controller-manager"
JOB = "jobset-controller"
PROMETHEUS_NS = "prometheus-test"
SA_TOKEN_PATH = "/var/run/secrets/kubernetes.io/serviceaccount/token"
VALUES: dict[str, Any] = {
    # DEBUG: every log line the controller has, for the scan for secrets.
    "controller": {"replicas": 2, "leaderElection": LEADER_ELECTION, "logLevel": "DEBUG"},
    # Short intervals so that a few scrapes fit the test; these are the chart's values.
    "metrics": {"serviceMonitor": {"enabled": True, "interval": "1s", "scrapeTimeout": "1s"}},
}


# --- The Prometheus Operator's part: a ServiceMonitor as a scrape configuration ---------


def _label(name: str) -> str:
    """A Kubernetes label name as Prometheus' discovery turns it into a label name."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", name)


def _relabeling(r: Mapping[str, Any]) -> dict[str, Any]:
    keys = {"sourceLabels": "source_labels", "targetLabel": "target_label"}
    return {keys.get(k, k): v for k, v in r.items()}


def scrape_config(
    monitor: Mapping[str, Any],
    index: int,
    files: Mapping[str, str],
    secrets: Mapping[tuple[str, str], str] | None = None,
) -> dict[str, Any]:
    """The scrape configuration the Prometheus Operator generates for endpoint `index` of
    `monitor` (discovery role endpointslice). `files` maps the file paths the ServiceMonitor
    names inside Prometheus' pod (its ServiceAccount token) to where they are here;
    `secrets` maps the (Secret name, key) a `tlsConfig.ca.secret` names to the file where
    the key's value is (the operator copies it into a Secret mounted into Prometheus)."""
    meta, spec = monitor["metadata"], monitor["spec"]
    ep = spec["endpoints"][index]
    unsupported = set(ep) - {
        "port",
        "path",
        "scheme",
        "interval",
        "scrapeTimeout",
        "tlsConfig",
        "bearerTokenFile",
        "relabelings",
        "honorLabels",
    }
    assert not unsupported and "matchExpressions" not in spec["selector"], unsupported
    relabel: list[dict[str, Any]] = [
        {"source_labels": ["job"], "target_label": "__tmp_prometheus_job_name"}
    ]
    for key, value in sorted(spec["selector"]["matchLabels"].items()):
        relabel.append(
            {
                "action": "keep",
                "source_labels": [
                    f"__meta_kubernetes_service_label_{_label(key)}",
                    f"__meta_kubernetes_service_labelpresent_{_label(key)}",
                ],
                "regex": f"({value});true",
            }
        )
    relabel.append(
        {
            "action": "keep",
            "source_labels": ["__meta_kubernetes_endpointslice_port_name"],
            "regex": ep["port"],
        }
    )
    target = [
        "__meta_kubernetes_endpointslice_address_target_kind",
        "__meta_kubernetes_endpointslice_address_target_name",
    ]
    relabel += [
        {
            "source_labels": target,
            "separator": ";",
            "regex": "Node;(.*)",
            "replacement": "${1}",
            "target_label": "node",
        },
        {
            "source_labels": target,
            "separator": ";",
            "regex": "Pod;(.*)",
            "replacement": "${1}",
            "target_label": "pod",
        },
        {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
        {"source_labels": ["__meta_kubernetes_service_name"], "target_label": "service"},
        {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
        {"source_labels": ["__meta_kubernetes_pod_container_name"], "target_label": "container"},
        {
            "action": "drop",
            "source_labels": ["__meta_kubernetes_pod_phase"],
            "regex": "(Failed|Succeeded)",
        },
        {
            "source_labels": ["__meta_kubernetes_service_name"],
            "target_label": "job",
            "replacement": "${1}",
        },
        {"target_label": "endpoint", "replacement": ep["port"]},
    ]
    relabel += [_relabeling(r) for r in ep.get("relabelings") or []]
    config: dict[str, Any] = {
        "job_name": f"serviceMonitor/{meta['namespace']}/{meta['name']}/{index}",
        "honor_labels": bool(ep.get("honorLabels", False)),
        "kubernetes_sd_configs": [
            {
                "role": "endpointslice",
                "namespaces": {"names": list(spec["namespaceSelector"]["matchNames"])},
            }
        ],
        "metrics_path": ep.get("path", "/metrics"),
        "scheme": ep.get("scheme", "http"),
        "relabel_configs": relabel,
    }
    if "interval" in ep:
        config["scrape_interval"] = ep["interval"]
    if "scrapeTimeout" in ep:
        config["scrape_timeout"] = ep["scrapeTimeout"]
    if "bearerTokenFile" in ep:
        config["authorization"] = {"credentials_file": files[ep["bearerTokenFile"]]}
    if "tlsConfig" in ep:
        tls_keys = {
            "insecureSkipVerify": "insecure_skip_verify",
            "serverName": "server_name",
            "caFile": "ca_file",
        }
        given = dict(ep["tlsConfig"])
        ca = given.pop("ca", None)
        assert set(given) <= set(tls_keys), ep["tlsConfig"]
        config["tls_config"] = {tls_keys[k]: v for k, v in given.items()}
        if ca is not None:
            assert set(ca) == {"secret"}, ca  # configMap: not used by the chart
            ref = ca["secret"]
            config["tls_config"]["ca_file"] = (secrets or {})[(ref["name"], ref["key"])]
    return config


# --- Kubernetes service discovery, which Debian's Prometheus lacks ----------------------


class EndpointSliceDiscovery:
    """Prometheus' `kubernetes_sd_configs` role endpointslice, served as `http_sd_configs`:
    target groups with the labels Prometheus documents for that role (the EndpointSlice's,
    its Service's and, for addresses backed by a pod, the pod's and its container port's)."""

    def __init__(self, api: str, ca: Path, token: Path, namespaces: list[str]) -> None:
        self.api, self.token, self.namespaces = api, token, namespaces
        self.context = ssl.create_default_context(cafile=str(ca))
        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/sd"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> EndpointSliceDiscovery:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _get(self, path: str) -> list[dict[str, Any]]:
        request = urllib.request.Request(
            self.api + path, headers={"Authorization": f"Bearer {self.token.read_text()}"}
        )
        with urllib.request.urlopen(request, context=self.context, timeout=10) as resp:
            items: list[dict[str, Any]] = json.load(resp)["items"]
            return items

    def groups(self) -> list[dict[str, Any]]:
        """http_sd target groups: one per address and port (http_sd has one label set per
        group, kubernetes_sd one per target; what a target ends up with is the same)."""
        out = []
        for ns in self.namespaces:
            services = {
                s["metadata"]["name"]: s for s in self._get(f"/api/v1/namespaces/{ns}/services")
            }
            pods = {p["metadata"]["name"]: p for p in self._get(f"/api/v1/namespaces/{ns}/pods")}
            for eps in self._get(f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"):
                out += _slice_groups(eps, services, pods)
        return out

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        discovery = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = json.dumps(discovery.groups()).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        return Handler


def _slice_groups(
    eps: dict[str, Any], services: dict[str, Any], pods: dict[str, Any]
) -> list[dict[str, Any]]:
    meta = eps["metadata"]
    common = {
        "__meta_kubernetes_namespace": meta["namespace"],
        "__meta_kubernetes_endpointslice_name": meta["name"],
        "__meta_kubernetes_endpointslice_address_type": eps["addressType"],
        **_object_labels("endpointslice", meta),
    }
    service = services.get((meta.get("labels") or {}).get("kubernetes.io/service-name", ""))
    if service:
        common["__meta_kubernetes_service_name"] = service["metadata"]["name"]
        common.update(_object_labels("service", service["metadata"]))
    groups = []
    for port in eps.get("ports") or []:
        for endpoint in eps.get("endpoints") or []:
            conditions = endpoint.get("conditions") or {}
            ref = endpoint.get("targetRef") or {}
            labels = {
                **common,
                "__meta_kubernetes_endpointslice_port": str(port["port"]),
                "__meta_kubernetes_endpointslice_port_name": port.get("name", ""),
                "__meta_kubernetes_endpointslice_port_protocol": port.get("protocol", "TCP"),
            }
            for c in ("ready", "serving", "terminating"):
                value = str(bool(conditions.get(c))).lower()
                labels[f"__meta_kubernetes_endpointslice_endpoint_conditions_{c}"] = value
            if ref:
                labels["__meta_kubernetes_endpointslice_address_target_kind"] = ref["kind"]
                labels["__meta_kubernetes_endpointslice_address_target_name"] = ref["name"]
            if endpoint.get("nodeName"):
                labels["__meta_kubernetes_endpointslice_endpoint_node_name"] = endpoint["nodeName"]
            pod = pods.get(ref.get("name", "")) if ref.get("kind") == "Pod" else None
            if pod:
                labels.update(_pod_labels(pod, port["port"]))
            for address in endpoint["addresses"]:
                groups.append({"targets": [f"{address}:{port['port']}"], "labels": labels})
    return groups


def _object_labels(role: str, meta: Mapping[str, Any]) -> dict[str, str]:
    out = {}
    for key, value in (meta.get("labels") or {}).items():
        out[f"__meta_kubernetes_{role}_label_{_label(key)}"] = value
        out[f"__meta_kubernetes_{role}_labelpresent_{_label(key)}"] = "true"
    for key, value in (meta.get("annotations") or {}).items():
        out[f"__meta_kubernetes_{role}_annotation_{_label(key)}"] = value
        out[f"__meta_kubernetes_{role}_annotationpresent_{_label(key)}"] = "true"
    return out


def _pod_labels(pod: Mapping[str, Any], port: int) -> dict[str, str]:
    status = pod.get("status") or {}
    ready = any(
        c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions") or []
    )
    out = {
        "__meta_kubernetes_pod_name": pod["metadata"]["name"],
        "__meta_kubernetes_pod_ip": status.get("podIP", ""),
        "__meta_kubernetes_pod_host_ip": status.get("hostIP", ""),
        "__meta_kubernetes_pod_node_name": pod["spec"].get("nodeName", ""),
        "__meta_kubernetes_pod_uid": pod["metadata"]["uid"],
        "__meta_kubernetes_pod_phase": status.get("phase", ""),
        "__meta_kubernetes_pod_ready": str(ready).lower(),
        **_object_labels("pod", pod["metadata"]),
    }
    for owner in pod["metadata"].get("ownerReferences") or []:
        if owner.get("controller"):
            out["__meta_kubernetes_pod_controller_kind"] = owner["kind"]
            out["__meta_kubernetes_pod_controller_name"] = owner["name"]
    for container in pod["spec"]["containers"]:
        for p in container.get("ports") or []:
            if p["containerPort"] == port:
                out.update(
                    {
                        "__meta_kubernetes_pod_container_name": container["name"],
                        "__meta_kubernetes_pod_container_image": container["image"],
                        "__meta_kubernetes_pod_container_port_name": p.get("name", ""),
                        "__meta_kubernetes_pod_container_port_number": str(port),
                        "__meta_kubernetes_pod_container_port_protocol": p.get("protocol", "TCP"),
                        "__meta_kubernetes_pod_container_init": "false",
                    }
                )
    return out


# --- The module's Prometheus ------------------------------------------------------------


@dataclass
class Prometheus:
    proc: subprocess.Popen[str]
    url: str
    config: Path
    log: Path

    def api(self, path: str, **params: str) -> Any:
        query = ("?" + urllib.parse.urlencode(params)) if params else ""
        status, body = http_get(f"{self.url}/api/v1/{path}{query}")
        assert status == 200, (path, status, body)
        data = json.loads(body)
        assert data["status"] == "success", data
        return data["data"]

    def query(self, promql: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self.api("query", query=promql)["result"]
        return result

    def targets(self) -> list[dict[str, Any]]:
        return [t for t in self.api("targets")["activeTargets"] if t["labels"].get("job") == JOB]

    def configure(self, scrape_configs: list[dict[str, Any]]) -> None:
        """Write the configuration and have Prometheus load it (SIGHUP), checking that it
        did."""
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "scrape_configs": scrape_configs,
        }
        text = yaml.safe_dump(config)
        self.config.write_text(text)
        self.proc.send_signal(signal.SIGHUP)
        eventually(
            lambda: (
                self.api("status/config")["yaml"]
                and _loaded(self.api("status/config")["yaml"], config)
            ),
            30,
            "Prometheus to load its configuration",
        )


def _loaded(shown: str, config: dict[str, Any]) -> bool:
    jobs = {c["job_name"]: c for c in yaml.safe_load(shown).get("scrape_configs") or []}
    return all(
        c["job_name"] in jobs and jobs[c["job_name"]].get("scheme") == c["scheme"]
        for c in config["scrape_configs"]
    )


@contextlib.contextmanager
def prometheus(tmp: Path) -> Iterator[Prometheus]:
    binary = shutil.which("prometheus")
    assert binary, "prometheus is not installed: `make prometheus` (Debian package prometheus)"
    port = free_port()
    config, log = tmp / "prometheus.yml", tmp / "prometheus.log"
    config.write_text(yaml.safe_dump({"global": {"scrape_interval": "1s"}}))
    proc = subprocess.Popen(
        [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:

        def ready() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"prometheus exited:\n{log.read_text()}")
            return http_get(f"{url}/-/ready")[0] == 200

        eventually(ready, 60, "Prometheus to be ready")
        yield Prometheus(proc, url, config, log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@dataclass
class Stack:
    cluster: Cluster
    prometheus: Prometheus
    discovery: EndpointSliceDiscovery
    token: Path

    def secret_files(self, monitor: Mapping[str, Any]) -> dict[tuple[str, str], str]:
        """The Secret keys the ServiceMonitor's tlsConfig names, read from the cluster into
        files (the operator's copy of them), by (Secret name, key)."""
        out = {}
        for ep in monitor["spec"]["endpoints"]:
            ref = ((ep.get("tlsConfig") or {}).get("ca") or {}).get("secret")
            if ref:
                secret = self.cluster.json("get", "secret", ref["name"], "-n", NS)
                path = self.token.parent / f"secret-{ref['name']}-{ref['key']}"
                path.write_bytes(base64.b64decode(secret["data"][ref["key"]]))
                out[(ref["name"], ref["key"])] = str(path)
        return out

    def apply_monitor(self) -> dict[str, Any]:
        """The cluster's ServiceMonitor, translated and loaded into Prometheus."""
        monitor: dict[str, Any] = self.cluster.json("get", "servicemonitor", MONITOR, "-n", NS)
        configs = []
        secrets = self.secret_files(monitor)
        for i in range(len(monitor["spec"]["endpoints"])):
            c = scrape_config(monitor, i, {SA_TOKEN_PATH: str(self.token)}, secrets)
            # The one substitution: Debian's Prometheus discovers through the stand-in.
            (k8s,) = c.pop("kubernetes_sd_configs")
            assert k8s["role"] == "endpointslice" and k8s["namespaces"]["names"] == [NS]
            c["http_sd_configs"] = [{"url": self.discovery.url, "refresh_interval": "1s"}]
            configs.append(c)
        self.prometheus.configure(configs)
        return monitor


def _rbac(namespace_: str) -> str:
    """What Prometheus' Kubernetes discovery of one namespace needs (the Prometheus
    Operator's documented RBAC for Prometheus, narrowed to a Role)."""
    return yaml.safe_dump_all(
        [
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": "prometheus", "namespace": PROMETHEUS_NS},
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": "prometheus-test-discovery", "namespace": namespace_},
                "rules": [
                    {
                        "apiGroups": [""],
                        "resources": ["services", "endpoints", "pods"],
                        "verbs": ["get", "list", "watch"],
                    },
                    {
                        "apiGroups": ["discovery.k8s.io"],
                        "resources": ["endpointslices"],
                        "verbs": ["get", "list", "watch"],
                    },
                ],
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": "prometheus-test-discovery", "namespace": namespace_},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Role",
                    "name": "prometheus-test-discovery",
                },
                "subjects": [
                    {"kind": "ServiceAccount", "name": "prometheus", "namespace": PROMETHEUS_NS}
                ],
            },
        ]
    )


READER_BINDING = "prometheus-test-metrics-reader"


@pytest.fixture(scope="module")
def stack(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp("prometheus-incluster")
    with contextlib.ExitStack() as stack:
        stack.enter_context(thirdparty_crds(cluster))
        release = cluster.install(VALUES)
        stack.callback(uninstall, cluster)
        assert release["status"] == "deployed"
        cluster.rollout()
        stack.enter_context(namespace(cluster, PROMETHEUS_NS))
        cluster.kubectl("apply", "-f", "-", input=_rbac(NS))
        stack.callback(
            cluster.kubectl,
            "delete",
            "role,rolebinding",
            "prometheus-test-discovery",
            "-n",
            NS,
            "--ignore-not-found",
        )
        stack.callback(
            cluster.kubectl, "delete", "clusterrolebinding", READER_BINDING, "--ignore-not-found"
        )
        token = tmp / "token"
        token.write_text(
            cluster.kubectl(
                "create", "token", "prometheus", "-n", PROMETHEUS_NS, "--duration=2h"
            ).strip()
        )
        kubeconfig = yaml.safe_load(cluster.sim.kubeconfig.read_text())
        ca = tmp / "ca.crt"
        ca.write_bytes(
            base64.b64decode(kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"])
        )
        discovery = stack.enter_context(EndpointSliceDiscovery(cluster.sim.url, ca, token, [NS]))
        prom = stack.enter_context(prometheus(tmp))
        yield Stack(cluster, prom, discovery, token)


def _pods(cluster: Cluster) -> dict[str, str]:
    """Controller pod name -> pod IP."""
    return {p["metadata"]["name"]: p["status"]["podIP"] for p in cluster.controller_pods()}


def _all_up(stack: Stack, scheme: str) -> list[dict[str, Any]] | None:
    targets = stack.prometheus.targets()
    pods = _pods(stack.cluster)
    up = [t for t in targets if t["health"] == "up" and t["scrapeUrl"].startswith(f"{scheme}://")]
    return (
        targets
        if len(up) == len(targets) == 2 and {t["labels"]["pod"] for t in up} == set(pods)
        else None
    )


def _reconcile_series(stack: Stack) -> set[str] | None:
    """The pods `controller_runtime_reconcile_total` has series from, if any."""
    result = stack.prometheus.query(f'controller_runtime_reconcile_total{{job="{JOB}"}}')
    return {r["metric"]["pod"] for r in result} or None


def _plain_everywhere(cluster: Cluster) -> bool | None:
    procs = cluster.controller_processes()
    return (len(procs) == 2 and all("--metrics-secure=false" in c for _, _, c in procs)) or None


def _refused(stack: Stack) -> list[dict[str, Any]] | None:
    targets = stack.prometheus.targets()
    return targets if len(targets) == 2 and all("403" in t["lastError"] for t in targets) else None


def test_prometheus_scrapes_both_pods_over_https_with_the_servicemonitor_token_and_ca(
    stack: Stack,
) -> None:
    monitor = stack.apply_monitor()
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["scheme"] == "https" and endpoint["port"] == "https-metrics"
    assert endpoint["bearerTokenFile"] == SA_TOKEN_PATH
    assert endpoint["tlsConfig"] == {
        "ca": {"secret": {"name": "jobset-webhook-server-cert", "key": "ca.crt"}},
        "serverName": f"jobset-controller-manager-metrics-service.{NS}.svc",
    }
    loaded = yaml.safe_load(stack.prometheus.api("status/config")["yaml"])["scrape_configs"][0]
    assert loaded["tls_config"]["insecure_skip_verify"] is False  # Prometheus verifies
    # Prometheus' token is authenticated (TokenReview) but not allowed to GET /metrics
    # (SubjectAccessReview) until it is bound to the chart's reader role. That the error is
    # 403, not a certificate error, says the TLS handshake with the CA and name passed.
    eventually(lambda: _refused(stack), 60, "the scrapes to be refused (403)")
    stack.cluster.kubectl("create", "clusterrolebinding", READER_BINDING,
                          "--clusterrole=jobset-metrics-reader",
                          f"--serviceaccount={PROMETHEUS_NS}:prometheus")  # fmt: skip
    with namespace(stack.cluster, "prometheus-jobs") as ns:
        stack.cluster.kubectl("apply", "-f", "-", input=jobset_manifest("scraped", ns))
        assert finished(stack.cluster, "scraped", ns)["status"]["terminalState"] == "Completed"
    targets = eventually(lambda: _all_up(stack, "https"), 60, "both pods' HTTPS targets up")
    pods = _pods(stack.cluster)
    for t in targets:
        labels = t["labels"]
        assert t["scrapeUrl"] == f"https://{pods[labels['pod']]}:8080/metrics", t
        assert labels["namespace"] == NS and labels["endpoint"] == "https-metrics"
        assert labels["service"] == "jobset-controller-manager-metrics-service"
        assert labels["container"] == "manager"
        assert t["scrapePool"] == f"serviceMonitor/{NS}/{MONITOR}/0"
    # The selector and port rules dropped everything else the discovery offered (the
    # webhook Service's endpoints among them).
    dropped = stack.prometheus.api("targets")["droppedTargets"]
    webhook = "jobset-webhook-service"
    assert any(d["discoveredLabels"].get("__meta_kubernetes_service_name") == webhook
               for d in dropped), dropped  # fmt: skip
    # Both pods export the reconcile counters (every replica registers them); the leader's
    # count the JobSet's reconciles.
    leader = current_leader(stack.cluster)
    eventually(lambda: _reconcile_series(stack) == set(pods) or None, 60, "both pods' series")
    total = stack.prometheus.query(
        f'sum(controller_runtime_reconcile_total{{job="{JOB}",pod="{leader}"}})'
    )
    assert float(total[0]["value"][1]) > 0
    # The certificate watcher's series of the internal certificate, from both pods.
    reads = stack.prometheus.query(f'certwatcher_read_certificate_total{{job="{JOB}"}} > 0')
    assert {r["metric"]["pod"] for r in reads} == set(pods)


def test_no_token_key_or_certificate_in_the_controller_logs_or_events(stack: Stack) -> None:
    """After admission, reconciles, certificate issuance and scrapes with Prometheus'
    token (refused, then allowed), at DEBUG: nothing secret in any pod's log or event."""
    secrets: dict[str, bytes | str] = {"prometheus token": stack.token.read_text()}
    data = stack.cluster.json("get", "secret", "jobset-webhook-server-cert", "-n", NS)["data"]
    for key in ("ca.crt", "ca.key", "tls.crt", "tls.key"):
        secrets[f"Secret {key}"] = base64.b64decode(data[key])
    # A JobSet's events (the namespace, and its events with it, go at the end).
    with namespace(stack.cluster, "prometheus-scan") as ns:
        stack.cluster.kubectl("apply", "-f", "-", input=jobset_manifest("scanned", ns))
        finished(stack.cluster, "scanned", ns)
        events = stack.cluster.kubectl("get", "events", "-A", "-o", "json")
    assert any(e["involvedObject"].get("kind") == "JobSet" for e in json.loads(events)["items"])
    assert leaked(events, secrets) == []
    logs = {
        p["metadata"]["name"]: stack.cluster.kubectl("logs", p["metadata"]["name"], "-n", NS)
        for p in stack.cluster.controller_pods()
    }
    assert len(logs) == 2
    for name, log in logs.items():
        assert '"level": "debug"' in log or '"level":"debug"' in log, (name, log[-2000:])
        assert leaked(log, secrets) == [], (name, leaked(log, secrets))


@pytest.mark.soak  # the chart's plain mode is rendered and scraped in deploy/ tests
def test_plain_metrics_are_an_explicit_opt_in_scraped_over_http(stack: Stack) -> None:
    values = {**VALUES, "metrics": {**VALUES["metrics"], "secure": False}}
    assert stack.cluster.upgrade(values)["revision"] == 2
    stack.cluster.rollout()
    eventually(lambda: _plain_everywhere(stack.cluster), 90, "only plain-metrics processes")
    monitor = stack.apply_monitor()
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["scheme"] == "http" and endpoint["port"] == "http-metrics"
    assert "bearerTokenFile" not in endpoint and "tlsConfig" not in endpoint
    targets = eventually(lambda: _all_up(stack, "http"), 60, "both pods' HTTP targets up")
    pods = _pods(stack.cluster)
    assert {t["scrapeUrl"] for t in targets} == {
        f"http://{ip}:8080/metrics" for ip in pods.values()
    }
    # The upgrade made new pods: series of theirs came over plain HTTP.
    eventually(lambda: set(pods) <= (_reconcile_series(stack) or set()) or None, 60, "HTTP series")
