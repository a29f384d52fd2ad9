"""How the CRD is upgraded (docs/operations.md, "Upgrading the CRD"), run against `jobset sim`
with Helm's engine: `helm upgrade` to a chart whose CRD changed leaves the installed CRD as
it was (Helm never upgrades `crds/`), and the documented `kubectl apply --server-side
--force-conflicts` of the new chart's `crds/` brings it up to date, still Established."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import helm_python as helm
import pytest
import yaml

from kubesim.process import SimProcess, start_sim
from tests.integration.deploy.helpers import CHART, DATA, get_json

pytestmark = [pytest.mark.kubectl, pytest.mark.helm]

NS = "jobset-system"
CRD = "jobsets.jobset.x-k8s.io"


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    s = start_sim(tmp_path_factory.mktemp("crd-upgrade"), "--sim-level", "none")
    s.kubectl("create", "-f", str(DATA / "thirdparty-crds.yaml"))
    yield s
    s.stop()


def _next_chart(tmp: Path) -> Path:
    """The checkout's chart as its next version would be: a CRD with one more short name."""
    chart = tmp / "jobset"
    shutil.copytree(CHART, chart)
    (crd_file,) = (chart / "crds").glob("*.yaml")
    docs = [d for d in yaml.safe_load_all(crd_file.read_text()) if d]
    docs[0]["spec"]["names"]["shortNames"] = ["jsupgr"]
    # and a changed value of a field Helm set (hence --force-conflicts)
    schema = docs[0]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["description"] = "JobSet, next version."
    crd_file.write_text(yaml.safe_dump_all(docs))
    meta = chart / "Chart.yaml"
    chart_meta = yaml.safe_load(meta.read_text())
    chart_meta["version"] = "99.0.0"
    meta.write_text(yaml.safe_dump(chart_meta))
    return chart


def test_helm_leaves_the_crd_and_server_side_apply_upgrades_it(
    sim: SimProcess, tmp_path: Path
) -> None:
    cfg = helm.Config(kubeconfig_path=str(sim.kubeconfig), namespace=NS)
    cfg.install(CHART, "jobset", namespace=NS, create_namespace=True, timeout=120)
    try:
        before = get_json(sim, "crd", CRD)
        assert "shortNames" not in before["spec"]["names"]
        nxt = _next_chart(tmp_path)
        upgraded = cfg.upgrade(nxt, "jobset", namespace=NS, timeout=120)
        assert upgraded["revision"] == 2 and upgraded["status"] == "deployed", upgraded.keys()
        # Helm did not touch the CRD.
        after_helm = get_json(sim, "crd", CRD)
        assert after_helm["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
        assert "shortNames" not in after_helm["spec"]["names"]
        # The documented step does.
        out = sim.kubectl(
            "apply", "--server-side", "--force-conflicts", "-f", str(nxt / "crds"), timeout=120
        )
        assert (
            f"customresourcedefinition.apiextensions.k8s.io/{CRD} serverside-applied" in out.stdout
        )
        sim.kubectl("wait", "--for=condition=Established", f"crd/{CRD}")
        upgraded_crd = get_json(sim, "crd", CRD)
        assert upgraded_crd["spec"]["names"]["shortNames"] == ["jsupgr"]
        schema = upgraded_crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        assert schema["description"] == "JobSet, next version."
    finally:
        cfg.uninstall("jobset", timeout=120)
