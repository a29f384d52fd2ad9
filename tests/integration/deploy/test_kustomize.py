"""config/default, rendered by `kubectl kustomize`: a complete install, the same as the chart's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from jobset.cli import build_parser
from kubesim.process import SimProcess, start_sim
from tests.integration.deploy import chart
from tests.integration.deploy.helpers import CHART, CONFIG, DATA, get_json, kustomize
from tests.integration.deploy.rbac import Grant, grants, rules_of

pytestmark = [pytest.mark.kubectl, pytest.mark.helm]

NS = "jobset-system"
SA = "jobset-controller-manager"


@pytest.fixture(scope="module")
def default() -> list[dict[str, Any]]:
    return kustomize(CONFIG / "default")


def _find(objs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind} {name}: {len(found)} found"
    return found[0]


def test_default_is_a_complete_install(default: list[dict[str, Any]]) -> None:
    assert sorted((o["kind"], o["metadata"]["name"]) for o in default) == [
        ("ClusterRole", "jobset-editor-role"),
        ("ClusterRole", "jobset-manager-role"),
        ("ClusterRole", "jobset-metrics-auth-role"),
        ("ClusterRole", "jobset-metrics-reader"),
        ("ClusterRole", "jobset-viewer-role"),
        ("ClusterRoleBinding", "jobset-manager-rolebinding"),
        ("ClusterRoleBinding", "jobset-metrics-auth-rolebinding"),
        ("CustomResourceDefinition", "jobsets.jobset.x-k8s.io"),
        ("Deployment", "jobset-controller-manager"),
        ("MutatingWebhookConfiguration", "jobset-mutating-webhook-configuration"),
        ("Namespace", NS),
        ("NetworkPolicy", "jobset-controller-manager"),
        ("PrometheusRule", "jobset-controller-alerts"),
        ("Role", "jobset-leader-election-role"),
        ("Role", "jobset-webhook-cert-role"),
        ("RoleBinding", "jobset-leader-election-rolebinding"),
        ("RoleBinding", "jobset-webhook-cert-rolebinding"),
        ("Secret", "jobset-webhook-server-cert"),
        ("Service", "jobset-controller-manager-metrics-service"),
        ("Service", "jobset-webhook-service"),
        ("ServiceAccount", SA),
        ("ServiceMonitor", "jobset-controller-manager"),
        ("ValidatingWebhookConfiguration", "jobset-validating-webhook-configuration"),
    ]
    namespaced = [o for o in default if o["kind"] not in {
        "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "Namespace",
        "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}]  # fmt: skip
    assert {o["metadata"]["namespace"] for o in namespaced} == {NS}
    crd = _find(default, "CustomResourceDefinition", "jobsets.jobset.x-k8s.io")
    assert crd["spec"]["versions"][0]["name"] == "v1alpha2"
    # Without the Prometheus Operator: config/install is the same minus the component.
    install = kustomize(CONFIG / "install")
    assert sorted(o["kind"] for o in default if o not in install) == [
        "PrometheusRule",
        "ServiceMonitor",
    ]


def test_deployment_is_hardened(default: list[dict[str, Any]]) -> None:
    deploy = _find(default, "Deployment", "jobset-controller-manager")
    pod = deploy["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert pod["serviceAccountName"] == SA
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 65532
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert c["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert set(c["resources"]) == {"requests", "limits"}
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    assert {p["name"]: p["containerPort"] for p in c["ports"]}["health"] == 8081
    args = build_parser().parse_args(["controller", *c["args"]])
    assert args.leader_elect and args.health_port == 8081 and args.metrics_port == 8080
    assert args.metrics_secure is True and not args.metrics_cert_dir
    assert pod["terminationGracePeriodSeconds"] > args.graceful_shutdown_timeout
    assert {
        "name": "POD_NAMESPACE",
        "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
    } in c["env"]
    # The only writable place is an emptyDir.
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]]
    assert volumes["cert"]["secret"]["secretName"] == "jobset-webhook-server-cert"
    # Only the serving pair is mounted: the internal CA's private key never reaches a file.
    assert {i["key"] for i in volumes["cert"]["secret"]["items"]} == {"tls.crt", "tls.key"}
    # The webhook and metrics Services select these pods.
    labels = deploy["spec"]["template"]["metadata"]["labels"]
    for svc in ("jobset-webhook-service", "jobset-controller-manager-metrics-service"):
        assert _find(default, "Service", svc)["spec"]["selector"].items() <= labels.items()
    metrics = _find(default, "Service", "jobset-controller-manager-metrics-service")
    monitor = _find(default, "ServiceMonitor", "jobset-controller-manager")
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= metrics["metadata"]["labels"].items()
    )
    assert monitor["spec"]["endpoints"][0]["port"] == metrics["spec"]["ports"][0]["name"]
    # Secure by default: HTTPS with Prometheus' token, verified against the internal CA for
    # the metrics Service's name (the certificate the controller issues names it).
    endpoint = monitor["spec"]["endpoints"][0]
    assert (endpoint["scheme"], endpoint["port"]) == ("https", "https-metrics")
    assert endpoint["bearerTokenFile"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"
    assert endpoint["tlsConfig"] == {
        "ca": {"secret": {"name": "jobset-webhook-server-cert", "key": "ca.crt"}},
        "serverName": f"jobset-controller-manager-metrics-service.{NS}.svc",
    }


def test_prometheus_rule_is_the_rules_file(default: list[dict[str, Any]]) -> None:
    rule = _find(default, "PrometheusRule", "jobset-controller-alerts")
    assert rule["spec"] == yaml.safe_load((CHART / "files" / "prometheus-rules.yaml").read_text())


def _rbac(objs: list[dict[str, Any]]) -> set[Grant]:
    """Every grant to the controller, plus the user-facing roles' rules."""
    out = grants(objs, NS, SA)
    for o in objs:
        if o["kind"] == "ClusterRole" and o["metadata"]["name"] != "jobset-manager-role":
            out |= {Grant(f"role:{o['metadata']['name']}", g.group, g.resource, g.verb, g.names)
                    for g in rules_of(o, "")}  # fmt: skip
    return out


