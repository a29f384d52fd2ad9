"""Structural schema handling of the simulated API server: pruning, defaulting, validation, CEL.

The schema below is written by hand after upstream JobSet's CRD (same shapes and the same
`x-kubernetes-validations` rules), plus a few fields that exercise the remaining features.
Expected messages are kube-apiserver's wording.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubesim.machinery.cel import CelError, compile_expression
from kubesim.machinery.errors import Cause
from kubesim.machinery.schema import (
    CompiledSchema,
    SchemaError,
    apply_defaults,
    compile_schema,
    prune,
    validate,
)
from tests import builders

IMMUTABLE = [{"rule": "self == oldSelf", "message": "Value is immutable"}]

# A pod template whose undeclared fields are kept, with one declared (and defaulted) field.
POD_TEMPLATE: dict[str, Any] = {
    "type": "object",
    "x-kubernetes-preserve-unknown-fields": True,
    "properties": {
        "spec": {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "properties": {"restartPolicy": {"type": "string", "default": "Never"}},
        }
    },
}

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "x-kubernetes-validations": [
                {
                    "rule": "!(has(self.startupPolicy) && "
                    "self.startupPolicy.startupPolicyOrder == 'InOrder' && "
                    "self.replicatedJobs.exists(x, has(x.dependsOn)))",
                    "message": "StartupPolicy and DependsOn APIs are mutually exclusive",
                }
            ],
            "properties": {
                "failurePolicy": {
                    "type": "object",
                    "x-kubernetes-validations": IMMUTABLE,
                    "properties": {
                        "maxRestarts": {"type": "integer", "format": "int32", "maximum": 3},
                        "restartStrategy": {
                            "type": "string",
                            "default": "Recreate",
                            "enum": ["Recreate", "BlockingRecreate"],
                        },
                    },
                },
                "startupPolicy": {
                    "type": "object",
                    "required": ["startupPolicyOrder"],
                    "x-kubernetes-validations": IMMUTABLE,
                    "properties": {
                        "startupPolicyOrder": {"type": "string", "enum": ["AnyOrder", "InOrder"]}
                    },
                },
                "replicatedJobs": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "required": ["name", "template"],
                        "properties": {
                            "name": {"type": "string", "minLength": 1, "maxLength": 20},
                            "groupName": {"type": "string", "default": "default"},
                            "replicas": {"type": "integer", "default": 1, "minimum": 0},
                            "dependsOn": {
                                "type": "array",
                                "maxItems": 1,
                                "x-kubernetes-list-type": "map",
                                "x-kubernetes-list-map-keys": ["name"],
                                "x-kubernetes-validations": IMMUTABLE,
                                "items": {
                                    "type": "object",
                                    "required": ["name", "status"],
                                    "properties": {
                                        "name": {"type": "string"},
                                        "status": {
                                            "type": "string",
                                            "enum": ["Ready", "Complete"],
                                        },
                                    },
                                },
                            },
                            "template": {
                                "type": "object",
                                "properties": {
                                    "metadata": {
                                        "type": "object",
                                        "properties": {
                                            "labels": {
                                                "type": "object",
                                                "additionalProperties": {"type": "string"},
                                            }
                                        },
                                    },
                                    "spec": {
                                        "type": "object",
                                        "properties": {
                                            "parallelism": {"type": "integer", "default": 1},
                                            "podFailurePolicy": {
                                                "type": "object",
                                                "properties": {
                                                    "rules": {
                                                        "type": "array",
                                                        "items": {
                                                            "type": "object",
                                                            "properties": {
                                                                "action": {"type": "string"}
                                                            },
                                                        },
                                                    }
                                                },
                                            },
                                            "template": POD_TEMPLATE,
                                        },
                                    },
                                },
                            },
                        },
                    },
                },
                "volumeClaimPolicies": {
                    "type": "array",
                    "x-kubernetes-validations": IMMUTABLE,
                    "items": {
                        "type": "object",
                        "x-kubernetes-validations": [
                            {
                                "rule": "self.templates.all(t, !has(t.metadata.namespace) || "
                                "size(t.metadata.namespace) == 0)",
                                "message": "namespace cannot be set for VolumeClaimPolicies "
                                "templates",
                            }
                        ],
                        "properties": {
                            "templates": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "metadata": {
                                            "type": "object",
                                            "properties": {
                                                "name": {"type": "string"},
                                                "namespace": {"type": "string"},
                                            },
                                        }
                                    },
                                },
                            }
                        },
                    },
                },
                "maxUnavailable": {
                    "x-kubernetes-int-or-string": True,
                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                    "pattern": "^[0-9]+%$",
                },
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
                    "items": {
                        "type": "object",
                        "required": ["containerPort"],
                        "properties": {
                            "containerPort": {"type": "integer"},
                            "protocol": {"type": "string", "default": "TCP"},
                        },
                    },
                },
                "tags": {
                    "type": "array",
                    "x-kubernetes-list-type": "set",
                    "items": {"type": "string"},
                },
                "ratio": {"type": "number", "exclusiveMinimum": True, "minimum": 0},
                "nickname": {"type": "string", "nullable": True},
                "startTime": {"type": "string", "format": "date-time"},
                "embedded": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {
                        "spec": {"type": "object", "properties": {"x": {"type": "string"}}}
                    },
                },
                "extra": {"x-kubernetes-preserve-unknown-fields": True},
            },
        },
        "status": {"type": "object", "properties": {"restarts": {"type": "integer"}}},
    },
}


@pytest.fixture(scope="module")
def schema() -> CompiledSchema:
    return compile_schema(SCHEMA)


SKIPPED_CEL = (
    'Invalid value: "null": some validation rules were not checked because the object was '
    "invalid; correct the existing errors to complete validation"
)


def jobset(**spec: Any) -> dict[str, Any]:
    """A JobSet for the trimmed SCHEMA above: one ReplicatedJob with no pod template."""
    workers = {"name": "workers", "template": {"spec": {"parallelism": 2}}}
    return builders.jobset("js", workers, namespace="default", labels={"app": "x"}, **spec)


def admit(
    obj: dict[str, Any], schema: CompiledSchema, old: dict[str, Any] | None = None
) -> tuple[dict[str, Any], list[Cause]]:
    """The API server's order: prune, default, validate."""
    out = apply_defaults(prune(obj, schema), schema)
    return out, validate(out, schema, old)


