"""Unknown fields of built-in types dropped as decoding into their Go types drops them:
from the same table strict validation reads, so what is dropped is what Strict refuses;
free-keyed maps (labels, annotations, a ConfigMap's data) keep every key."""

from __future__ import annotations

import copy
import json
from typing import Any

from kubesim.machinery.schema.strict import (
    builtin_model,
    prune_field,
    prune_typed,
    typed_unknown_fields,
)


def _pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "labels": {"app": "x", "typo": "kept: a label's key is free"},
            "annotations": {"example.com/replcas": "2"},
        },
        "spec": {
            "containers": [
                {"name": "a", "image": "busybox", "imagePullPolicy": "Never"},
                {"name": "b", "image": "busybox", "env": [{"name": "E", "value": "1"}]},
            ],
            "nodeSelector": {"disk": "ssd"},
        },
        "status": {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False"}]},
    }


def test_an_object_without_unknown_fields_is_returned_itself() -> None:
    pod = _pod()
    before = copy.deepcopy(pod)
    assert prune_typed(pod, "V1Pod") is pod
    assert pod == before


def test_unknown_fields_are_dropped_at_every_depth_and_map_keys_kept() -> None:
    pod = _pod()
    typoed = copy.deepcopy(pod)
    typoed["spec"]["replcas"] = 2
    typoed["metadata"]["unknownMeta"] = "x"
    typoed["spec"]["containers"][1]["imagePulPolicy"] = "Always"
    typoed["spec"]["containers"][1]["env"][0]["valeu"] = "2"
    typoed["status"]["conditions"][0]["reasn"] = "r"
    sent = copy.deepcopy(typoed)
    out = prune_typed(typoed, "V1Pod")
    assert out == pod
    assert typoed == sent  # the body itself is not edited
    assert out["spec"]["containers"][0] is typoed["spec"]["containers"][0]  # untouched kept


def test_what_is_dropped_is_what_strict_validation_reports() -> None:
    """Agreement with Strict: every path it reports is gone, and nothing else is."""
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "labels": {"app": "nginx"}, "unknownMeta": "v"},
        "spec": {
            "unknown1": "v",
            "paused": True,
            "selector": {"matchLabels": {"app": "nginx"}, "matchLabls": {}},
            "template": {
                "metadata": {"labels": {"app": "nginx"}, "annotatons": {}},
                "spec": {
                    "containers": [{"name": "n", "image": "nginx", "unknownNested": "v"}],
                    "volumes": [{"name": "v", "configMap": {"name": "c", "itmes": []}}],
                },
            },
        },
    }
    model = builtin_model("apps", "v1", "Deployment")
    assert model is not None
    reported = typed_unknown_fields(deployment, model)
    assert sorted(reported) == [
        "metadata.unknownMeta",
        "spec.selector.matchLabls",
        "spec.template.metadata.annotatons",
        "spec.template.spec.containers[0].unknownNested",
        "spec.template.spec.volumes[0].configMap.itmes",
        "spec.unknown1",
    ]
    out = prune_typed(deployment, model)
    assert typed_unknown_fields(out, model) == []
    assert _leaves(deployment) - _leaves(out) == {
        p for p in _leaves(deployment) if _under(p, reported)
    }


def _leaves(value: Any, path: str = "") -> set[str]:
    if isinstance(value, dict) and value:
        return set().union(*(_leaves(v, f"{path}.{k}" if path else k) for k, v in value.items()))
    if isinstance(value, list) and value:
        return set().union(*(_leaves(v, f"{path}[{i}]") for i, v in enumerate(value)))
    return {f"{path}={json.dumps(value)}"}


def _under(leaf: str, paths: list[str]) -> bool:
    return any(leaf.startswith(p + "=") or leaf.startswith(p + ".") for p in paths)


def test_free_form_maps_and_objects_keep_every_key() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
          "data": {"replcas": "1", "spec.typo": "2"}, "binaryData": {"k": "AA=="}}  # fmt: skip
    assert prune_typed(cm, "V1ConfigMap") is cm
    rev = {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "r"},
           "revision": 1, "data": {"anything": {"goes": [1, {"here": True}]}}}  # fmt: skip
    assert prune_typed(rev, "V1ControllerRevision") is rev


def test_a_status_write_is_pruned_in_status_only() -> None:
    pod = _pod()
    pod["spec"]["typo"] = "left: a status write keeps the stored spec, not this one"
    pod["status"]["phsae"] = "Running"
    out = prune_field(pod, "V1Pod", "status")
    assert "phsae" not in out["status"] and out["status"]["phase"] == "Pending"
    assert out["spec"] is pod["spec"]
    clean = _pod()
    assert prune_field(clean, "V1Pod", "status") is clean


def test_values_of_the_wrong_shape_are_left_to_validation() -> None:
    """A list where an object belongs (and the like) is not pruning's business: the
    validation that follows refuses it with its own words."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": [], "spec": {"containers": {"a": 1}}}
    assert prune_typed(pod, "V1Pod") is pod
