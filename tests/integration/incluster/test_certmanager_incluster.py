"""The chart with `certificate.mode: cert-manager`: the controller runs with
`--cert-management=files` and serves the webhook certificate cert-manager keeps in the
Secret, mounted into its pod; its secure metrics server serves the metrics certificate
cert-manager keeps in a second Secret (`--metrics-cert-dir`).

No cert-manager runs here (its CRDs do: tests/integration/deploy/data/thirdparty-crds.yaml),
so this test plays its two parts, from what the chart asks of them and nothing else:

- cert-manager's controller: for each Certificate the chart creates (the webhook's and the
  metrics server's), it issues a serving
  certificate for the Certificate's dnsNames and duration with `kubeutil.tls` and writes
  the Certificate's secretName as a kubernetes.io/tls Secret with tls.crt, tls.key and
  ca.crt. One difference: the chart's default Issuer is selfSigned, for which cert-manager
  would make ca.crt the serving certificate itself; `kubeutil.tls` issues from a CA, so
  ca.crt here is that CA. Either way the API server trusts what ca.crt holds.
- cert-manager's cainjector: every webhook configuration annotated
  `cert-manager.io/inject-ca-from: NAMESPACE/CERTIFICATE` gets that Certificate's Secret's
  ca.crt as the caBundle of each of its webhooks.

The pods are created before the certificates exist, as they are with a real cert-manager,
which issues them after the install: the pods wait in ContainerCreating for the metrics
Secret (its volume is not optional), then the controllers wait for the webhook files (not
ready meanwhile, no restart) and serve once the Secret volume has them. Then the in-cluster
webhook must work: the invalid JobSet is denied, a valid one runs, and with a CA in the
configurations that did not issue the served certificate, the API server refuses to call
the webhook (failurePolicy Fail) - the caBundle the "injector" wrote is what admission rests
on. And the metrics: a TLS client at each pod's IP, verifying against the metrics Secret's
ca.crt for the metrics Service's name (what the chart's ServiceMonitor says), is answered
200 with a reader's token; the webhook's CA does not verify it; a re-issued metrics
certificate is served without a restart.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
import ssl
from collections.abc import Iterator

import pytest

from kubeutil import tls
from tests.integration.deploy.helpers import scrape_secure
from tests.integration.incluster.conftest import (
    LEADER_ELECTION,
    NS,
    Cluster,
    eventually,
    example_reaches_its_outcome,
    finished,
    gone,
    invalid_jobset_is_denied,
    jobset_manifest,
    namespace,
    thirdparty_crds,
    uninstall,
)

pytestmark = pytest.mark.timeout(600)

VALUES = {
    "controller": {"replicas": 2, "leaderElection": LEADER_ELECTION},
    "certificate": {"mode": "cert-manager"},
}
INJECT = "cert-manager.io/inject-ca-from"
CONFIGURATIONS = ("validatingwebhookconfiguration", "mutatingwebhookconfiguration")
METRICS_SECRET = "jobset-metrics-server-cert"
METRICS_NAME = f"jobset-controller-manager-metrics-service.{NS}.svc"
READER_BINDING = "cert-manager-test-metrics-reader"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _duration(text: str) -> dt.timedelta:
    """A Go duration as cert-manager's fields take them (e.g. 2160h, 90m)."""
    units = {"h": 3600, "m": 60, "s": 1}
    parts = re.findall(r"(\d+)([hms])", text)
    assert parts and "".join(n + u for n, u in parts) == text, text
    return dt.timedelta(seconds=sum(int(n) * units[u] for n, u in parts))


def issue(cluster: Cluster, certificate: str, namespace_: str) -> bytes:
    """cert-manager's part: the Certificate's Secret, issued; returns the CA (ca.crt)."""
    spec = cluster.json("get", "certificate", certificate, "-n", namespace_)["spec"]
    validity = _duration(spec["duration"])
    ca_cert, ca_key = tls.make_ca("jobset-test-cert-manager-ca", validity)
    cert, key = tls.issue_serving_cert(ca_cert, ca_key, list(spec["dnsNames"]), validity)
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": {
            "name": spec["secretName"],
            "namespace": namespace_,
            "annotations": {"cert-manager.io/certificate-name": certificate},
        },
        "data": {"tls.crt": _b64(cert), "tls.key": _b64(key), "ca.crt": _b64(ca_cert)},
    }
    cluster.kubectl("apply", "-f", "-", input=json.dumps(secret))
    return ca_cert


