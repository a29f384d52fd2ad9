"""Every kustomization.yaml under config/ says what it is: `apiVersion` and `kind`, a
Kustomization (kustomize.config.k8s.io/v1beta1) or a Component (v1alpha1). kustomize
accepts files without them today and warns or breaks in later versions; a file a user
copies into an overlay should say which of the two it is."""

from __future__ import annotations

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]
KINDS = {
    "Kustomization": "kustomize.config.k8s.io/v1beta1",
    "Component": "kustomize.config.k8s.io/v1alpha1",
}


def test_every_kustomization_has_api_version_and_kind() -> None:
    files = sorted((REPO / "config").rglob("kustomization.yaml"))
    assert len(files) >= 10, files
    wrong = {}
    for path in files:
        doc = yaml.safe_load(path.read_text())
        if KINDS.get(doc.get("kind")) != doc.get("apiVersion"):
            wrong[str(path.relative_to(REPO))] = (doc.get("apiVersion"), doc.get("kind"))
    assert wrong == {}, f"want one of {KINDS}"
