"""Unknown and duplicate fields as kube-apiserver's strict decoding reports them: the bodies
and expected texts are upstream's (test/integration/apiserver/field_validation_test.go,
`post-strict-validation` and the schema CRD's cases); and the built-in field table is the
one tools/gen_builtin_fields.py generates."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

from kubesim.machinery.schema import compile_schema
from kubesim.machinery.schema.strict import (
    builtin_model,
    duplicate_fields,
    load_pairs,
    pairs_to_json,
    schema_unknown_fields,
    typed_problems,
    typed_unknown_fields,
)

REPO = Path(__file__).resolve().parents[4]

INVALID_DEPLOYMENT = """{
  "apiVersion": "apps/v1", "kind": "Deployment",
  "metadata": {"name": "dupename", "name": "x", "labels": {"app": "nginx"},
               "unknownMeta": "metaVal"},
  "spec": {
    "unknown1": "val1", "unknownDupe": "valDupe", "unknownDupe": "valDupe2",
    "paused": true, "paused": false,
    "selector": {"matchLabels": {"app": "nginx"}},
    "template": {"metadata": {"labels": {"app": "nginx"}}, "spec": {"containers": [{
      "name": "nginx", "image": "nginx:latest", "unknownNested": "val1",
      "imagePullPolicy": "Always", "imagePullPolicy": "Never"}]}}}}"""

INVALID_CR = """{
  "apiVersion": "example.com/v1", "kind": "Thing",
  "metadata": {"name": "dupename", "name": "x", "unknownMeta": "metaVal"},
  "spec": {
    "unknown1": "val1", "unknownDupe": "valDupe", "unknownDupe": "valDupe2",
    "knownField1": "val1", "knownField1": "val2",
    "ports": [{"name": "portName", "containerPort": 8080, "protocol": "TCP",
               "hostPort": 8081, "hostPort": 8082, "unknownNested": "val"}],
    "embeddedObj": {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "my-cm", "namespace": "my-ns",
                                 "unknownEmbeddedMeta": "foo"}}}}"""

CR_SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "knownField1": {"type": "string"},
                "embeddedObj": {
                    "x-kubernetes-embedded-resource": True,
                    "type": "object",
                    "properties": {
                        "apiversion": {"type": "string"},
                        "kind": {"type": "string"},
                        "metadata": {"type": "object"},
                    },
                },
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
                    "x-kubernetes-list-type": "map",
                    "items": {
                        "type": "object",
                        "required": ["containerPort", "protocol"],
                        "properties": {
                            "containerPort": {"type": "integer", "format": "int32"},
                            "hostIP": {"type": "string"},
                            "hostPort": {"type": "integer", "format": "int32"},
                            "name": {"type": "string"},
                            "protocol": {"type": "string"},
                        },
                    },
                },
            },
        }
    },
}


def test_post_strict_validation_of_a_built_in_type() -> None:
    model = builtin_model("apps", "v1", "Deployment")
    assert model == "V1Deployment"
    assert ", ".join(typed_problems(load_pairs(INVALID_DEPLOYMENT), model)) == (
        'duplicate field "metadata.name", unknown field "metadata.unknownMeta", unknown field '
        '"spec.unknown1", unknown field "spec.unknownDupe", duplicate field "spec.paused", '
        'unknown field "spec.template.spec.containers[0].unknownNested", duplicate field '
        '"spec.template.spec.containers[0].imagePullPolicy"'
    )


def test_crd_post_strict_validation() -> None:
    tree = load_pairs(INVALID_CR)
    found = [f'duplicate field "{p}"' for p in duplicate_fields(tree)]
    found += [
        f'unknown field "{p}"'
        for p in schema_unknown_fields(pairs_to_json(tree), compile_schema(CR_SCHEMA))
    ]
    assert found == [
        'duplicate field "metadata.name"',
        'duplicate field "spec.unknownDupe"',
        'duplicate field "spec.knownField1"',
        'duplicate field "spec.ports[0].hostPort"',
        'unknown field "metadata.unknownMeta"',
        'unknown field "spec.ports[0].unknownNested"',
        'unknown field "spec.unknown1"',
        'unknown field "spec.unknownDupe"',
        'unknown field "spec.embeddedObj.metadata.unknownEmbeddedMeta"',
    ]


def test_preserve_unknown_fields_keeps_them_known() -> None:
    schema = compile_schema(
        {
            "type": "object",
            "properties": {
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            },
        }
    )
    assert schema_unknown_fields({"spec": {"anything": {"at": "all"}}, "other": 1}, schema) == [
        "other"
    ]


def test_kinds_map_to_their_models_and_free_form_fields_stay_free() -> None:
    assert builtin_model("", "v1", "Pod") == "V1Pod"
    assert builtin_model("events.k8s.io", "v1", "Event") == "EventsV1Event"
    assert builtin_model("example.com", "v1", "Thing") is None
    cm = {"data": {"any-key": "v"}, "binaryData": {}, "metadata": {"labels": {"a": "b"}}}
    assert typed_unknown_fields(cm, "V1ConfigMap") == []
    assert typed_unknown_fields({"spec": {"replcas": 1}}, "V1Deployment") == ["spec.replcas"]


def test_the_committed_field_table_is_current() -> None:
    spec = importlib.util.spec_from_file_location(
        "gen_builtin_fields", REPO / "tools" / "gen_builtin_fields.py"
    )
    assert spec is not None and spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    assert module.main(["--check"]) == 0, "stale: run python tools/gen_builtin_fields.py"
    table = json.loads((REPO / "src/kubesim/machinery/schema/builtin_fields.json").read_text())
    assert table["V1Container"]["imagePullPolicy"] == "str"