def messages(causes: list[Cause]) -> list[tuple[str, str, str]]:
    return [(c.field, c.reason, c.message) for c in causes]


# ----------------------------------------------------------------------------------- pruning


def test_prune_drops_unknown_fields_and_keeps_object_metadata(schema: CompiledSchema) -> None:
    obj = jobset(bogus=1)
    obj["spec"]["replicatedJobs"][0]["unknown"] = {"a": 1}
    obj["topLevelUnknown"] = True
    original = copy.deepcopy(obj)

    pruned = prune(obj, schema)

    assert obj == original  # the input is not mutated
    assert "bogus" not in pruned["spec"]
    assert "unknown" not in pruned["spec"]["replicatedJobs"][0]
    assert "topLevelUnknown" not in pruned
    assert pruned["metadata"] == original["metadata"]  # never pruned: the server owns it
    assert pruned["apiVersion"] == "jobset.x-k8s.io/v1alpha2" and pruned["kind"] == "JobSet"


def test_prune_honours_preserve_unknown_fields_and_additional_properties(
    schema: CompiledSchema,
) -> None:
    pod_template = {
        "metadata": {"labels": {"a": "b"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"},
    }
    obj = jobset(extra={"anything": {"goes": [1, 2]}})
    obj["spec"]["replicatedJobs"][0]["template"] = {
        "metadata": {"labels": {"team": "ml"}, "annotations": {"dropped": "yes"}},
        "spec": {
            "template": pod_template,
            "podFailurePolicy": {"rules": [{"action": "Ignore", "onExitCodes": {}}]},
        },
    }

    pruned = prune(obj, schema)

    template = pruned["spec"]["replicatedJobs"][0]["template"]
    assert template["spec"]["template"] == pod_template  # preserved although undeclared
    assert template["metadata"] == {"labels": {"team": "ml"}}  # annotations undeclared
    assert template["spec"]["podFailurePolicy"]["rules"] == [{"action": "Ignore"}]
    assert pruned["spec"]["extra"] == {"anything": {"goes": [1, 2]}}


def test_prune_keeps_apiversion_kind_metadata_of_embedded_resources(schema: CompiledSchema) -> None:
    embedded = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "labels": {"x": "y"}},
        "spec": {"x": "1", "y": "dropped"},
        "data": {"dropped": "too"},
    }
    pruned = prune(jobset(embedded=embedded), schema)
    assert pruned["spec"]["embedded"] == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "labels": {"x": "y"}},
        "spec": {"x": "1"},
    }


# --------------------------------------------------------------------------------- defaulting


def test_defaults_apply_only_under_existing_parents(schema: CompiledSchema) -> None:
    obj = jobset()
    original = copy.deepcopy(obj)
    out = apply_defaults(prune(obj, schema), schema)

    assert obj == original
    job = out["spec"]["replicatedJobs"][0]
    assert job["replicas"] == 1 and job["groupName"] == "default"
    assert job["template"]["spec"]["parallelism"] == 2  # a given value wins over the default
    # failurePolicy is absent, so its restartStrategy default does not create it
    assert "failurePolicy" not in out["spec"]
    # template.spec.template is absent: no restartPolicy default below it
    assert "template" not in job["template"]["spec"]


