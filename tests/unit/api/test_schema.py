"""The CRD schema's rules as the API server applies them (`jobset.api.schema`), on the
package's own JobSet CRD and on small schemas for the keywords it does not use."""

from __future__ import annotations

from typing import Any

from jobset.api.schema import schema_errors, strict_decoding_message, unknown_fields
from jobset.sdk import leader_workers
from jobset.sdk.validation import jobset_schema


def _lw() -> dict[str, Any]:
    return leader_workers("lw", image="busybox", workers=2).to_dict()


def test_the_examples_shape_passes_and_wrong_values_are_worded_as_kube_openapi() -> None:
    js = _lw()
    assert schema_errors(js, jobset_schema()) == []
    assert unknown_fields(js, jobset_schema()) == []
    js["spec"]["replicatedJobs"][0]["replicas"] = "two"
    js["spec"]["suspend"] = None
    texts = [str(e) for e in schema_errors(js, jobset_schema())]
    assert texts == [
        'spec.replicatedJobs[0].replicas: Invalid value: "string": '
        'spec.replicatedJobs[0].replicas in body must be of type integer: "string"',
        'spec.suspend: Invalid value: "null": spec.suspend in body must be of type boolean: "null"',
    ]


def test_unknown_fields_anywhere_but_metadata_and_open_maps() -> None:
    js = _lw()
    js["spec"]["replicatedJobs"][1]["replcas"] = 3
    js["spec"]["faillurePolicy"] = {}
    js["metadata"]["whatever"] = 1  # ObjectMeta: the API server's own check
    js["spec"]["replicatedJobs"][0]["template"]["metadata"] = {"labels": {"a": "b"}}
    js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["nodeSelector"] = {
        "any": "key"
    }
    js["status"] = {"bogus": 1}
    paths = unknown_fields(js, jobset_schema())
    assert paths == ["spec.replicatedJobs[1].replcas", "spec.faillurePolicy", "status.bogus"]
    assert strict_decoding_message(paths[:2]) == (
        'strict decoding error: unknown field "spec.replicatedJobs[1].replcas", '
        'unknown field "spec.faillurePolicy"'
    )


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string", "minLength": 2, "maxLength": 4, "pattern": "^[a-z]+$"},
                "port": {"x-kubernetes-int-or-string": True},
                "ratio": {"type": "number", "maximum": 1},
                "tags": {"type": "array", "maxItems": 1, "minItems": 1, "items": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "pod": {"type": "object", "x-kubernetes-embedded-resource": True,
                        "properties": {"spec": {"type": "object"}}},
            },
        }
    },
}  # fmt: skip


def test_every_keyword_the_walk_knows() -> None:
    good = {"spec": {"name": "ab", "port": "http", "ratio": 1, "tags": ["a"],
                     "free": {"x": {"y": 1}}, "pod": {"kind": "Pod", "spec": {}}}}  # fmt: skip
    assert schema_errors(good, SCHEMA) == [] and unknown_fields(good, SCHEMA) == []
    bad = {"spec": {"name": "ABCDE", "port": True, "ratio": 1.5, "tags": [], "pod": {"x": 1}}}
    texts = [str(e) for e in schema_errors(bad, SCHEMA)]
    assert texts == [
        "spec.name: Too long: may not be more than 4 bytes",
        "spec.name: Invalid value: \"ABCDE\": spec.name in body should match '^[a-z]+$'",
        'spec.port: Invalid value: "boolean": spec.port in body must be of type '
        'integer,string: "boolean"',
        "spec.ratio: Invalid value: 1.5: spec.ratio in body should be less than or equal to 1",
        "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items",
    ]
    assert unknown_fields(bad, SCHEMA) == ["spec.pod.x"]
    assert [str(e) for e in schema_errors({"spec": {}}, SCHEMA)] == ["spec.name: Required value"]
    many = {"spec": {"name": "a", "tags": ["a", "b"]}}
    assert [str(e) for e in schema_errors(many, SCHEMA)] == [
        'spec.name: Invalid value: "a": spec.name in body should be at least 2 chars long',
        "spec.tags: Too many: 2: must have at most 1 item",
    ]
