"""Helm's own Go engine (helm-python-sdk) installs, upgrades and uninstalls a chart in the sim."""

from __future__ import annotations

import json
from pathlib import Path

import helm_python as helm
import pytest

from kubesim.process import SimProcess, start_sim

pytestmark = [pytest.mark.kubectl, pytest.mark.helm]

CHART = Path(__file__).resolve().parents[2] / "data" / "testchart"


def _get(sim: SimProcess, *args: str) -> dict:  # type: ignore[type-arg]
    return json.loads(sim.kubectl("get", *args, "-o", "json").stdout)  # type: ignore[no-any-return]


def test_install_upgrade_uninstall(tmp_path: Path) -> None:
    sim = start_sim(tmp_path, "--sim-level", "none")
    try:
        lint = helm.lint(str(CHART))
        assert lint["errors"] == [] and not [m for m in lint["messages"] if m["severity"] >= 3]
        cfg = helm.Config(kubeconfig_path=str(sim.kubeconfig), namespace="apps")
        release = cfg.install(CHART, "demo", namespace="apps", create_namespace=True, timeout=60)
        assert release["status"] == "deployed" and release["revision"] == 1
        assert _get(sim, "cm", "demo-config", "-n", "apps")["data"] == {"greeting": "hello"}
        deploy = _get(sim, "deployment", "demo-web", "-n", "apps")
        assert deploy["spec"]["replicas"] == 1
        assert _get(sim, "svc", "demo-web", "-n", "apps")["spec"]["ports"][0]["targetPort"] == 8080
        # The chart's CRD was installed first, so its custom resource could be created.
        crd = _get(sim, "crd", "sprockets.example.com")
        assert crd["spec"]["names"]["kind"] == "Sprocket"
        assert _get(sim, "sprocket", "demo-sprocket", "-n", "apps")["spec"]["teeth"] == 20
        # Helm keeps its release record in a Secret (sent by a typed client, as protobuf).
        secrets = sim.kubectl("get", "secrets", "-n", "apps", "-l", "owner=helm", "-o", "name")
        assert secrets.stdout.split() == ["secret/sh.helm.release.v1.demo.v1"]

        upgraded = cfg.upgrade(
            CHART,
            "demo",
            {"greeting": "bye", "replicas": 3, "port": 9090},
            namespace="apps",
            timeout=60,
        )
        assert upgraded["revision"] == 2 and upgraded["status"] == "deployed"
        assert _get(sim, "cm", "demo-config", "-n", "apps")["data"] == {"greeting": "bye"}
        deploy = _get(sim, "deployment", "demo-web", "-n", "apps")
        assert deploy["spec"]["replicas"] == 3
        container = deploy["spec"]["template"]["spec"]["containers"][0]
        assert container["env"] == [{"name": "GREETING", "value": "bye"}]
        assert container["ports"][0]["containerPort"] == 9090

        cfg.uninstall("demo", timeout=60)
        for kind, name in (("cm", "demo-config"), ("deployment", "demo-web"), ("svc", "demo-web")):
            gone = sim.kubectl("get", kind, name, "-n", "apps", check=False)
            assert gone.returncode != 0 and "NotFound" in gone.stderr
        # Helm leaves CRDs in place on uninstall, as it documents.
        assert _get(sim, "crd", "sprockets.example.com")["metadata"]["name"]
        cfg.close()
    finally:
        sim.stop()