def test_defaults_fill_a_present_parent_and_nested_defaults(schema: CompiledSchema) -> None:
    obj = jobset(failurePolicy={"maxRestarts": 2}, ports=[{"containerPort": 80}])
    obj["spec"]["replicatedJobs"][0]["template"] = {"spec": {"template": {"spec": {}}}}
    out = apply_defaults(prune(obj, schema), schema)

    assert out["spec"]["failurePolicy"] == {"maxRestarts": 2, "restartStrategy": "Recreate"}
    job_spec = out["spec"]["replicatedJobs"][0]["template"]["spec"]
    assert job_spec["parallelism"] == 1
    assert job_spec["template"]["spec"]["restartPolicy"] == "Never"
    assert out["spec"]["ports"] == [{"containerPort": 80, "protocol": "TCP"}]


def test_defaulted_object_gets_its_childrens_defaults() -> None:
    compiled = compile_schema(
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "policy": {
                            "type": "object",
                            "default": {},
                            "properties": {
                                "mode": {"type": "string", "default": "Fast"},
                                "limits": {
                                    "type": "object",
                                    "default": {"cpu": 1},
                                    "properties": {
                                        "cpu": {"type": "integer"},
                                        "memory": {"type": "integer", "default": 64},
                                    },
                                },
                            },
                        }
                    },
                }
            },
        }
    )
    out = apply_defaults({"spec": {}}, compiled)
    assert out == {"spec": {"policy": {"mode": "Fast", "limits": {"cpu": 1, "memory": 64}}}}
    assert apply_defaults({}, compiled) == {}  # no spec, nothing below it is defaulted


def test_nulls_in_non_nullable_fields_are_defaulted_or_dropped(schema: CompiledSchema) -> None:
    obj = jobset(failurePolicy={"restartStrategy": None, "maxRestarts": None}, nickname=None)
    out = apply_defaults(prune(obj, schema), schema)
    assert out["spec"]["failurePolicy"] == {"restartStrategy": "Recreate"}
    assert out["spec"]["nickname"] is None  # nullable: kept
    assert validate(out, schema) == []


# -------------------------------------------------------------------------- openapi validation


def test_valid_object_has_no_causes(schema: CompiledSchema) -> None:
    _, causes = admit(jobset(failurePolicy={"maxRestarts": 3}, maxUnavailable="10%"), schema)
    assert causes == []


def test_enum_rejected_with_not_supported(schema: CompiledSchema) -> None:
    _, causes = admit(jobset(failurePolicy={"restartStrategy": "Foo"}), schema)
    assert causes[0] == Cause(
        "FieldValueNotSupported",
        'Unsupported value: "Foo": supported values: "Recreate", "BlockingRecreate"',
        "spec.failurePolicy.restartStrategy",
    )


def test_enum_rejected_inside_list_items(schema: CompiledSchema) -> None:
    obj = jobset()
    obj["spec"]["replicatedJobs"].append(
        {"name": "b", "template": {}, "dependsOn": [{"name": "workers", "status": "Done"}]}
    )
    _, causes = admit(obj, schema)
    assert causes[0].field == "spec.replicatedJobs[1].dependsOn[0].status"
    assert causes[0].message == 'Unsupported value: "Done": supported values: "Ready", "Complete"'


def test_minimum_maximum_and_exclusive_minimum(schema: CompiledSchema) -> None:
    obj = jobset(failurePolicy={"maxRestarts": 4}, ratio=0)
    obj["spec"]["replicatedJobs"][0]["replicas"] = -1
    _, causes = admit(obj, schema)
    assert sorted(messages(causes)) == sorted(
        [
            (
                "spec.failurePolicy.maxRestarts",
                "FieldValueInvalid",
                "Invalid value: 4: spec.failurePolicy.maxRestarts in body should be less than or "
                "equal to 3",
            ),
            (
                "spec.replicatedJobs[0].replicas",
                "FieldValueInvalid",
                "Invalid value: -1: spec.replicatedJobs[0].replicas in body should be greater than "
                "or equal to 0",
            ),
            (
                "spec.ratio",
                "FieldValueInvalid",
                "Invalid value: 0: spec.ratio in body should be greater than 0",
            ),
        ]
    )


def test_required_fields(schema: CompiledSchema) -> None:
    obj = jobset(startupPolicy={})
    obj["spec"]["replicatedJobs"][0] = {"template": {}}
    _, causes = admit(obj, schema)
    required = [(c.field, c.message) for c in causes if c.reason == "FieldValueRequired"]
    assert sorted(required) == [
        ("spec.replicatedJobs[0].name", "Required value"),
        ("spec.startupPolicy.startupPolicyOrder", "Required value"),
    ]


