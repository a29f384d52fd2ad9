"""One version: pyproject.toml's `[project] version` is the source; the installed metadata,
`jobset.__version__`, the chart's `version` and `appVersion` (its default image tag), the
kustomize image tag and every image tag the docs show must all say the same: one source for
the version. The simulator and the shared helpers have versions of their own
(packaging/*/pyproject.toml), which `kubesim.__version__` (the simulator's /version) reports
and the pins between the three distributions name."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path
from typing import Any

import yaml
from packaging.requirements import Requirement

import jobset
import kubesim
from kubeutil.distribution import DISTRIBUTION

REPO = Path(__file__).resolve().parents[3]


def _version() -> str:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION
    assert "version" not in project.get("dynamic", [])
    return str(project["version"])


def _project(name: str) -> dict[str, Any]:
    path = REPO / "packaging" / name / "pyproject.toml"
    return tomllib.loads(path.read_text())["project"]  # type: ignore[no-any-return]


def test_packages_report_the_pyproject_version() -> None:
    version = _version()
    assert importlib.metadata.version(DISTRIBUTION) == version, "stale install: make venv"
    assert jobset.__version__ == version
    simulator = _project("kubesim")
    assert importlib.metadata.version("kubesim") == simulator["version"], "stale: make venv"
    assert kubesim.__version__ == simulator["version"]


def test_the_pins_between_the_distributions_name_their_versions() -> None:
    """jobset-py pins the kubesim and jobset-kubeutil of its tree; kubesim pins that
    jobset-kubeutil too."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    versions = {p["name"]: p["version"] for p in map(_project, ("kubesim", "kubeutil"))}
    reqs = [
        *map(Requirement, project["dependencies"]),
        *map(Requirement, project["optional-dependencies"]["sim"]),
        *map(Requirement, _project("kubesim")["dependencies"]),
    ]
    pins = sorted((r.name, str(r.specifier)) for r in reqs if r.name in versions)
    want = {"kubesim": 1, "jobset-kubeutil": 2}  # jobset-py's two pins, and kubesim's
    assert pins == sorted((n, f"=={versions[n]}") for n, k in want.items() for _ in range(k))


def test_chart_and_kustomize_name_the_same_version() -> None:
    version = _version()
    chart = yaml.safe_load((REPO / "charts" / "jobset" / "Chart.yaml").read_text())
    # Released together (image and chart, docs/operations.md "Releasing"): one number.
    assert chart["version"] == chart["appVersion"] == version, chart
    manager = yaml.safe_load((REPO / "config" / "manager" / "kustomization.yaml").read_text())
    (image,) = manager["images"]
    assert image["newTag"] == version, image


def test_docs_show_the_current_image_tag() -> None:
    version = _version()
    shown: list[tuple[str, str]] = []
    for path in [REPO / "README.md", REPO / "Dockerfile", *sorted((REPO / "docs").glob("*.md"))]:
        for tag in re.findall(r"\bjobset:(\d+\.\d+\.\d+\S*?)[`\s.,)]", path.read_text()):
            shown.append((path.name, tag))
    assert shown, "no doc shows an image tag: the pattern is wrong"
    assert [s for s in shown if s[1] != version] == [], f"the version is {version}"


def test_changelog_has_the_version() -> None:
    assert f"## [{_version()}]" in (REPO / "CHANGELOG.md").read_text()