def test_chart_and_kustomize_have_the_same_rbac(default: list[dict[str, Any]]) -> None:
    from_chart = _rbac(chart.objects())
    from_kustomize = _rbac(default)
    assert from_chart == from_kustomize, (
        f"only in the chart: {sorted(map(str, from_chart - from_kustomize))}\n"
        f"only in config/: {sorted(map(str, from_kustomize - from_chart))}"
    )
    # Same objects, too: a user switching from one to the other keeps the same names.
    kinds = ("ServiceAccount", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")
    assert sorted(
        (o["kind"], o["metadata"]["name"]) for o in chart.objects() if o["kind"] in kinds
    ) == (sorted((o["kind"], o["metadata"]["name"]) for o in default if o["kind"] in kinds))


def test_chart_and_kustomize_have_the_same_network_policy(default: list[dict[str, Any]]) -> None:
    """Ingress to the webhook port from anywhere (the API server cannot be selected), to
    metrics only from the monitoring namespace, nothing else."""
    k = _find(default, "NetworkPolicy", "jobset-controller-manager")
    h = chart.one(chart.objects(), "NetworkPolicy", "jobset-controller-manager")
    assert k["spec"] == h["spec"]
    assert k["metadata"]["namespace"] == h["metadata"]["namespace"] == NS
    deploy = _find(default, "Deployment", "jobset-controller-manager")
    pod_labels = deploy["spec"]["template"]["metadata"]["labels"]
    assert k["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()
    ports = {
        p["name"]: p["containerPort"]
        for p in deploy["spec"]["template"]["spec"]["containers"][0]["ports"]
    }
    webhook, metrics = k["spec"]["ingress"]
    assert webhook == {"ports": [{"port": ports["webhook-server"], "protocol": "TCP"}]}
    assert metrics["ports"] == [{"port": ports["metrics"], "protocol": "TCP"}]
    assert metrics["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
    ]
    assert k["spec"]["policyTypes"] == ["Ingress"]
    # The chart's switch and selectors.
    assert not [
        o
        for o in chart.objects({"networkPolicy": {"enabled": False}})
        if o["kind"] == "NetworkPolicy"
    ]
    scraper = [{"podSelector": {"matchLabels": {"app": "prometheus"}}}]
    custom = chart.one(
        chart.objects(
            {
                "networkPolicy": {
                    "metricsFrom": scraper,
                    "webhookFrom": [{"ipBlock": {"cidr": "10.0.0.0/24"}}],
                }
            }
        ),
        "NetworkPolicy",
        "jobset-controller-manager",
    )
    assert custom["spec"]["ingress"][0]["from"] == [{"ipBlock": {"cidr": "10.0.0.0/24"}}]
    assert custom["spec"]["ingress"][1]["from"] == scraper
    closed = chart.one(
        chart.objects({"networkPolicy": {"metricsFrom": []}}),
        "NetworkPolicy",
        "jobset-controller-manager",
    )
    assert len(closed["spec"]["ingress"]) == 1  # metrics reachable from nowhere


def test_chart_and_kustomize_run_the_same_container(default: list[dict[str, Any]]) -> None:
    k = _find(default, "Deployment", "jobset-controller-manager")["spec"]["template"]["spec"]
    h = chart.one(chart.objects(), "Deployment", "jobset-controller-manager")["spec"]["template"][
        "spec"
    ]
    for field in (
        "securityContext",
        "terminationGracePeriodSeconds",
        "volumes",
        "serviceAccountName",
    ):
        assert k[field] == h[field], field
    kc, hc = k["containers"][0], h["containers"][0]
    for field in ("command", "args", "env", "ports", "livenessProbe", "readinessProbe",
                  "resources", "securityContext", "volumeMounts"):  # fmt: skip
        assert kc[field] == hc[field], field
    assert kc["image"].rsplit(":", 1)[1] == hc["image"].rsplit(":", 1)[1]


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    s = start_sim(tmp_path_factory.mktemp("kustomize"), "--sim-level", "none")
    yield s
    s.stop()


def test_default_applies_to_a_cluster(sim: SimProcess) -> None:
    sim.kubectl("create", "-f", str(DATA / "thirdparty-crds.yaml"))
    # Server-side: the CRD is too big for client-side apply's last-applied annotation.
    out = sim.kubectl("apply", "--server-side", "-k", str(CONFIG / "default"), timeout=120)
    assert "deployment.apps/jobset-controller-manager serverside-applied" in out.stdout
    sim.kubectl("wait", "--for=condition=Established", "crd/jobsets.jobset.x-k8s.io")
    assert (
        get_json(sim, "deployment", "jobset-controller-manager", "-n", NS)["spec"]["replicas"] == 1
    )
    assert get_json(sim, "servicemonitor", "jobset-controller-manager", "-n", NS)
    assert (
        get_json(sim, "namespace", NS)["metadata"]["labels"]["pod-security.kubernetes.io/enforce"]
        == "restricted"
    )
    # Applying again changes nothing and fails nothing.
    again = sim.kubectl("apply", "--server-side", "-k", str(CONFIG / "default"), timeout=120)
    assert "unchanged" in again.stdout or "serverside-applied" in again.stdout
