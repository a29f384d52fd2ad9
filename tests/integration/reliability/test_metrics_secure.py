"""`jobset controller --metrics-secure`, a real process on real sockets: /metrics over TLS for
callers the API server authenticates and authorizes, and nothing else exposed.

`jobset sim` enforces RBAC. The controller runs as its ServiceAccount under exactly
config/rbac (which has the review ClusterRole: secure metrics are the default), serving a
certificate from `--metrics-cert-dir`. Scrapers are other ServiceAccounts:

- no token, a malformed header, an unknown token or one for another audience → 401; a
  ServiceAccount without RBAC for /metrics → 403; bound to `jobset-metrics-reader` → 200
  with the Prometheus text format;
- decisions are cached: repeated scrapes cost no TokenReview / SubjectAccessReview (counted
  by the simulated API server per client);
- TLS only: plain HTTP gets no answer, TLS 1.1 and TLS 1.2 CBC suites are refused (while
  the same client handshakes with a permissive server, so the refusal is the controller's);
  the certificate verifies against its CA for localhost and 127.0.0.1;
- nothing else is exposed: the process listens on the metrics, health and webhook ports
  only; the metrics port serves /metrics alone (404 for any other path even for a
  superuser, 403 for a reader asking another path, 405 for other methods); the health
  port serves only its probes, GET only, and without authentication (kubelets send none);
- without the review ClusterRole the controller cannot check callers: 401 for new tokens;
- real Prometheus scrapes it with `bearer_token_file` and `tls_config.ca_file`: target up;
- renewed certificate files are served without a restart, and the reads count in
  controller-runtime's `certwatcher_read_certificate_total` (no read errors);
- `jobset dev --metrics-secure` serves a certificate made in memory (unverifiable, as
  controller-runtime's), with the same authentication.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import http.client
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import urllib.error
import urllib.request
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml
from cryptography import x509

from jobset.cli import build_parser
from jobset.webhooks import manifests
from kubesim.process import SimProcess, start_command, start_sim
from kubeutil import tls
from tests.integration.deploy import chart
from tests.integration.deploy.helpers import (
    CONFIG,
    CRD_FILE,
    Controller,
    apply,
    eventually,
    free_port,
    get_json,
    http_get,
    kustomize,
)

pytestmark = [pytest.mark.timeout(600), pytest.mark.kubectl, pytest.mark.prometheus]
NAMESPACE = "jobset-system"
ACCOUNT = "jobset-controller-manager"
MONITORING = "monitoring"
READER_ROLE = "jobset-metrics-reader"
AUTH_BINDING = "jobset-metrics-auth-rolebinding"


@dataclass
class Stack:
    sim: SimProcess
    controller: Controller
    tmp: Path
    ca: bytes
    cert_dir: Path
    webhook_port: int

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.controller.metrics_port}"

    def token(self, account: str, *flags: str) -> str:
        return self.sim.kubectl("create", "token", account, "-n", MONITORING, *flags).stdout.strip()

    def admin_token(self) -> str:
        return str(yaml.safe_load(self.sim.kubeconfig.read_text())["users"][0]["user"]["token"])

    def scraper(self, name: str, reader: bool) -> str:
        """A fresh ServiceAccount (so no decision about it is cached) and its token."""
        self.sim.kubectl("create", "serviceaccount", name, "-n", MONITORING)
        if reader:
            self.sim.kubectl("create", "clusterrolebinding", f"{name}-metrics",
                             f"--clusterrole={READER_ROLE}",
                             f"--serviceaccount={MONITORING}:{name}")  # fmt: skip
        return self.token(name)


def verified_context(ca: bytes) -> ssl.SSLContext:
    return tls.client_context(ca)


def unverified_context() -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def fetch(
    url: str,
    token: str | None = None,
    *,
    method: str = "GET",
    context: ssl.SSLContext | None = None,
    header: str | None = None,
) -> tuple[int, str, dict[str, str]]:
    headers = {}
    if header is not None:
        headers["Authorization"] = header
    elif token is not None:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url, headers=headers, method=method)
    ctx = context if context is not None else unverified_context()
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
            return resp.status, resp.read().decode(), dict(resp.headers)
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode(), dict(err.headers)


def write_certs(directory: Path) -> bytes:
    """A CA and a serving certificate for localhost/127.0.0.1 in tls.crt/tls.key; the CA."""
    ca, ca_key = tls.make_ca("metrics-test-ca", dt.timedelta(days=2))
    cert, key = tls.issue_serving_cert(ca, ca_key, ["localhost", "127.0.0.1"], dt.timedelta(days=1))
    directory.mkdir(parents=True, exist_ok=True)
    # Replace both files at once, as a Secret volume does (a new directory, swapped in).
    for name, data in (("tls.key", key), ("tls.crt", cert)):
        tmp = directory / f".{name}.new"
        tmp.write_bytes(data)
        os.replace(tmp, directory / name)
    return ca


def secure_rbac() -> list[dict[str, Any]]:
    """config/rbac, rendered by kubectl kustomize: it has the review ClusterRole (secure
    metrics are the default)."""
    return kustomize(CONFIG / "rbac")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp("metrics-secure")
    sim = start_sim(tmp, "--sim-level", "none")
    controller: Controller | None = None
    try:
        for ns in (NAMESPACE, MONITORING):
            sim.kubectl("create", "namespace", ns)
        sim.kubectl("create", "-f", str(CRD_FILE))
        sim.kubectl("wait", "--for=condition=Established", "crd/jobsets.jobset.x-k8s.io")
        rbac = secure_rbac()
        assert {o["metadata"]["name"] for o in rbac if o["kind"] == "ClusterRole"} >= {
            "jobset-metrics-auth-role",
            READER_ROLE,
        }
        apply(sim, rbac)
        port = free_port()
        # With the (empty) Secret, as config/webhook and the chart ship it: the controller
        # may fill it, not create it.
        apply(sim, [*manifests.manifests(NAMESPACE, port, f"127.0.0.1:{port}"),
                    manifests.secret(NAMESPACE)])  # fmt: skip
        token = sim.kubectl("create", "token", ACCOUNT, "-n", NAMESPACE).stdout.strip()
        config = yaml.safe_load(sim.kubeconfig.read_text())
        config["users"][0]["user"] = {"token": token}
        kubeconfig = tmp / "controller.kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(config))
        cert_dir = tmp / "metrics-certs"
        ca = write_certs(cert_dir)
        controller = Controller(
            kubeconfig,
            "--metrics-secure",
            "--metrics-cert-dir",
            str(cert_dir),
            "--webhook-port",
            str(port),
            "--leader-elect",
            "--leader-election-namespace",
            NAMESPACE,
            log=tmp / "controller.log",
        )
        controller.wait_ready(within=120)
        yield Stack(sim, controller, tmp, ca, cert_dir, port)
    finally:
        if controller is not None:
            controller.stop()
        sim.stop()


def test_only_authenticated_and_authorized_callers_read_metrics(stack: Stack) -> None:
    url = f"{stack.url}/metrics"
    for header in (None, "", "Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "Token abc"):
        status, body, _ = fetch(url, header=header)
        assert (status, body) == (401, "Unauthorized\n"), header
    assert fetch(url, "not-a-token")[0] == 401
    reader = stack.scraper("prometheus", reader=True)
    # A token of a reader, but issued for another audience than the API server's.
    assert fetch(url, stack.token("prometheus", "--audience=elsewhere"))[0] == 401
    stranger = stack.scraper("stranger", reader=False)
    status, body, _ = fetch(url, stranger)
    assert status == 403
    assert body == f"Authorization denied for user system:serviceaccount:{MONITORING}:stranger\n"
    status, body, headers = fetch(url, reader)
    assert status == 200, body
    assert headers["Content-Type"].startswith("text/plain; version=")
    assert "# TYPE controller_runtime_reconcile_total counter" in body
    assert "# TYPE rest_client_requests_total counter" in body
    # The scheme is case-insensitive, as kube-apiserver's.
    assert fetch(url, header=f"bearer {reader}")[0] == 200


def _reviews_by_controller(stack: Stack) -> tuple[int, int]:
    counts = json.loads(stack.sim.kubectl("get", "--raw", "/debug/requests").stdout)
    mine = {
        r["resource"]: r["count"]
        for r in counts["byUserAgent"]
        if r["userAgent"] == "jobset-controller" and r["verb"] == "create"
    }
    return mine.get("tokenreviews", 0), mine.get("subjectaccessreviews", 0)


def test_decisions_are_cached(stack: Stack) -> None:
    token = stack.scraper("cached", reader=True)
    before = _reviews_by_controller(stack)
    assert fetch(f"{stack.url}/metrics", token)[0] == 200
    first = _reviews_by_controller(stack)
    assert (first[0] - before[0], first[1] - before[1]) == (1, 1)
    for _ in range(10):
        assert fetch(f"{stack.url}/metrics", token)[0] == 200
    assert _reviews_by_controller(stack) == first


async def _handshake(port: int, ctx: ssl.SSLContext, host: str = "127.0.0.1") -> str:
    """The TLS version negotiated with 127.0.0.1:port (raises on failure)."""
    _, writer = await asyncio.wait_for(
        asyncio.open_connection("127.0.0.1", port, ssl=ctx, server_hostname=host), timeout=30
    )
    version = writer.get_extra_info("ssl_object").version()
    writer.close()
    return str(version)


def _old_client(maximum: ssl.TLSVersion, ciphers: str) -> ssl.SSLContext:
    ctx = unverified_context()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        ctx.minimum_version = ssl.TLSVersion.TLSv1
        ctx.maximum_version = maximum
    ctx.set_ciphers(ciphers)
    return ctx


async def test_tls_only_modern_and_verifiable(stack: Stack) -> None:
    port = stack.controller.metrics_port
    # Plain HTTP to the TLS port gets no HTTP answer at all.
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    with pytest.raises((OSError, http.client.HTTPException)):
        conn.request("GET", "/metrics")
        conn.getresponse()
    conn.close()
    old = {
        "TLS 1.1": _old_client(ssl.TLSVersion.TLSv1_1, "ALL:@SECLEVEL=0"),
        "TLS 1.2 CBC": _old_client(ssl.TLSVersion.TLSv1_2, "ECDHE-ECDSA-AES128-SHA:@SECLEVEL=0"),
    }
    # Control: the same clients do get through to a permissive server with the same
    # certificate, so what refuses them below is the controller's configuration.
    permissive = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        permissive.minimum_version = ssl.TLSVersion.TLSv1
    permissive.set_ciphers("ALL:@SECLEVEL=0")
    tls.load_cert_chain(
        permissive,
        (stack.cert_dir / "tls.crt").read_bytes(),
        (stack.cert_dir / "tls.key").read_bytes(),
    )
    server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0, ssl=permissive)
    try:
        control_port = server.sockets[0].getsockname()[1]
        assert await _handshake(control_port, old["TLS 1.1"]) == "TLSv1.1"
        assert await _handshake(control_port, old["TLS 1.2 CBC"]) == "TLSv1.2"
    finally:
        server.close()
        await server.wait_closed()
    for what, ctx in old.items():
        with pytest.raises((ssl.SSLError, ConnectionError)):
            await _handshake(port, ctx)
            pytest.fail(f"{what} was accepted")
    assert await _handshake(port, verified_context(stack.ca), "localhost") == "TLSv1.3"
    assert await _handshake(port, verified_context(stack.ca), "127.0.0.1") == "TLSv1.3"
    tls12 = verified_context(stack.ca)
    tls12.maximum_version = ssl.TLSVersion.TLSv1_2
    assert await _handshake(port, tls12) == "TLSv1.2"
    with pytest.raises(ssl.SSLCertVerificationError):
        await _handshake(port, verified_context(stack.ca), "example.com")


def test_nothing_else_is_exposed(stack: Stack) -> None:
    c = stack.controller
    proc = psutil.Process(c.proc.pid)
    sockets = proc.net_connections(kind="inet")
    listening = {s.laddr.port for s in sockets if s.status == psutil.CONN_LISTEN}
    assert listening == {c.metrics_port, c.health_port, stack.webhook_port}, sockets
    assert not [s for s in sockets if s.type == socket.SOCK_DGRAM and not s.raddr], (
        "a bound UDP socket"
    )

    admin = stack.admin_token()  # system:masters: authorized for any path
    base = stack.url
    for path in ("/", "/debug/pprof/", "/debug/pprof/heap", "/healthz", "/readyz",
                 "/metrics/", "/metricsx", "/metrics/../", "/%2e%2e/metrics", "/index.html"):  # fmt: skip
        status, _, _ = fetch(base + path, admin)
        assert status == 404, (path, status)
    for method in ("POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"):
        assert fetch(f"{base}/metrics", admin, method=method)[0] == 405, method
    # A reader is authorized for GET /metrics only: other paths are refused before routing.
    reader = stack.scraper("reader-paths", reader=True)
    assert fetch(f"{base}/debug/pprof/", reader)[0] == 403
    assert fetch(f"{base}/metrics", reader, method="POST")[0] == 403
    assert fetch(f"{base}/", None)[0] == 401  # and nobody learns which paths exist

    health = f"http://127.0.0.1:{c.health_port}"
    for path in ("/healthz", "/livez", "/readyz", "/healthz/ping", "/readyz/informers-synced"):
        assert http_get(health + path)[0] == 200, path  # no token: kubelets send none
    for path in ("/", "/metrics", "/debug/pprof/", "/healthz/nope/x", "/index.html"):
        assert http_get(health + path)[0] in (404,), path
    for method in ("POST", "PUT", "DELETE", "HEAD"):
        req = urllib.request.Request(f"{health}/healthz", method=method)
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=30)
        assert err.value.code == 405, method


def test_the_controller_needs_the_review_role(stack: Stack) -> None:
    sim = stack.sim
    binding = get_json(sim, "clusterrolebinding", AUTH_BINDING)
    sim.kubectl("delete", "clusterrolebinding", AUTH_BINDING)
    try:
        token = stack.scraper("uncached", reader=True)
        status, body, _ = fetch(f"{stack.url}/metrics", token)
        assert (status, body) == (401, "Authentication failed\n")
        assert "tokenreviews.authentication.k8s.io is forbidden" in stack.controller.output()
    finally:
        for k in ("resourceVersion", "uid", "creationTimestamp", "managedFields"):
            binding["metadata"].pop(k, None)
        sim.kubectl("create", "-f", "-", input=json.dumps(binding))
    # Failures are not cached: the role back, the same token is let in.
    eventually(lambda: fetch(f"{stack.url}/metrics", token)[0] == 200, within=30, interval=0.5)


def test_prometheus_scrapes_the_secure_endpoint(stack: Stack) -> None:
    prometheus = shutil.which("prometheus")
    assert prometheus, "prometheus is not installed: `make prometheus` (Debian package prometheus)"
    tmp = stack.tmp
    token_file = tmp / "prometheus.token"
    token_file.write_text(stack.scraper("prom", reader=True))
    (tmp / "ca.crt").write_bytes(stack.ca)
    config = {
        "global": {"scrape_interval": "1s"},
        "scrape_configs": [
            {
                "job_name": "jobset-controller",
                "scheme": "https",
                "bearer_token_file": str(token_file),
                "tls_config": {"ca_file": str(tmp / "ca.crt"), "server_name": "localhost"},
                "static_configs": [{"targets": [f"127.0.0.1:{stack.controller.metrics_port}"]}],
            },
            {  # the same endpoint without a token: Prometheus sees it down (401)
                "job_name": "anonymous",
                "scheme": "https",
                "tls_config": {"insecure_skip_verify": True},
                "static_configs": [{"targets": [f"127.0.0.1:{stack.controller.metrics_port}"]}],
            },
        ],
    }
    (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    log = (tmp / "prometheus.log").open("w")
    proc = subprocess.Popen(
        [prometheus, f"--config.file={tmp / 'prometheus.yml'}",
         f"--storage.tsdb.path={tmp / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    api = f"http://127.0.0.1:{port}/api/v1"
    try:

        def targets() -> dict[str, dict[str, Any]] | None:
            if proc.poll() is not None:
                raise RuntimeError((tmp / "prometheus.log").read_text())
            status, body = http_get(f"{api}/targets")
            if status != 200:
                return None
            active = json.loads(body)["data"]["activeTargets"]
            by_job = {t["labels"]["job"]: t for t in active}
            if {t["health"] for t in by_job.values()} & {"unknown"} or len(by_job) < 2:
                return None
            return by_job

        by_job = eventually(targets, within=90, interval=0.5)
        assert by_job["jobset-controller"]["health"] == "up", by_job["jobset-controller"]
        assert by_job["anonymous"]["health"] == "down"
        assert "401" in by_job["anonymous"]["lastError"], by_job["anonymous"]

        def series() -> bool:
            status, body = http_get(
                f"{api}/query?query=controller_runtime_max_concurrent_reconciles"
                '{job="jobset-controller"}'
            )
            return status == 200 and bool(json.loads(body)["data"]["result"])

        eventually(series, within=60, interval=0.5)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _served_certificate(port: int) -> x509.Certificate:
    pem = ssl.get_server_certificate(("127.0.0.1", port), timeout=30)
    return x509.load_pem_x509_certificate(pem.encode())


def test_renewed_certificate_files_are_served_without_restart(stack: Stack) -> None:
    port = stack.controller.metrics_port
    before = _served_certificate(port)
    new_ca = write_certs(stack.cert_dir)
    expected = x509.load_pem_x509_certificate((stack.cert_dir / "tls.crt").read_bytes())
    assert expected.serial_number != before.serial_number
    eventually(
        lambda: _served_certificate(port).serial_number == expected.serial_number,
        within=60,
        interval=0.5,
    )
    stack.ca = new_ca
    token = stack.scraper("after-renewal", reader=True)
    status, body, _ = fetch(f"{stack.url}/metrics", token, context=verified_context(new_ca))
    assert status == 200
    # Every poll of the files is a certificate read, as controller-runtime's certwatcher
    # counts them; none failed (the files were swapped in whole).
    reads = re.search(r"^certwatcher_read_certificate_total (\S+)$", body, re.M)
    errors = re.search(r"^certwatcher_read_certificate_errors_total (\S+)$", body, re.M)
    assert reads and float(reads[1]) >= 2, body[:2000]
    assert errors and float(errors[1]) == 0
    assert stack.controller.proc.poll() is None


def test_dev_serves_a_self_signed_certificate(tmp_path: Path) -> None:
    port = free_port()
    dev = start_command(
        tmp_path, "dev", "--sim-level", "none", "--nodes", "1", "--metrics-port", str(port),
        "--metrics-secure", timeout=120,
    )  # fmt: skip
    try:
        url = f"https://127.0.0.1:{port}/metrics"
        with pytest.raises(urllib.error.URLError) as err:
            urllib.request.urlopen(url, context=ssl.create_default_context(), timeout=30)
        assert isinstance(err.value.reason, ssl.SSLCertVerificationError)
        served = _served_certificate(port)
        assert served.issuer != served.subject  # a throw-away CA signed it, in memory
        token = yaml.safe_load(dev.kubeconfig.read_text())["users"][0]["user"]["token"]
        assert fetch(url)[0] == 401
        status, body, _ = fetch(url, token)
        assert status == 200 and "controller_runtime_reconcile_total" in body
    finally:
        dev.stop()


def _plain_install(tmp: Path) -> list[dict[str, Any]]:
    """config/default with the config/metrics-insecure component (the plain-HTTP opt-in)."""
    overlay = tmp / "plain-default"
    overlay.mkdir()
    rel = os.path.relpath(CONFIG, overlay)
    (overlay / "kustomization.yaml").write_text(
        f"resources: [{rel}/default]\ncomponents: [{rel}/metrics-insecure]\n"
    )
    return kustomize(overlay)


def _comparable(objs: list[dict[str, Any]]) -> dict[tuple[str, str], Any]:
    """What the two installs must agree on for secure metrics."""
    out: dict[tuple[str, str], Any] = {}
    for o in objs:
        kind, name = o["kind"], o["metadata"]["name"]
        if kind == "ClusterRole" and "metrics" in name:
            out[(kind, name)] = sorted(json.dumps(r, sort_keys=True) for r in o["rules"])
        elif kind == "ClusterRoleBinding" and "metrics" in name:
            out[(kind, name)] = (o["roleRef"], o["subjects"])
        elif kind == "Deployment":
            out[(kind, name)] = o["spec"]["template"]["spec"]["containers"][0]["args"]
        elif kind == "Service" and "metrics" in name:
            out[(kind, name)] = [p["name"] for p in o["spec"]["ports"]]
        elif kind == "ServiceMonitor":
            ep = o["spec"]["endpoints"][0]
            out[(kind, name)] = {k: ep.get(k) for k in ("port", "scheme", "bearerTokenFile",
                                                          "tlsConfig", "path")}  # fmt: skip
    return out


def test_chart_and_kustomize_install_the_same_secure_metrics(tmp_path: Path) -> None:
    """Secure by default in both, the same objects; plain HTTP is the explicit opt-in in
    both (metrics.secure=false, config/metrics-insecure), again the same."""
    from_chart = _comparable(chart.objects({"metrics": {"serviceMonitor": {"enabled": True}}}))
    from_kustomize = _comparable(kustomize(CONFIG / "default"))
    assert from_chart == from_kustomize
    assert ("ClusterRole", READER_ROLE) in from_chart
    monitor = from_chart[("ServiceMonitor", "jobset-controller-manager")]
    assert monitor["scheme"] == "https" and monitor["tlsConfig"]["ca"]["secret"]["key"] == "ca.crt"
    # The parsed flags are what the controller takes.
    args = from_chart[("Deployment", "jobset-controller-manager")]
    assert build_parser().parse_args(["controller", *args]).metrics_secure is True
    plain_values = {"metrics": {"secure": False, "serviceMonitor": {"enabled": True}}}
    plain = _comparable(chart.objects(plain_values))
    plain_kustomize = _comparable(_plain_install(tmp_path))
    # The component appends --metrics-secure=false to config/manager's args (a JSON patch
    # cannot remove a list item by value); the chart renders only that: the same flags.
    deployment = ("Deployment", "jobset-controller-manager")
    parsed = [
        vars(build_parser().parse_args(["controller", *objs.pop(deployment)]))
        for objs in (plain, plain_kustomize)
    ]
    assert parsed[0] == parsed[1] and parsed[0]["metrics_secure"] is False
    assert plain == plain_kustomize
    assert not [k for k in plain if k[0].startswith("ClusterRole")]
    assert plain[("ServiceMonitor", "jobset-controller-manager")]["scheme"] == "http"