def inject(cluster: Cluster, ca: bytes | None = None) -> int:
    """The cainjector's part: each annotated webhook configuration gets the ca.crt of the
    Certificate its annotation names (or `ca`, to prove that the bundle matters); returns
    how many configurations were injected."""
    injected = 0
    for kind in CONFIGURATIONS:
        for conf in cluster.json("get", kind)["items"]:
            source = (conf["metadata"].get("annotations") or {}).get(INJECT)
            if not source:
                continue
            ns, name = source.split("/")
            secret_name = cluster.json("get", "certificate", name, "-n", ns)["spec"]["secretName"]
            bundle = ca or base64.b64decode(
                cluster.json("get", "secret", secret_name, "-n", ns)["data"]["ca.crt"]
            )
            patch = [
                {"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": _b64(bundle)}
                for i in range(len(conf["webhooks"]))
            ]
            cluster.kubectl(
                "patch", kind, conf["metadata"]["name"], "--type=json", "-p", json.dumps(patch)
            )
            injected += 1
    return injected


@pytest.fixture(scope="module")
def installed(cluster: Cluster) -> Iterator[Cluster]:
    with thirdparty_crds(cluster):
        release = cluster.install(VALUES)
        try:
            assert release["status"] == "deployed"
            yield cluster
        finally:
            uninstall(cluster)
            # Not the release's: cert-manager made them, and would leave them behind too.
            cluster.kubectl(
                "delete", "secret", "jobset-webhook-server-cert", METRICS_SECRET, "-n", NS,
                "--ignore-not-found",
            )  # fmt: skip
            cluster.kubectl("delete", "clusterrolebinding", READER_BINDING, "--ignore-not-found")


def test_cert_manager_issued_certificate_serves_admission(installed: Cluster) -> None:
    cluster = installed
    # What the chart gives cert-manager: a self-signed Issuer and a Certificate for the
    # webhook Service's DNS names, stored in the Secret the pods mount.
    issuer = cluster.json("get", "issuer", "jobset-selfsigned-issuer", "-n", NS)
    assert issuer["spec"] == {"selfSigned": {}}
    cert = cluster.json("get", "certificate", "jobset-serving-cert", "-n", NS)["spec"]
    assert cert["issuerRef"]["name"] == "jobset-selfsigned-issuer"
    assert sorted(cert["dnsNames"]) == [
        f"jobset-webhook-service.{NS}.svc",
        f"jobset-webhook-service.{NS}.svc.cluster.local",
    ]
    # And one for the metrics Service's names, from the same Issuer, in the Secret the pods
    # mount for --metrics-cert-dir.
    metrics_cert = cluster.json("get", "certificate", "jobset-metrics-cert", "-n", NS)["spec"]
    assert metrics_cert["issuerRef"] == cert["issuerRef"]
    assert metrics_cert["secretName"] == METRICS_SECRET
    assert sorted(metrics_cert["dnsNames"]) == [METRICS_NAME, f"{METRICS_NAME}.cluster.local"]
    # cert-manager works asynchronously. Without the metrics Secret (a volume that is not
    # optional) the pods wait in ContainerCreating, no process started.
    eventually(lambda: _waiting_for(cluster, METRICS_SECRET), 120, "pods waiting for the Secret")
    assert cluster.controller_processes() == []
    issue(cluster, "jobset-metrics-cert", NS)
    # Then they start before the webhook's Secret exists (its volume is optional), and the
    # controllers wait for the files, not ready meanwhile.
    eventually(lambda: len(cluster.controller_processes()) == 2 or None, 120, "2 processes")
    assert cluster.ready_pods() == []
    ca = issue(cluster, "jobset-serving-cert", NS)
    assert inject(cluster) == 2
    cluster.rollout()
    assert len(cluster.ready_pods()) == 2
    # They waited, rather than crashing: no container restarted.
    for pod in cluster.controller_pods():
        assert [c["restartCount"] for c in pod["status"]["containerStatuses"]] == [0], pod
    procs = cluster.controller_processes()
    assert len(procs) == 2 and {uid for _, uid, _ in procs} == {65532}, procs
    assert all("--cert-management=files" in cmd for _, _, cmd in procs)
    assert all("--metrics-cert-dir=" in cmd for _, _, cmd in procs)
    ns = "cert-manager-test"
    with namespace(cluster, ns):
        invalid_jobset_is_denied(cluster, ns)
        example_reaches_its_outcome(cluster, "simple.yaml", ns)
        # The controller left the Secret to its owner: files mode only reads it.
        data = cluster.json("get", "secret", "jobset-webhook-server-cert", "-n", NS)["data"]
        assert base64.b64decode(data["ca.crt"]) == ca and set(data) == {
            "tls.crt",
            "tls.key",
            "ca.crt",
        }
        # A CA that did not issue the served certificate: the API server cannot verify the
        # webhook, and failurePolicy Fail refuses the JobSet.
        other_ca, _ = tls.make_ca("not-the-issuer", dt.timedelta(days=1))
        inject(cluster, other_ca)
        refused = cluster.sim.kubectl(
            "apply", "-f", "-", input=jobset_manifest("untrusted", ns), check=False
        )
        assert refused.returncode != 0, refused.stdout
        assert "x509: certificate signed by unknown authority" in refused.stderr, refused.stderr
        # The injector puts the right CA back: admission works again.
        inject(cluster)
        eventually(
            lambda: (
                cluster.sim.kubectl(
                    "apply", "-f", "-", input=jobset_manifest("trusted", ns), check=False
                ).returncode
                == 0
            ),
            30,
            "admission with the re-injected CA",
        )
        assert finished(cluster, "trusted", ns)["status"]["terminalState"] == "Completed"
    gone(cluster, "namespace", ns)
    metrics_served_from_the_secret(cluster)