def test_string_lengths_pattern_and_format(schema: CompiledSchema) -> None:
    obj = jobset(maxUnavailable="ten", startTime="yesterday")
    obj["spec"]["replicatedJobs"][0]["name"] = "x" * 21
    _, causes = admit(obj, schema)
    assert sorted(messages(causes)) == sorted(
        [
            ("<nil>", "FieldValueInvalid", SKIPPED_CEL),
            (
                "spec.maxUnavailable",
                "FieldValueInvalid",
                "Invalid value: \"ten\": spec.maxUnavailable in body should match '^[0-9]+%$'",
            ),
            (
                "spec.startTime",
                "FieldValueTypeInvalid",
                'Invalid value: "yesterday": spec.startTime in body must be of type date-time: '
                '"yesterday"',
            ),
            (
                "spec.replicatedJobs[0].name",
                "FieldValueTooLong",
                "Too long: may not be more than 20 bytes",
            ),
        ]
    )
    obj["spec"]["replicatedJobs"][0]["name"] = ""
    _, causes = admit(
        jobset(startTime="2024-05-01T10:00:00Z", replicatedJobs=[{"name": "", "template": {}}]),
        schema,
    )
    assert messages(causes) == [
        (
            "spec.replicatedJobs[0].name",
            "FieldValueInvalid",
            'Invalid value: "": spec.replicatedJobs[0].name in body should be at least 1 chars '
            "long",
        )
    ]


def test_types_integer_number_and_nullable(schema: CompiledSchema) -> None:
    obj = jobset(ratio="1", nickname=None, failurePolicy={"maxRestarts": 1.0})
    obj["spec"]["replicatedJobs"][0]["replicas"] = 1.5
    _, causes = admit(obj, schema)
    assert messages(causes)[:2] == [
        (
            "spec.replicatedJobs[0].replicas",
            "FieldValueTypeInvalid",
            'Invalid value: "number": spec.replicatedJobs[0].replicas in body must be of type '
            'integer: "number"',
        ),
        (
            "spec.ratio",
            "FieldValueTypeInvalid",
            'Invalid value: "string": spec.ratio in body must be of type number: "string"',
        ),
    ]
    # 1.0 is an integer; an integer is a number; null is fine where nullable
    _, causes = admit(jobset(ratio=2, nickname=None, failurePolicy={"maxRestarts": 1.0}), schema)
    assert causes == []


def test_int_or_string(schema: CompiledSchema) -> None:
    assert admit(jobset(maxUnavailable=2), schema)[1] == []
    assert admit(jobset(maxUnavailable="50%"), schema)[1] == []
    causes = admit(jobset(maxUnavailable=True), schema)[1]
    assert causes[0] == Cause(
        "FieldValueTypeInvalid",
        'Invalid value: "boolean": spec.maxUnavailable in body must be of type integer,string: '
        '"boolean"',
        "spec.maxUnavailable",
    )


@pytest.mark.parametrize("value", [2**63, 2**64 - 1, -(2**63) - 1, 10**400, 1e300, 2.0**60])
def test_an_integer_beyond_int64_is_a_number(schema: CompiledSchema, value: float) -> None:
    """Found by the API fuzzer: 2^63 in an integer field overflowed celpy's int64 while the
    CEL rules' values were built (a 500). kube-apiserver has decoded such a number as a
    float64, which is no integer past 2^53: a type error, and the CEL rules are not run."""
    obj = jobset()
    obj["spec"]["replicatedJobs"][0]["replicas"] = value
    _, causes = admit(obj, schema)
    assert causes[0] == Cause(
        "FieldValueTypeInvalid",
        'Invalid value: "number": spec.replicatedJobs[0].replicas in body must be of type '
        'integer: "number"',
        "spec.replicatedJobs[0].replicas",
    )
    for fine in (2**63 - 1, 2.0**53):
        obj["spec"]["replicatedJobs"][0]["replicas"] = fine
        assert admit(obj, schema)[1] == []


def test_list_type_map_duplicate_keys(schema: CompiledSchema) -> None:
    obj = jobset(
        ports=[
            {"containerPort": 80},
            {"containerPort": 80, "protocol": "TCP"},
            {"containerPort": 80, "protocol": "UDP"},
        ]
    )
    obj["spec"]["replicatedJobs"].append({"name": "workers", "template": {}})
    _, causes = admit(obj, schema)
    assert messages(causes) == [
        (
            "spec.replicatedJobs[1]",
            "FieldValueDuplicate",
            'Duplicate value: map[string]interface {}{"name":"workers"}',
        ),
        (
            "spec.ports[1]",
            "FieldValueDuplicate",
            'Duplicate value: map[string]interface {}{"containerPort":80, "protocol":"TCP"}',
        ),
    ]


def test_list_type_set_duplicates(schema: CompiledSchema) -> None:
    _, causes = admit(jobset(tags=["a", "b", "a"]), schema)
    assert causes == [Cause("FieldValueDuplicate", 'Duplicate value: "a"', "spec.tags[2]")]


