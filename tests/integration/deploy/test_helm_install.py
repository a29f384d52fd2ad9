"""`helm install`, `upgrade` and `uninstall` of the chart into `jobset sim`, by Helm's engine.

The sim runs no Deployment controller, so the controller pods never start here: what is
checked is what Helm does with the chart against a real API (CRD first, every object
accepted, upgrades that keep what the controller wrote, a clean uninstall).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import helm_python as helm
import pytest

from kubesim.process import SimProcess, start_sim
from tests.integration.deploy.helpers import CHART, DATA, get_json

pytestmark = [pytest.mark.kubectl, pytest.mark.helm]

NS = "jobset-system"
CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n").decode()


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    s = start_sim(tmp_path_factory.mktemp("helm"), "--sim-level", "none")
    s.kubectl("create", "-f", str(DATA / "thirdparty-crds.yaml"))
    yield s
    s.stop()


def _missing(sim: SimProcess, kind: str, name: str, ns: str | None = NS) -> bool:
    args = ["get", kind, name] + (["-n", ns] if ns else [])
    out = sim.kubectl(*args, check=False)
    return out.returncode != 0 and "NotFound" in out.stderr


def test_install_upgrade_uninstall(sim: SimProcess, tmp_path: Path) -> None:
    cfg = helm.Config(kubeconfig_path=str(sim.kubeconfig), namespace=NS)
    try:
        release = cfg.install(CHART, "jobset", namespace=NS, create_namespace=True, timeout=120)
        assert release["status"] == "deployed" and release["revision"] == 1
        assert "rollout status deployment/jobset-controller-manager" in release["notes"]

        crd = get_json(sim, "crd", "jobsets.jobset.x-k8s.io")
        assert any(
            c["type"] == "Established" and c["status"] == "True"
            for c in crd["status"]["conditions"]
        )
        deploy = get_json(sim, "deployment", "jobset-controller-manager", "-n", NS)
        container = deploy["spec"]["template"]["spec"]["containers"][0]
        assert (
            container["command"] == ["jobset", "controller"]
            and "--leader-elect" in container["args"]
        )
        assert get_json(sim, "sa", "jobset-controller-manager", "-n", NS)
        assert get_json(sim, "clusterrolebinding", "jobset-manager-rolebinding")["subjects"] == [
            {"kind": "ServiceAccount", "name": "jobset-controller-manager", "namespace": NS}
        ]
        assert get_json(sim, "role", "jobset-leader-election-role", "-n", NS)
        assert (
            get_json(sim, "svc", "jobset-webhook-service", "-n", NS)["spec"]["ports"][0]["port"]
            == 443
        )
        assert get_json(sim, "svc", "jobset-controller-manager-metrics-service", "-n", NS)
        mutating = get_json(
            sim, "mutatingwebhookconfiguration", "jobset-mutating-webhook-configuration"
        )
        assert [w["name"] for w in mutating["webhooks"]] == ["mjobset.kb.io", "mpod.kb.io"]

        # What the controller's certificate management writes at runtime: a certificate in
        # the Secret and the CA in both configurations. An upgrade must keep both.
        sim.kubectl(
            "patch", "secret", "jobset-webhook-server-cert", "-n", NS, "--type=merge",
            "-p", f'{{"data": {{"ca.crt": "{CA}"}}}}',
        )  # fmt: skip
        for kind, name in (
            ("mutatingwebhookconfiguration", "jobset-mutating-webhook-configuration"),
            ("validatingwebhookconfiguration", "jobset-validating-webhook-configuration"),
        ):
            patch = ",".join(
                f'{{"op": "add", "path": "/webhooks/{i}/clientConfig/caBundle", "value": "{CA}"}}'
                for i in range(2)
            )
            sim.kubectl("patch", kind, name, "--type=json", "-p", f"[{patch}]")

        values = {
            "controller": {"replicas": 2, "concurrency": 12, "featureGates": {"RestartJob": True}},
            "podDisruptionBudget": {"enabled": True},
            "metrics": {"serviceMonitor": {"enabled": True, "labels": {"release": "kps"}}},
            "prometheusRule": {"enabled": True},
            "grafana": {"dashboard": {"enabled": True}},
        }
        upgraded = cfg.upgrade(CHART, "jobset", values, namespace=NS, timeout=120)
        assert upgraded["revision"] == 2 and upgraded["status"] == "deployed"
        deploy = get_json(sim, "deployment", "jobset-controller-manager", "-n", NS)
        assert deploy["spec"]["replicas"] == 2
        args = deploy["spec"]["template"]["spec"]["containers"][0]["args"]
        assert "--concurrency=12" in args and "--feature-gates=RestartJob=true" in args
        assert (
            get_json(sim, "pdb", "jobset-controller-manager", "-n", NS)["spec"]["minAvailable"] == 1
        )
        sm = get_json(sim, "servicemonitor", "jobset-controller-manager", "-n", NS)
        assert sm["metadata"]["labels"]["release"] == "kps"
        rule = get_json(sim, "prometheusrule", "jobset-controller-alerts", "-n", NS)
        assert rule["spec"]["groups"][0]["name"] == "jobset-controller"
        cm = get_json(sim, "configmap", "jobset-grafana-dashboard", "-n", NS)
        assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert '"uid": "jobset-controller"' in cm["data"]["jobset-controller.json"]
        secret = get_json(sim, "secret", "jobset-webhook-server-cert", "-n", NS)
        assert secret["data"]["ca.crt"] == CA, "the upgrade dropped the controller's certificate"
        mutating = get_json(
            sim, "mutatingwebhookconfiguration", "jobset-mutating-webhook-configuration"
        )
        assert [w["clientConfig"].get("caBundle") for w in mutating["webhooks"]] == [CA, CA], (
            "the upgrade dropped the injected caBundle"
        )

        # Switching to cert-manager: the Issuer and both Certificates appear (the webhook's
        # and the metrics server's, which the ServiceMonitor now verifies against), the
        # controller's Secret role goes (cert-manager owns the Secret now).
        third = cfg.upgrade(
            CHART, "jobset", {**values, "certificate": {"mode": "cert-manager"}}, namespace=NS,
            timeout=120,
        )  # fmt: skip
        assert third["revision"] == 3
        cert = get_json(sim, "certificate", "jobset-serving-cert", "-n", NS)
        assert cert["spec"]["secretName"] == "jobset-webhook-server-cert"
        assert get_json(sim, "issuer", "jobset-selfsigned-issuer", "-n", NS)
        assert _missing(sim, "role", "jobset-webhook-cert-role")
        metrics_cert = get_json(sim, "certificate", "jobset-metrics-cert", "-n", NS)
        assert metrics_cert["spec"]["secretName"] == "jobset-metrics-server-cert"
        sm = get_json(sim, "servicemonitor", "jobset-controller-manager", "-n", NS)
        assert sm["spec"]["endpoints"][0]["tlsConfig"]["ca"]["secret"]["name"] == (
            "jobset-metrics-server-cert"
        )

        cfg.uninstall("jobset", timeout=120)
        for kind, name, ns in (
            ("deployment", "jobset-controller-manager", NS),
            ("svc", "jobset-webhook-service", NS),
            ("svc", "jobset-controller-manager-metrics-service", NS),
            ("sa", "jobset-controller-manager", NS),
            ("servicemonitor", "jobset-controller-manager", NS),
            ("prometheusrule", "jobset-controller-alerts", NS),
            ("configmap", "jobset-grafana-dashboard", NS),
            ("certificate", "jobset-serving-cert", NS),
            ("certificate", "jobset-metrics-cert", NS),
            ("clusterrole", "jobset-manager-role", None),
            ("clusterrolebinding", "jobset-manager-rolebinding", None),
            ("mutatingwebhookconfiguration", "jobset-mutating-webhook-configuration", None),
            ("validatingwebhookconfiguration", "jobset-validating-webhook-configuration", None),
        ):
            assert _missing(sim, kind, name, ns), f"{kind} {name} survived the uninstall"
        # Helm keeps CRDs (and so every JobSet) on uninstall, as it documents.
        assert get_json(sim, "crd", "jobsets.jobset.x-k8s.io")
    finally:
        cfg.close()


def test_bad_values_are_refused_before_anything_is_installed(sim: SimProcess) -> None:
    cfg = helm.Config(kubeconfig_path=str(sim.kubeconfig), namespace="other")
    try:
        with pytest.raises(helm.HelmError, match="/controller/logFormat"):
            cfg.install(
                CHART, "broken", {"controller": {"logFormat": "xml"}}, namespace="other",
                create_namespace=True, timeout=60,
            )  # fmt: skip
        assert _missing(sim, "deployment", "jobset-controller-manager", "other")
    finally:
        cfg.close()