def _waiting_for(cluster: Cluster, secret: str) -> bool | None:
    """Both controller pods wait in ContainerCreating for `secret` (the kubelet's mount
    error names it)."""
    pods = cluster.controller_pods()
    waiting = [
        s["state"]["waiting"]
        for p in pods
        for s in (p.get("status") or {}).get("containerStatuses") or []
        if "waiting" in s.get("state", {})
    ]
    return (
        len(pods) == len(waiting) == 2
        and all(w["reason"] == "ContainerCreating" and secret in w["message"] for w in waiting)
    ) or None


def _pod_ips(cluster: Cluster) -> list[str]:
    return [p["status"]["podIP"] for p in cluster.controller_pods()]


def _scrapes(cluster: Cluster, token: str, ca: bytes) -> list[tuple[int, str]]:
    """GET /metrics at each pod's IP, verified against `ca` for the metrics Service's name,
    as the chart's ServiceMonitor has Prometheus scrape."""
    return [scrape_secure(8080, token, ca, METRICS_NAME, 10, host=ip) for ip in _pod_ips(cluster)]


def _verified_by(cluster: Cluster, token: str, ca: bytes) -> list[tuple[int, str]] | None:
    """Both pods' scrapes, if both verify against `ca` and are answered 200; else None
    (not yet: a certificate `ca` did not issue, or a connection error)."""
    try:
        results = _scrapes(cluster, token, ca)
    except OSError:  # ssl.SSLCertVerificationError among them
        return None
    return results if len(results) == 2 and all(s == 200 for s, _ in results) else None


def metrics_served_from_the_secret(cluster: Cluster) -> None:
    """With both pods ready: their metrics server serves the metrics Secret's certificate,
    verified as the ServiceMonitor says, and its renewal."""
    monitor_ca = base64.b64decode(
        cluster.json("get", "secret", METRICS_SECRET, "-n", NS)["data"]["ca.crt"]
    )
    cluster.kubectl("create", "serviceaccount", "scraper", "-n", NS)
    cluster.kubectl("create", "clusterrolebinding", READER_BINDING,
                    "--clusterrole=jobset-metrics-reader", f"--serviceaccount={NS}:scraper")  # fmt: skip
    token = cluster.kubectl("create", "token", "scraper", "-n", NS).strip()
    results = eventually(lambda: _verified_by(cluster, token, monitor_ca), 60, "verified scrapes")
    assert all("controller_runtime_reconcile_total" in body for _, body in results)
    # The secure server: a bad token is refused after the verified handshake.
    assert [status for status, _ in _scrapes(cluster, "not-a-token", monitor_ca)] == [401, 401]
    # Not the webhook's certificate, nor a self-signed one: the webhook's CA cannot verify it.
    webhook_ca = base64.b64decode(
        cluster.json("get", "secret", "jobset-webhook-server-cert", "-n", NS)["data"]["ca.crt"]
    )
    with pytest.raises(ssl.SSLCertVerificationError):
        _scrapes(cluster, token, webhook_ca)
    # cert-manager renews it (a new CA here, to tell the two apart): the pods serve the new
    # one from the updated volume, without a restart; the old CA no longer verifies.
    renewed_ca = issue(cluster, "jobset-metrics-cert", NS)
    eventually(lambda: _verified_by(cluster, token, renewed_ca), 90, "the renewed certificate")
    with pytest.raises(ssl.SSLCertVerificationError):
        _scrapes(cluster, token, monitor_ca)
    for pod in cluster.controller_pods():
        assert [c["restartCount"] for c in pod["status"]["containerStatuses"]] == [0], pod
    cluster.kubectl("delete", "serviceaccount", "scraper", "-n", NS)