def test_max_items(schema: CompiledSchema) -> None:
    obj = jobset()
    obj["spec"]["replicatedJobs"].append(
        {
            "name": "b",
            "template": {},
            "dependsOn": [{"name": "workers", "status": "Ready"}, {"name": "x", "status": "Ready"}],
        }
    )
    _, causes = admit(obj, schema)
    assert causes[0] == Cause(
        "FieldValueTooMany",
        "Too many: 2: must have at most 1 item",
        "spec.replicatedJobs[1].dependsOn",
    )


def test_embedded_resource_requires_apiversion_and_kind(schema: CompiledSchema) -> None:
    _, causes = admit(jobset(embedded={"spec": {"x": "1"}}), schema)
    assert messages(causes)[:2] == [
        ("spec.embedded.apiVersion", "FieldValueRequired", "Required value: must not be empty"),
        ("spec.embedded.kind", "FieldValueRequired", "Required value: must not be empty"),
    ]


def test_junctors_one_of_required() -> None:
    compiled = compile_schema(
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
                    "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                }
            },
        }
    )
    assert validate({"spec": {"a": "x"}}, compiled) == []
    causes = validate({"spec": {"a": "x", "b": "y"}}, compiled)
    assert causes == [
        Cause(
            "FieldValueInvalid",
            'Invalid value: "": spec in body must validate one and only one schema (oneOf)',
            "spec",
        )
    ]


# ----------------------------------------------------------------------------------------- CEL


def test_cel_rule_failure_and_blocking_errors_skip_cel(schema: CompiledSchema) -> None:
    obj = jobset(startupPolicy={"startupPolicyOrder": "InOrder"})
    obj["spec"]["replicatedJobs"].append(
        {"name": "b", "template": {}, "dependsOn": [{"name": "workers", "status": "Ready"}]}
    )
    _, causes = admit(obj, schema)
    assert causes == [
        Cause(
            "FieldValueInvalid",
            'Invalid value: "object": StartupPolicy and DependsOn APIs are mutually exclusive',
            "spec",
        )
    ]
    # With a type error elsewhere, kube-apiserver does not run the CEL rules at all.
    obj["spec"]["ratio"] = "high"
    _, causes = admit(obj, schema)
    assert [c.field for c in causes] == ["spec.ratio", "<nil>"]
    assert causes[1].message.startswith(
        'Invalid value: "null": some validation rules were not checked because the object was '
        "invalid"
    )


def test_default_message_is_failed_rule() -> None:
    compiled = compile_schema(
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "x-kubernetes-validations": [{"rule": "self.min <= self.max"}],
                    "properties": {"min": {"type": "integer"}, "max": {"type": "integer"}},
                }
            },
        }
    )
    assert validate({"spec": {"min": 1, "max": 2}}, compiled) == []
    assert validate({"spec": {"min": 3, "max": 2}}, compiled) == [
        Cause(
            "FieldValueInvalid",
            'Invalid value: "object": failed rule: self.min <= self.max',
            "spec",
        )
    ]
    # an absent field is an evaluation error, reported with the rule
    assert validate({"spec": {"min": 3}}, compiled) == [
        Cause(
            "FieldValueInvalid",
            'Invalid value: "object": no such key: max evaluating rule: self.min <= self.max',
            "spec",
        )
    ]


def test_transition_rule_immutability(schema: CompiledSchema) -> None:
    created, causes = admit(jobset(failurePolicy={"maxRestarts": 1}), schema)
    assert causes == []  # no old object: transition rules are not evaluated

    _, causes = admit(copy.deepcopy(created), schema, old=created)
    assert causes == []

    changed = copy.deepcopy(created)
    changed["spec"]["failurePolicy"]["maxRestarts"] = 2
    _, causes = admit(changed, schema, old=created)
    assert causes == [
        Cause(
            "FieldValueInvalid", 'Invalid value: "object": Value is immutable', "spec.failurePolicy"
        )
    ]

    # Adding the field where the old object had none is not a transition either.
    added = copy.deepcopy(created)
    added["spec"]["startupPolicy"] = {"startupPolicyOrder": "AnyOrder"}
    assert admit(added, schema, old=created)[1] == []


def test_transition_rule_correlates_map_list_items_by_key(schema: CompiledSchema) -> None:
    obj = jobset()
    obj["spec"]["replicatedJobs"].append(
        {"name": "b", "template": {}, "dependsOn": [{"name": "workers", "status": "Ready"}]}
    )
    old, causes = admit(obj, schema)
    assert causes == []

    reordered = copy.deepcopy(old)
    reordered["spec"]["replicatedJobs"].reverse()  # same items, matched by name
    assert admit(reordered, schema, old=old)[1] == []

    changed = copy.deepcopy(reordered)
    changed["spec"]["replicatedJobs"][0]["dependsOn"][0]["status"] = "Complete"
    _, causes = admit(changed, schema, old=old)
    assert causes == [
        Cause(
            "FieldValueInvalid",
            'Invalid value: "array": Value is immutable',
            "spec.replicatedJobs[0].dependsOn",
        )
    ]


