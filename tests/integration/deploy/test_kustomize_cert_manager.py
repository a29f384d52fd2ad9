"""config/cert-manager: the kustomize component for cert-manager-issued webhook and metrics
certificates, rendered by `kubectl kustomize` in an overlay as a user writes it, compared with
the chart's certificate.mode: cert-manager, and applied to a simulated cluster whose cert-manager CRDs
carry the schema of the fields used (tests/integration/deploy/data/cert-manager-crds.yaml).

What cert-manager then does with these objects (issue, inject) is played in
tests/integration/incluster/test_certmanager_incluster.py for the chart, which makes the
same objects (checked here)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import jobset
from jobset.cli import build_parser
from kubesim.process import SimProcess, start_sim
from tests.integration.deploy import chart
from tests.integration.deploy.helpers import CONFIG, DATA, get_json, kustomize
from tests.integration.deploy.test_kustomize import _rbac

pytestmark = [pytest.mark.kubectl, pytest.mark.helm]

NS = "jobset-system"
INJECT = "cert-manager.io/inject-ca-from"
CM_VALUES = {"certificate": {"mode": "cert-manager"}}
REGISTRY = "registry.example/team/jobset"


def overlay(tmp: Path, base: str) -> list[dict[str, Any]]:
    """`kubectl kustomize` of an overlay of config/`base` with the component and an image
    of the user's, as docs/operations.md shows one (kustomize takes only relative paths to
    other kustomizations)."""
    tmp.mkdir(parents=True, exist_ok=True)
    rel = os.path.relpath(CONFIG, tmp)
    (tmp / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [f"{rel}/{base}"],
                "components": [f"{rel}/cert-manager"],
                "images": [{"name": "ghcr.io/jobset-py/jobset", "newName": REGISTRY}],
            }
        )
    )
    return kustomize(tmp)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return overlay(tmp_path_factory.mktemp("overlay") / "cm", "default")


def _find(objs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind} {name}: {len(found)} found"
    return found[0]


def _kinds(objs: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(o["kind"], o["metadata"]["name"]) for o in objs}


def test_component_swaps_internal_management_for_cert_manager(
    rendered: list[dict[str, Any]],
) -> None:
    default = kustomize(CONFIG / "default")
    assert _kinds(rendered) - _kinds(default) == {
        ("Certificate", "jobset-serving-cert"),
        ("Certificate", "jobset-metrics-cert"),
        ("Issuer", "jobset-selfsigned-issuer"),
    }
    # What only the internal management needs is gone: cert-manager writes the Secret.
    assert _kinds(default) - _kinds(rendered) == {
        ("Secret", "jobset-webhook-server-cert"),
        ("Role", "jobset-webhook-cert-role"),
        ("RoleBinding", "jobset-webhook-cert-rolebinding"),
    }
    cert = _find(rendered, "Certificate", "jobset-serving-cert")
    issuer = _find(rendered, "Issuer", "jobset-selfsigned-issuer")
    assert cert["metadata"]["namespace"] == issuer["metadata"]["namespace"] == NS
    assert cert["spec"]["issuerRef"] == {"kind": "Issuer", "name": "jobset-selfsigned-issuer"}
    # The certificate is for the webhook Service, stored where the pods mount it from.
    service = _find(rendered, "Service", "jobset-webhook-service")
    assert (
        f"{service['metadata']['name']}.{service['metadata']['namespace']}.svc"
        in (cert["spec"]["dnsNames"])
    )
    deploy = _find(rendered, "Deployment", "jobset-controller-manager")
    pod = deploy["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["cert"]["secret"]["secretName"] == cert["spec"]["secretName"]
    (container,) = pod["containers"]
    assert container["image"] == f"{REGISTRY}:{jobset.__version__}"  # the overlay's image
    args = build_parser().parse_args(["controller", *container["args"]])
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert args.cert_management == "files" and args.cert_dir == mounts["cert"]
    # The metrics certificate: for the metrics Service, served from its mounted Secret, and
    # what the ServiceMonitor verifies the scrape against.
    metrics_cert = _find(rendered, "Certificate", "jobset-metrics-cert")["spec"]
    assert metrics_cert["issuerRef"] == cert["spec"]["issuerRef"]
    metrics_svc = _find(rendered, "Service", "jobset-controller-manager-metrics-service")
    svc_name = f"{metrics_svc['metadata']['name']}.{NS}.svc"
    assert svc_name in metrics_cert["dnsNames"]
    assert volumes["metrics-cert"]["secret"]["secretName"] == metrics_cert["secretName"]
    assert args.metrics_secure and args.metrics_cert_dir == mounts["metrics-cert"]
    monitor = _find(rendered, "ServiceMonitor", "jobset-controller-manager")
    assert monitor["spec"]["endpoints"][0]["tlsConfig"] == {
        "ca": {"secret": {"name": metrics_cert["secretName"], "key": "ca.crt"}},
        "serverName": svc_name,
    }
    # Both webhook configurations name the Certificate for cert-manager's CA injector.
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        (conf,) = [o for o in rendered if o["kind"] == kind]
        assert conf["metadata"]["annotations"] == {INJECT: f"{NS}/jobset-serving-cert"}
        assert all("caBundle" not in w["clientConfig"] for w in conf["webhooks"])
    # The CRD has no conversion webhook, so no caBundle for the injector to fill there; a
    # conversion webhook added later must come with the inject-ca-from annotation on the CRD.
    crd = _find(rendered, "CustomResourceDefinition", "jobsets.jobset.x-k8s.io")
    assert crd["spec"].get("conversion", {"strategy": "None"})["strategy"] == "None"
    assert len(crd["spec"]["versions"]) == 1


def test_component_is_the_charts_cert_manager_mode(rendered: list[dict[str, Any]]) -> None:
    monitor = {"metrics": {"serviceMonitor": {"enabled": True}}}
    from_chart = chart.objects({**CM_VALUES, **monitor})
    for kind, name in (
        ("Certificate", "jobset-serving-cert"),
        ("Certificate", "jobset-metrics-cert"),
        ("Issuer", "jobset-selfsigned-issuer"),
    ):
        assert _find(rendered, kind, name)["spec"] == chart.one(from_chart, kind, name)["spec"]
    k = _find(rendered, "Deployment", "jobset-controller-manager")["spec"]["template"]["spec"]
    h = chart.one(from_chart, "Deployment", "jobset-controller-manager")["spec"]["template"]["spec"]
    assert sorted(k["containers"][0]["args"]) == sorted(h["containers"][0]["args"])
    assert k["volumes"] == h["volumes"]
    assert k["containers"][0]["volumeMounts"] == h["containers"][0]["volumeMounts"]
    (k_ep,) = _find(rendered, "ServiceMonitor", "jobset-controller-manager")["spec"]["endpoints"]
    (h_ep,) = chart.one(from_chart, "ServiceMonitor", "jobset-controller-manager")["spec"][
        "endpoints"
    ]
    assert k_ep["tlsConfig"] == h_ep["tlsConfig"]
    assert _rbac(rendered) == _rbac(from_chart)
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        (kc,) = [o for o in rendered if o["kind"] == kind]
        (hc,) = [o for o in from_chart if o["kind"] == kind]
        assert kc["metadata"]["annotations"][INJECT] == hc["metadata"]["annotations"][INJECT]


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    s = start_sim(tmp_path_factory.mktemp("cm-sim"), "--sim-level", "none")
    yield s
    s.stop()


def test_component_applies_with_cert_managers_schema(sim: SimProcess, tmp_path: Path) -> None:
    sim.kubectl("create", "-f", str(DATA / "cert-manager-crds.yaml"))
    for crd in ("certificates", "issuers"):
        sim.kubectl("wait", "--for=condition=Established", f"crd/{crd}.cert-manager.io")
    objs = overlay(tmp_path / "install-cm", "install")  # no Prometheus Operator CRDs here
    out = sim.kubectl(
        "apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(objs), timeout=120
    )
    assert "certificate.cert-manager.io/jobset-serving-cert serverside-applied" in out.stdout
    assert "certificate.cert-manager.io/jobset-metrics-cert serverside-applied" in out.stdout
    # Stored as applied: no field was pruned as unknown to cert-manager's API.
    for kind, name in (
        ("Certificate", "jobset-serving-cert"),
        ("Certificate", "jobset-metrics-cert"),
        ("Issuer", "jobset-selfsigned-issuer"),
    ):
        stored = get_json(sim, kind.lower() + ".cert-manager.io", name, "-n", NS)
        assert stored["spec"] == _find(objs, kind, name)["spec"], kind
    conf = get_json(
        sim, "validatingwebhookconfiguration", "jobset-validating-webhook-configuration"
    )
    assert conf["metadata"]["annotations"][INJECT] == f"{NS}/jobset-serving-cert"
    # The schema is enforced: a Certificate cert-manager would refuse is refused here too.
    bad = _find(objs, "Certificate", "jobset-serving-cert")
    bad = {**bad, "metadata": {**bad["metadata"], "name": "bad"},
           "spec": {**bad["spec"], "privateKey": {"algorithm": "DSA"}}}  # fmt: skip
    refused = sim.kubectl(
        "apply", "--server-side", "-f", "-", input=yaml.safe_dump(bad), check=False
    )
    assert refused.returncode != 0 and "algorithm" in refused.stderr, refused.stderr
