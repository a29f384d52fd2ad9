"""The generated CRD carries upstream's schema markers path for path: every `format`,
`x-kubernetes-list-type` and `x-kubernetes-map-type` of upstream's CRD (vendored with its
Apache-2.0 notice in tests/data/upstream/) is at the same path here with the same value,
and there are none upstream lacks. They decide how server-side apply merges a list or map
(atomic: replaced whole; map: merged by key) and what `kubectl explain` shows."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[3]
OURS = REPO / "config" / "crd" / "bases" / "jobset.x-k8s.io_jobsets.yaml"
UPSTREAM = REPO / "tests" / "data" / "upstream" / "jobset.x-k8s.io_jobsets.yaml"
MARKERS = ("format", "x-kubernetes-list-type", "x-kubernetes-map-type")
# Fields of KEPs built ahead of upstream's release, with the markers upstream's Go type gives
# them (KEP-1282: `ExecutionAttempts *int32`).
AHEAD_OF_UPSTREAM = {(".status.executionAttempts", "format"): "int32"}


def _schema(path: Path) -> dict[str, Any]:
    crd = yaml.safe_load(path.read_text())
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def markers(node: Any, path: str = "") -> dict[tuple[str, str], str]:
    """(schema path, marker) -> value over the whole schema; `[]` is a list's items and
    `{}` a map's values."""
    out: dict[tuple[str, str], str] = {}
    if not isinstance(node, dict):
        return out
    for key in MARKERS:
        if key in node:
            out[(path, key)] = node[key]
    for name, sub in (node.get("properties") or {}).items():
        out.update(markers(sub, f"{path}.{name}"))
    out.update(markers(node.get("items"), f"{path}[]"))
    out.update(markers(node.get("additionalProperties"), f"{path}{{}}"))
    return out


def test_the_walk_finds_markers_where_they_are() -> None:
    schema = {
        "properties": {
            "a": {"type": "integer", "format": "int32"},
            "b": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {"format": "byte"}},
            "c": {"additionalProperties": {"x-kubernetes-map-type": "atomic"}},
        }
    }
    assert markers(schema) == {
        (".a", "format"): "int32",
        (".b", "x-kubernetes-list-type"): "atomic",
        (".b[]", "format"): "byte",
        (".c{}", "x-kubernetes-map-type"): "atomic",
    }


def test_every_upstream_marker_is_here_with_the_same_value() -> None:
    upstream, ours = markers(_schema(UPSTREAM)), markers(_schema(OURS))
    # What the issue counted as missing inside the embedded templates, and more: all of them.
    assert Counter(key for _, key in upstream) == {
        "x-kubernetes-list-type": 170,
        "format": 140,
        "x-kubernetes-map-type": 57,
    }
    missing = {k: v for k, v in upstream.items() if ours.get(k) != v}
    assert not missing, sorted(missing.items())[:20]
    extra = sorted(k for k in ours if k not in upstream and k not in AHEAD_OF_UPSTREAM)
    assert not extra, extra[:20]
    assert {k: ours.get(k) for k in AHEAD_OF_UPSTREAM} == AHEAD_OF_UPSTREAM