def test_rule_with_reserved_word_property(schema: CompiledSchema) -> None:
    claims = [
        {"templates": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b", "namespace": ""}}]}
    ]
    assert admit(jobset(volumeClaimPolicies=claims), schema)[1] == []
    claims[0]["templates"].append({"metadata": {"name": "c", "namespace": "other"}})
    _, causes = admit(jobset(volumeClaimPolicies=claims), schema)
    assert causes == [
        Cause(
            "FieldValueInvalid",
            'Invalid value: "object": namespace cannot be set for VolumeClaimPolicies templates',
            "spec.volumeClaimPolicies[0]",
        )
    ]


def rule_schema(rules: list[dict[str, Any]], **extra: Any) -> CompiledSchema:
    return compile_schema(
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "x-kubernetes-validations": rules,
                    "properties": {
                        "replicas": {"type": "integer"},
                        "max": {"type": "integer"},
                        "names": {"type": "array", "items": {"type": "string"}},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "my-field": {"type": "string"},
                        **extra,
                    },
                }
            },
        }
    )


def test_message_expression() -> None:
    compiled = rule_schema(
        [
            {
                "rule": "self.replicas <= self.max",
                "messageExpression": "'replicas ' + string(self.replicas) + ' exceeds ' + "
                "string(self.max)",
            }
        ]
    )
    assert validate({"spec": {"replicas": 5, "max": 3}}, compiled) == [
        Cause("FieldValueInvalid", 'Invalid value: "object": replicas 5 exceeds 3', "spec")
    ]


def test_reason_and_field_path() -> None:
    compiled = rule_schema(
        [
            {
                "rule": "self.replicas <= self.max",
                "message": "too many replicas",
                "reason": "FieldValueForbidden",
                "fieldPath": ".replicas",
            },
            {
                "rule": "has(self.names)",
                "message": "names are required",
                "reason": "FieldValueRequired",
                "fieldPath": ".names",
            },
            {
                "rule": "!('bad' in self.labels)",
                "reason": "FieldValueDuplicate",
                "fieldPath": ".labels['bad']",
            },
        ],
        names={"type": "array", "items": {"type": "string"}},
    )
    causes = validate({"spec": {"replicas": 5, "max": 3, "labels": {"bad": "1"}}}, compiled)
    assert causes == [
        Cause("FieldValueForbidden", "Forbidden: too many replicas", "spec.replicas"),
        Cause("FieldValueRequired", "Required value: names are required", "spec.names"),
        Cause("FieldValueDuplicate", 'Duplicate value: "object"', "spec.labels[bad]"),
    ]


def test_optional_old_self() -> None:
    compiled = rule_schema(
        [
            {
                "rule": "!oldSelf.hasValue() || self.replicas >= oldSelf.value().replicas",
                "message": "replicas may not decrease",
                "optionalOldSelf": True,
            },
            {
                "rule": "oldSelf.hasValue() || self.replicas == 1",
                "message": "must start with one replica",
                "optionalOldSelf": True,
            },
        ]
    )
    assert validate({"spec": {"replicas": 2}}, compiled) == [
        Cause("FieldValueInvalid", 'Invalid value: "object": must start with one replica', "spec")
    ]
    old = {"spec": {"replicas": 3}}
    assert validate({"spec": {"replicas": 4}}, compiled, old) == []
    assert validate({"spec": {"replicas": 2}}, compiled, old)[0].message.endswith(
        "replicas may not decrease"
    )


def test_escaped_property_names_and_map_values() -> None:
    compiled = rule_schema(
        [
            {"rule": "self.my__dash__field.startsWith('ok')"},
            {"rule": "self.labels.all(k, k.lowerAscii() == k && self.labels[k].size() < 5)"},
        ]
    )
    assert validate({"spec": {"my-field": "ok!", "labels": {"a": "b"}}}, compiled) == []
    causes = validate({"spec": {"my-field": "no", "labels": {"A": "b"}}}, compiled)
    assert [c.message for c in causes] == [
        "Invalid value: \"object\": failed rule: self.my__dash__field.startsWith('ok')",
        'Invalid value: "object": failed rule: self.labels.all(k, k.lowerAscii() == k && '
        "self.labels[k].size() < 5)",
    ]


def test_ratcheting_ignores_unchanged_invalid_values(schema: CompiledSchema) -> None:
    old = jobset(failurePolicy={"maxRestarts": 10})  # stored before maximum: 3 was added
    old = apply_defaults(prune(old, schema), schema)
    assert validate(old, schema) != []

    status_update = copy.deepcopy(old)
    status_update["status"] = {"restarts": 1}
    assert validate(status_update, schema, old) == []

    changed = copy.deepcopy(old)
    changed["spec"]["ratio"] = 0.5
    assert validate(changed, schema, old) == []  # the invalid part did not change

    edited = copy.deepcopy(old)
    edited["spec"]["failurePolicy"]["maxRestarts"] = 11
    fields = [c.field for c in validate(edited, schema, old)]
    assert fields == ["spec.failurePolicy.maxRestarts", "spec.failurePolicy"]


