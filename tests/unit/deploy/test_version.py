"""One version: pyproject.toml's `[project] version` is the source; the installed metadata,
`jobset.__version__`, `kubesim.__version__` (the simulator's /version), the chart's `version`
and `appVersion` (its default image tag), the kustomize image tag and every image tag the docs
show must all say the same: one source for the version."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

import yaml

import jobset
import kubesim
from kubeutil.distribution import DISTRIBUTION

REPO = Path(__file__).resolve().parents[3]


def _version() -> str:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION
    assert "version" not in project.get("dynamic", [])
    return str(project["version"])


def test_packages_report_the_pyproject_version() -> None:
    version = _version()
    assert importlib.metadata.version(DISTRIBUTION) == version, "stale install: make venv"
    assert jobset.__version__ == kubesim.__version__ == version


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
