"""Rendering the chart with Helm's own engine (helm-python-sdk), offline."""

from __future__ import annotations

from typing import Any

import helm_python as helm
import yaml

from tests.integration.deploy.helpers import CHART

RELEASE = "jobset"
NAMESPACE = "jobset-system"


def render(values: dict[str, Any] | None = None, *, namespace: str = NAMESPACE) -> dict[str, str]:
    """Template path → rendered text, as `helm template` gives it."""
    chart = helm.Chart.load(str(CHART))
    return chart.render(values, name=RELEASE, namespace=namespace, is_install=True)


def objects(
    values: dict[str, Any] | None = None, *, namespace: str = NAMESPACE
) -> list[dict[str, Any]]:
    """The rendered Kubernetes objects (NOTES.txt excluded)."""
    out: list[dict[str, Any]] = []
    for path, text in sorted(render(values, namespace=namespace).items()):
        if path.endswith("NOTES.txt"):
            continue
        out.extend(d for d in yaml.safe_load_all(text) if d)
    return out


def by_kind(objs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objs if o["kind"] == kind}


def one(objs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = by_kind(objs, kind)
    assert name in found, f"no {kind} {name} among {sorted(found)}"
    return found[name]


def notes(values: dict[str, Any] | None = None) -> str:
    return next(t for p, t in render(values).items() if p.endswith("NOTES.txt"))