# ------------------------------------------------------------------------------- compilation


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            {"type": "object", "properties": {"spec": {"properties": {}}}},
            "openAPIV3Schema.properties[spec].type: Required value: must not be empty for "
            "specified object fields",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "array"}}},
            "openAPIV3Schema.properties[a].items: Required value: must be specified",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "strin"}}},
            'openAPIV3Schema.properties[a].type: Unsupported value: "strin"',
        ),
        (
            {
                "type": "object",
                "properties": {
                    "a": {
                        "type": "string",
                        "x-kubernetes-validations": [{"rule": "self.size( > 1"}],
                    }
                },
            },
            "openAPIV3Schema.properties[a].x-kubernetes-validations[0].rule: Invalid value: "
            '"self.size( > 1": compilation failed',
        ),
        (
            {
                "type": "object",
                "properties": {
                    "a": {"type": "string", "x-kubernetes-validations": [{"rule": "self.bogus()"}]}
                },
            },
            "undeclared reference to 'bogus'",
        ),
        (
            {
                "type": "object",
                "properties": {
                    "a": {
                        "type": "array",
                        "items": {
                            "type": "string",
                            "x-kubernetes-validations": [{"rule": "self == oldSelf"}],
                        },
                    }
                },
            },
            "oldSelf cannot be used on the uncorrelatable portion of the schema within "
            "openAPIV3Schema.properties[a].items",
        ),
        (
            {
                "type": "object",
                "properties": {
                    "a": {
                        "type": "string",
                        "x-kubernetes-validations": [{"rule": "true", "reason": "Nope"}],
                    }
                },
            },
            'reason: Unsupported value: "Nope"',
        ),
        (
            {"type": "object", "properties": {"a": {"type": "string", "pattern": "(unclosed"}}},
            "openAPIV3Schema.properties[a].pattern: Invalid value",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "integer", "default": "one"}}},
            'openAPIV3Schema.properties[a].default: Invalid value: "string"',
        ),
        (
            {
                "type": "object",
                "properties": {
                    "a": {"type": "array", "uniqueItems": True, "items": {"type": "string"}}
                },
            },
            "uniqueItems cannot be set to true",
        ),
    ],
    ids=[
        "openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields",
        "openAPIV3Schema.properties[a].items: Required value: must be specified",
        'openAPIV3Schema.properties[a].type: Unsupported value: "strin"',
        'openAPIV3Schema.properties[a].x-kubernetes-validations[0].rule: Invalid value: "self.size( > 1": compilation failed',
        "undeclared reference to 'bogus'",
        "oldSelf cannot be used on the uncorrelatable portion of the schema within openAPIV3Schema.properties[a].items",
        'reason: Unsupported value: "Nope"',
        "openAPIV3Schema.properties[a].pattern: Invalid value",
        'openAPIV3Schema.properties[a].default: Invalid value: "string"',
        "uniqueItems cannot be set to true",
    ],
)
def test_compile_rejects_invalid_schemas(raw: dict[str, Any], expected: str) -> None:
    with pytest.raises(SchemaError) as info:
        compile_schema(raw)
    assert isinstance(info.value, ValueError)
    assert expected in str(info.value)


def test_compile_accepts_the_int_or_string_idiom_and_list_map_keys(schema: CompiledSchema) -> None:
    assert schema.root.properties is not None
    assert "spec" in schema.root.properties


# ------------------------------------------------------------------------------ CEL library


