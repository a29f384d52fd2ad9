"""`make chart`: the chart packaged by Helm's engine (tools/package_chart.py) is the chart
of the checkout, with its README, schema and CRD; a chart that is not releasable (stale
README, versions that are not the package's) is refused with the reason."""

from __future__ import annotations

import importlib.util
import shutil
import sys
import tarfile
from pathlib import Path
from types import ModuleType

import helm_python as helm
import pytest

import jobset
from kubesim.process import free_port
from tests.integration.deploy import chart
from tests.integration.deploy.helpers import CHART, REPO

pytestmark = [pytest.mark.helm]


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "package_chart", REPO / "tools" / "package_chart.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_package_is_the_checkout_chart(tmp_path: Path) -> None:
    archive = _tool().package(tmp_path / "dist")
    assert archive.name == f"jobset-{jobset.__version__}.tgz"
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
        readme = tar.extractfile("jobset/README.md")
        assert readme is not None and readme.read().decode() == (CHART / "README.md").read_text()
    assert {"jobset/Chart.yaml", "jobset/values.schema.json",
            "jobset/crds/jobset.x-k8s.io_jobsets.yaml"} <= names  # fmt: skip
    # The archive renders exactly what the directory does.
    packaged = helm.Chart.load(str(archive)).render(
        None, name=chart.RELEASE, namespace=chart.NAMESPACE, is_install=True
    )
    assert packaged == chart.render()


def test_unreleasable_chart_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "jobset"
    shutil.copytree(CHART, copy)
    tool = _tool()
    assert tool.problems(copy) == []
    values = copy / "values.yaml"
    values.write_text(
        values.read_text() + "# -- A value nobody documented in README.md.\nextra: 1\n"
    )
    meta = copy / "Chart.yaml"
    meta.write_text(meta.read_text().replace('appVersion: "', 'appVersion: "9'))
    found = tool.problems(copy)
    assert any("README.md is stale: run make chart-docs" in p for p in found), found
    assert any("appVersion 9" in p and "pyproject.toml's" in p for p in found), found
    with pytest.raises(SystemExit, match="not packaged"):
        tool.package(tmp_path / "dist", copy)
    assert not (tmp_path / "dist").exists()


def test_push_needs_an_oci_root_and_reports_a_registry_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No registry runs here: a push to a closed loopback port shows the push is attempted
    through Helm's registry client and fails with one line naming the chart and the target."""
    tool = _tool()
    with pytest.raises(SystemExit) as usage:
        tool.main(["--dest", str(tmp_path / "a"), "--push", "https://registry.example/charts"])
    assert usage.value.code == 2 and "an OCI repository root" in capsys.readouterr().err
    assert not (tmp_path / "a").exists()  # refused before packaging
    target = f"oci://127.0.0.1:{free_port()}/charts"
    with pytest.raises(SystemExit) as failed:
        tool.main(["--dest", str(tmp_path / "b"), "--push", target])
    message = str(failed.value.code)
    assert message.startswith(f"push of jobset-{jobset.__version__}.tgz to {target} failed:")
    assert "connection refused" in message