@pytest.mark.parametrize(
    "expression",
    [
        "[1, 2, 3].isSorted() && ![3, 1].isSorted()",
        "[1, 2, 3].sum() == 6 && [1, 5, 3].max() == 5 && [4, 2].min() == 2",
        "['a', 'b'].indexOf('b') == 1 && ['a', 'b', 'a'].lastIndexOf('a') == 2",
        "'Hello'.lowerAscii() == 'hello' && 'Hello'.upperAscii() == 'HELLO'",
        "'hello'.indexOf('l') == 2 && 'hello'.lastIndexOf('l') == 3 && 'hello'.charAt(1) == 'e'",
        "'a,b,c'.split(',') == ['a', 'b', 'c'] && ['a', 'b'].join('-') == 'a-b'",
        "'  x '.trim() == 'x' && 'hello'.substring(1, 3) == 'el'",
        "'aaa'.replace('a', 'b', 2) == 'bba'",
        "'abc123def'.find('[0-9]+') == '123' && 'a1b22'.findAll('[0-9]+') == ['1', '22']",
        "'worker-1'.matches('^worker-[0-9]+$')",
        "[1, 2, 3].all(x, x > 0) && [1, 2].exists(x, x == 2) && [1, 2].exists_one(x, x > 1)",
        "[1, 2, 3].map(x, x * 2) == [2, 4, 6] && [1, 2, 3].filter(x, x > 1) == [2, 3]",
        "size('abc') == 3 && size([1]) == 1 && {'a': 1}.size() == 1",
        "has({'a': 1}.a) && !has({'a': 1}.b)",
        "1 == 1.0 && 1 != 'x' && 2 > 1.5",
        "quantity('1Gi').isGreaterThan(quantity('1000Mi'))",
        "quantity('1Gi') == quantity('1024Mi') && quantity('500m').asApproximateFloat() == 0.5",
        "sets.contains([1, 2, 3], [1, 3]) && sets.intersects([1], [1, 2])",
        "sets.equivalent([1, 2], [2, 1])",
        "'%s has %d items'.format(['list', 3]) == 'list has 3 items'",
        "!format.dns1123Label().validate('my-name').hasValue()",
        "format.dns1123Label().validate('My_Name').hasValue()",
        "optional.of(1).orValue(2) == 1 && optional.none().orValue(2) == 2",
        "timestamp('2024-01-01T00:00:00Z') < timestamp('2024-06-01T00:00:00Z')",
        "duration('90s') > duration('1m')",
        "isURL('https://example.com/x') && url('https://example.com:8080/x').getPort() == '8080'",
        "cidr('10.0.0.0/8').containsIP(ip('10.1.2.3')) && isIP('::1') && !isIP('1.2.3')",
        "string(true) == 'true' && int('42') == 42 && type('a') == string",
        "math.greatest(1, 7, 3) == 7 && math.least([4, 2]) == 2",
    ],
)
def test_cel_library_functions(expression: str) -> None:
    result = compile_expression(expression).evaluate({})
    assert isinstance(result, int) and result is not False and result == 1  # a CEL BoolType(True)


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        ("[1][3] == 1", "index out of bounds: 3"),
        ("{'a': 1}.b == 1", "no such key: b"),
        ("has({'a': {}}.b.c)", "no such key: b"),
        ("1 / 0 == 1", "division by zero"),
        ("[].max() == 1", "max called on empty list"),
        ("optional.none().value() == 1", "optional.none() dereference"),
    ],
    ids=[
        "[1][3] == 1",
        "{'a': 1}.b == 1",
        "has({'a': {}}.b.c)",
        "1 / 0 == 1",
        "[].max() == 1",
        "optional.none().value() == 1",
    ],
)
def test_cel_evaluation_errors(expression: str, error: str) -> None:
    with pytest.raises(CelError) as info:
        compile_expression(expression).evaluate({})
    assert info.value.message == error


def test_cel_errors_absorbed_like_cel_go() -> None:
    # `false && error` is false and `true || error` is true, in either order
    assert compile_expression("{'a': 1}.b == 1 && false").evaluate({}) == False  # noqa: E712
    assert compile_expression("{'a': 1}.b == 1 || true").evaluate({}) == True  # noqa: E712


def test_set_and_map_lists_compare_without_order_in_cel() -> None:
    compiled = compile_schema(
        {
            "type": "object",
            "properties": {
                "tags": {
                    "type": "array",
                    "x-kubernetes-list-type": "set",
                    "items": {"type": "string"},
                    "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "frozen"}],
                }
            },
        }
    )
    assert validate({"tags": ["b", "a"]}, compiled, {"tags": ["a", "b"]}) == []
    assert validate({"tags": ["b", "c"]}, compiled, {"tags": ["a", "b"]}) == [
        Cause("FieldValueInvalid", 'Invalid value: "array": frozen', "tags")
    ]


def test_field_path_must_name_an_existing_field() -> None:
    with pytest.raises(SchemaError, match="fieldPath must refer to an existing field"):
        rule_schema([{"rule": "true", "fieldPath": ".nope"}])


def test_patterns_are_re2_so_nested_quantifiers_do_not_backtrack() -> None:
    # Python's `re` takes exponential time on this input; RE2 (as Go's regexp in
    # kube-apiserver) answers in linear time, so the check finishes and reports a mismatch.
    compiled = compile_schema(
        {"type": "object", "properties": {"s": {"type": "string", "pattern": "(a+)+$"}}}
    )
    causes = validate({"s": "a" * 40 + "!"}, compiled)
    assert [(c.field, c.message) for c in causes] == [
        ("s", 'Invalid value: "' + "a" * 40 + "!\": s in body should match '(a+)+$'")
    ]
    assert validate({"s": "a" * 40}, compiled) == []


def test_patterns_use_go_syntax_only() -> None:
    # Lookahead is Python `re` syntax that Go's regexp (and so kube-apiserver) refuses.
    with pytest.raises(SchemaError, match="must be a valid regular expression"):
        compile_schema(
            {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(?=a)a$"}}}
        )
