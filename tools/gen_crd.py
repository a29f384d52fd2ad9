#!/usr/bin/env python3
"""Generate the JobSet CustomResourceDefinition (config/crd/bases/jobset.x-k8s.io_jobsets.yaml).

Why a generator: the CRD's schema is ~10k lines, most of it the batch/v1 JobTemplateSpec a
ReplicatedJob embeds (JobSpec → PodTemplateSpec → PodSpec → Container → ...). Written by
hand it would drift from Kubernetes; so the JobSet-specific part is described here in
Python, and every Kubernetes type is derived from the model classes of `kubernetes_asyncio`
(each has `openapi_types`, `attribute_map`, a docstring per property, and setters that
reject None for required fields). A unit test regenerates the YAML and compares it with the
committed file, so the two cannot drift.

What the models cannot tell, and comes from small tables below (facts of the Kubernetes
API, as its Go markers state them): which strings are resource quantities, which lists are
maps keyed by which fields, and the few `+default` values of core/v1. The `format`
(int32/int64, byte, ...), `x-kubernetes-list-type` and `x-kubernetes-map-type` markers of
the Kubernetes types (what server-side apply merges by and `kubectl explain` shows) come
from `tools/k8s_markers.json`, a table by model class and field. The Python models do not
carry them, and controller-gen writes them from the Go types' markers into upstream's CRD;
the table is derived from that CRD (vendored with its Apache-2.0 notice under tests/data/
upstream/), so the two schemas carry the same markers at the same paths:

    python tools/gen_crd.py --derive-markers tests/data/upstream/jobset.x-k8s.io_jobsets.yaml

Usage:
    python tools/gen_crd.py            # rewrite the CRD file
    python tools/gen_crd.py --derive-markers UPSTREAM_CRD   # rewrite tools/k8s_markers.json
    python tools/gen_crd.py --check    # exit 1 if the committed file is stale
    python tools/gen_crd.py --stdout   # print it
"""

from __future__ import annotations

import argparse
import copy
import importlib.metadata
import inspect
import json
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio.client import models

Schema = dict[str, Any]

REPO = Path(__file__).resolve().parent.parent
OUTPUT = REPO / "config" / "crd" / "bases" / "jobset.x-k8s.io_jobsets.yaml"
MARKERS_FILE = REPO / "tools" / "k8s_markers.json"

GROUP = "jobset.x-k8s.io"
VERSION = "v1alpha2"
KIND = "JobSet"
PLURAL = "jobsets"

# ================================================================================================
# Kubernetes types, derived from kubernetes_asyncio's models

# Fields typed `resource.Quantity` in Go (the Python client types them as plain strings).
QUANTITY_FIELDS: frozenset[tuple[str, str]] = frozenset(
    {
        ("V1ResourceRequirements", "limits"),
        ("V1ResourceRequirements", "requests"),
        ("V1VolumeResourceRequirements", "limits"),
        ("V1VolumeResourceRequirements", "requests"),
        ("V1EmptyDirVolumeSource", "size_limit"),
        ("V1PodSpec", "overhead"),
        ("V1ResourceFieldSelector", "divisor"),
        ("V1PersistentVolumeClaimStatus", "capacity"),
        ("V1PersistentVolumeClaimStatus", "allocated_resources"),
    }
)

# Lists Kubernetes declares `+listType=map`, with their keys (the basis of server-side
# apply merges and of CEL's view of the list).
LIST_MAP_KEYS: dict[tuple[str, str], tuple[str, ...]] = {
    ("V1PodSpec", "containers"): ("name",),
    ("V1PodSpec", "init_containers"): ("name",),
    ("V1PodSpec", "ephemeral_containers"): ("name",),
    ("V1PodSpec", "volumes"): ("name",),
    ("V1PodSpec", "image_pull_secrets"): ("name",),
    ("V1PodSpec", "host_aliases"): ("ip",),
    ("V1PodSpec", "resource_claims"): ("name",),
    ("V1PodSpec", "scheduling_gates"): ("name",),
    ("V1PodSpec", "topology_spread_constraints"): ("topologyKey", "whenUnsatisfiable"),
    ("V1Container", "env"): ("name",),
    ("V1Container", "ports"): ("containerPort", "protocol"),
    ("V1Container", "volume_devices"): ("devicePath",),
    ("V1Container", "volume_mounts"): ("mountPath",),
    ("V1EphemeralContainer", "env"): ("name",),
    ("V1EphemeralContainer", "ports"): ("containerPort", "protocol"),
    ("V1EphemeralContainer", "volume_devices"): ("devicePath",),
    ("V1EphemeralContainer", "volume_mounts"): ("mountPath",),
    ("V1ResourceRequirements", "claims"): ("name",),
    ("V1PersistentVolumeClaimStatus", "conditions"): ("type",),
}

# Lists Kubernetes declares `+listType=set` (unique scalars, merged as sets).
LIST_SETS: frozenset[tuple[str, str]] = frozenset(
    {
        ("V1PodFailurePolicyOnExitCodesRequirement", "values"),
        ("V1ContainerRestartRuleOnExitCodes", "values"),
    }
)

# `+default` markers of core/v1 (a list-map key must be required or defaulted, so the port
# protocol default is structural, not cosmetic).
FIELD_DEFAULTS: dict[tuple[str, str], Any] = {
    ("V1ContainerPort", "protocol"): "TCP",
    ("V1GRPCAction", "service"): "",
    ("V1RBDVolumeSource", "keyring"): "/etc/ceph/keyring",
    ("V1RBDVolumeSource", "pool"): "rbd",
    ("V1RBDVolumeSource", "user"): "admin",
    ("V1ISCSIVolumeSource", "iscsi_interface"): "default",
    ("V1ScaleIOVolumeSource", "fs_type"): "xfs",
    ("V1ScaleIOVolumeSource", "storage_mode"): "ThinProvisioned",
    ("V1AzureDiskVolumeSource", "fs_type"): "ext4",
    ("V1AzureDiskVolumeSource", "read_only"): False,
    ("V1FileKeySelector", "optional"): False,
}

# A LocalObjectReference's name defaults to "" (it is "effectively required"); the Python
# models flatten embedded references, so such fields are recognised by their description.
_LOCAL_REF_NAME_DOC = "This field is effectively required, but due to backwards compatibility"

# The schema keys `tools/k8s_markers.json` holds.
MARKER_KEYS: tuple[str, ...] = ("format", "x-kubernetes-list-type", "x-kubernetes-map-type")

# {model class: {JSON field: {where: {marker: value}}}}; `where` is "" for the field's own
# schema, else the path below it ("items", "additionalProperties", "items.items").
Markers = dict[str, dict[str, dict[str, dict[str, str]]]]


def load_markers(path: Path = MARKERS_FILE) -> Markers:
    loaded: Markers = json.loads(path.read_text())
    return loaded


QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]"
    r"|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)

_LIST_RE = re.compile(r"^list\[(.+)\]$")
_DICT_RE = re.compile(r"^dict\(str, (.+)\)$")


def quantity_schema() -> Schema:
    """A resource quantity: a number or a string such as `500m` or `2Gi`."""
    return {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "pattern": QUANTITY_PATTERN,
        "x-kubernetes-int-or-string": True,
    }


def int_or_string_schema() -> Schema:
    """A port number or name (IntOrString)."""
    return {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}


def embedded_object_meta(description: str) -> Schema:
    """metadata of an embedded template: the fields a template may meaningfully set.

    Without declared properties, the API server would prune the template's labels and
    annotations on write.
    """
    string_map = {"type": "object", "additionalProperties": {"type": "string"}}
    return {
        "description": description,
        "type": "object",
        "properties": {
            "annotations": dict(string_map),
            "finalizers": {"type": "array", "items": {"type": "string"}},
            "labels": dict(string_map),
            "name": {"type": "string"},
            "namespace": {"type": "string"},
        },
    }


def _property_description(cls: type, attr: str) -> str:
    """The description paragraph of a model property's docstring."""
    doc = getattr(cls, attr).__doc__ or ""
    lines = [ln.strip() for ln in doc.strip().splitlines()]
    # Docstrings read: "Gets the x of this Y.", blank, description..., blank, ":return: ...".
    body: list[str] = []
    for line in lines[1:]:
        if line.startswith(":return:") or line.startswith(":rtype:"):
            break
        body.append(line)
    text = " ".join(ln for ln in body if ln)
    return text.replace("# noqa: E501", "").strip()


def _is_required(cls: type, attr: str) -> bool:
    """Required fields have setters refusing None (client-side validation)."""
    setter = getattr(cls, attr).fset
    return setter is not None and "must not be `None`" in inspect.getsource(setter)


class KubeSchemas:
    """Builds inline (no $ref) structural schemas of Kubernetes model classes."""

    def __init__(self, markers: Markers | None = None) -> None:
        self._cache: dict[str, Schema] = {}
        self.markers: Markers = load_markers() if markers is None else markers

    def model(self, cls_name: str) -> Schema:
        """The object schema of a model class (without description: the field gives it)."""
        if cls_name in self._cache:
            return copy.deepcopy(self._cache[cls_name])
        cls = getattr(models, cls_name)
        props: Schema = {}
        required: list[str] = []
        for attr, type_str in cls.openapi_types.items():
            json_name = cls.attribute_map[attr]
            prop = self.field(cls_name, attr, type_str)
            desc = _property_description(cls, attr)
            if desc and "description" not in prop:
                prop = {"description": desc, **prop}
            props[json_name] = prop
            if _is_required(cls, attr):
                required.append(json_name)
        schema: Schema = {"type": "object", "properties": props}
        if required:
            schema["required"] = sorted(required)
        self._cache[cls_name] = schema
        return copy.deepcopy(schema)

    def field(self, cls_name: str, attr: str, type_str: str) -> Schema:
        """The schema of one property of a model."""
        key = (cls_name, attr)
        if key in QUANTITY_FIELDS:
            if type_str.startswith("dict("):
                return {"type": "object", "additionalProperties": quantity_schema()}
            return quantity_schema()
        schema = self.type_schema(type_str)
        if type_str == "V1ObjectMeta":
            desc = _property_description(getattr(models, cls_name), attr)
            return embedded_object_meta(desc or "Standard metadata of the created objects.")
        if key in LIST_MAP_KEYS:
            schema["x-kubernetes-list-type"] = "map"
            schema["x-kubernetes-list-map-keys"] = list(LIST_MAP_KEYS[key])
        elif key in LIST_SETS:
            schema["x-kubernetes-list-type"] = "set"
        self._add_markers(cls_name, attr, schema)
        if key in FIELD_DEFAULTS:
            schema["default"] = FIELD_DEFAULTS[key]
        elif (
            attr == "name"
            and type_str == "str"
            and _LOCAL_REF_NAME_DOC in _property_description(getattr(models, cls_name), attr)
        ):
            schema["default"] = ""
        return schema

    def _add_markers(self, cls_name: str, attr: str, schema: Schema) -> None:
        json_name = getattr(models, cls_name).attribute_map[attr]
        for where, markers in self.markers.get(cls_name, {}).get(json_name, {}).items():
            target = schema
            for step in where.split(".") if where else ():
                target = target[step]
            target.update(markers)

    def type_schema(self, type_str: str) -> Schema:
        """The schema of an OpenAPI-generator type expression (`list[V1Container]`, ...)."""
        if type_str == "str":
            return {"type": "string"}
        if type_str == "int":
            return {"type": "integer"}
        if type_str == "float":
            return {"type": "number"}
        if type_str == "bool":
            return {"type": "boolean"}
        if type_str == "datetime":
            return {"type": "string", "format": "date-time"}
        if type_str == "date":
            return {"type": "string", "format": "date"}
        if type_str == "object":
            # Only IntOrString fields (probe ports) are untyped in the Pod template tree.
            return int_or_string_schema()
        if m := _LIST_RE.match(type_str):
            return {"type": "array", "items": self.type_schema(m.group(1))}
        if m := _DICT_RE.match(type_str):
            return {"type": "object", "additionalProperties": self.type_schema(m.group(1))}
        if type_str == "V1ObjectMeta":
            return embedded_object_meta("Standard metadata of the created objects.")
        if hasattr(models, type_str):
            return self.model(type_str)
        raise ValueError(f"unsupported type expression {type_str!r}")


def derive_markers(upstream_crd: Schema) -> Markers:
    """The markers table from a CRD whose embedded templates controller-gen generated.

    Walks upstream's schema of `replicatedJobs[].template` (V1JobTemplateSpec) and of
    `volumeClaimPolicies[].templates[]` (V1PersistentVolumeClaim) alongside the model
    classes; a field marked differently at two places is an error (the markers belong to
    the Go type's field, not to where it is used).
    """
    root = upstream_crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    spec = root["properties"]["spec"]["properties"]
    table: Markers = {}
    rjob = spec["replicatedJobs"]["items"]["properties"]
    _derive_model(rjob["template"], "V1JobTemplateSpec", table)
    claims = spec["volumeClaimPolicies"]["items"]["properties"]["templates"]["items"]
    _derive_model(claims, "V1PersistentVolumeClaim", table)
    return table


def _derive_model(node: Schema, cls_name: str, table: Markers) -> None:
    cls = getattr(models, cls_name)
    props = node.get("properties") or {}
    for attr, type_str in cls.openapi_types.items():
        json_name = cls.attribute_map[attr]
        if json_name in props:
            _derive_type(props[json_name], type_str, cls_name, json_name, "", table)


def _derive_type(
    node: Schema, type_str: str, cls_name: str, field: str, where: str, table: Markers
) -> None:
    found = {k: node[k] for k in MARKER_KEYS if k in node}
    if found:
        entry = table.setdefault(cls_name, {}).setdefault(field, {})
        if entry.get(where, found) != found:
            raise ValueError(f"{cls_name}.{field} {where}: {entry[where]} and {found}")
        entry[where] = found
    below = f"{where}." if where else ""
    if m := _LIST_RE.match(type_str):
        _derive_type(node.get("items") or {}, m.group(1), cls_name, field, below + "items", table)
    elif m := _DICT_RE.match(type_str):
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            _derive_type(extra, m.group(1), cls_name, field, below + "additionalProperties", table)
    elif type_str != "V1ObjectMeta" and hasattr(models, type_str):
        _derive_model(node, type_str, table)


# ================================================================================================
# The JobSet-specific schema


def string(description: str, **extra: Any) -> Schema:
    return {"description": description, "type": "string", **extra}


def integer(description: str, fmt: str | None = "int32", **extra: Any) -> Schema:
    out: Schema = {"description": description, "type": "integer", **extra}
    if fmt:
        out["format"] = fmt
    return out


def boolean(description: str) -> Schema:
    return {"description": description, "type": "boolean"}


def array(description: str, items: Schema, **extra: Any) -> Schema:
    return {"description": description, "type": "array", "items": items, **extra}


def obj(
    description: str,
    properties: Schema,
    *,
    required: Sequence[str] = (),
    extensions: Schema | None = None,
) -> Schema:
    out: Schema = {"description": description, "type": "object", "properties": properties}
    if required:
        out["required"] = sorted(required)
    out.update(extensions or {})
    return out


def immutable() -> list[Schema]:
    """A CEL transition rule: the field cannot change once set."""
    return [{"rule": "self == oldSelf", "message": "Value is immutable"}]


def atomic_strings(description: str) -> Schema:
    return array(description, {"type": "string"}, **{"x-kubernetes-list-type": "atomic"})


def condition_schema() -> Schema:
    """metav1.Condition with the validations metav1 declares for it."""
    return obj(
        "One observation of the JobSet's state.",
        {
            "lastTransitionTime": string(
                "When the condition last changed status.", format="date-time"
            ),
            "message": string("Human-readable details of the transition.", maxLength=32768),
            "observedGeneration": integer(
                "The .metadata.generation the condition was set for.", "int64", minimum=0
            ),
            "reason": string(
                "CamelCase identifier of the cause of the last transition.",
                maxLength=1024,
                minLength=1,
                pattern="^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
            ),
            "status": string("Status of the condition.", enum=["True", "False", "Unknown"]),
            "type": string(
                "Type of the condition, e.g. Completed, Failed, Suspended.",
                maxLength=316,
                pattern=(
                    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
                ),
            ),
        },
        required=["lastTransitionTime", "message", "reason", "status", "type"],
    )


def replicated_job_schema(kube: KubeSchemas) -> Schema:
    template = kube.model("V1JobTemplateSpec")
    template["description"] = (
        "The batch/v1 Job template each replica is created from. The controller adds the "
        "JobSet labels and annotations and, with DNS hostnames, the pod subdomain."
    )
    depends_on = obj(
        "A ReplicatedJob that must reach a state before this one is created.",
        {
            "name": string("Name of an earlier ReplicatedJob of this JobSet."),
            "status": string(
                "Ready: all its Jobs are ready, succeeded or failed. Complete: all succeeded.",
                enum=["Ready", "Complete"],
            ),
        },
        required=["name", "status"],
    )
    return obj(
        "A group of identical Jobs stamped from one template.",
        {
            "name": string("Name of the ReplicatedJob; Jobs are named <jobset>-<name>-<index>."),
            "groupName": string(
                "Group the ReplicatedJob belongs to, for group labels and indexes.",
                default="default",
            ),
            "replicas": integer("Number of Jobs created from the template.", default=1, minimum=0),
            "template": template,
            "dependsOn": array(
                "ReplicatedJobs (earlier in the list) this one waits for before its Jobs are "
                "created. Not allowed on the first ReplicatedJob, nor with an InOrder "
                "startupPolicy.",
                depends_on,
                maxItems=5,
                **{
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "x-kubernetes-validations": immutable(),
                },
            ),
        },
        required=["name", "template"],
    )


def volume_claim_policy_schema(kube: KubeSchemas) -> Schema:
    pvc = kube.model("V1PersistentVolumeClaim")
    pvc["description"] = "A PersistentVolumeClaim shared by the JobSet's pods."
    return obj(
        "Shared PersistentVolumeClaims the pod templates may mount, and their lifecycle.",
        {
            "templates": array(
                "Claims created once per JobSet, named <claim>-<jobset>. Each must be mounted "
                "by a container of some ReplicatedJob; the namespace must not be set.",
                pvc,
                maxItems=50,
                **{"x-kubernetes-list-type": "atomic"},
            ),
            "retentionPolicy": obj(
                "What happens to the claims when the JobSet is deleted.",
                {
                    "whenDeleted": string(
                        "Delete removes the claims with the JobSet; Retain keeps them.",
                        default="Delete",
                        enum=["Delete", "Retain"],
                    )
                },
            ),
        },
        extensions={
            "x-kubernetes-validations": [
                {
                    "rule": (
                        "self.templates.all(t, !has(t.metadata.namespace) || "
                        "size(t.metadata.namespace) == 0)"
                    ),
                    "message": "namespace cannot be set for VolumeClaimPolicies templates",
                }
            ]
        },
    )


def failure_rule_schema() -> Schema:
    """One rule of `spec.failurePolicy.rules`."""
    return obj(
        "An action for failed Jobs matching the reasons, message patterns and targets.",
        {
            "name": string(
                "Unique rule name (defaulted to failurePolicyRule<index>), used in the "
                "RestartingJobSet condition reason."
            ),
            "action": string(
                "What to do when the rule matches a failed Job.",
                enum=[
                    "FailJobSet",
                    "RestartJobSet",
                    "RestartJobSetAndIgnoreMaxRestarts",
                    "RestartJob",
                    "RestartJobAndIgnoreMaxRestarts",
                ],
            ),
            "onJobFailureReasons": array(
                "Job failure reasons the rule applies to; empty matches any reason.",
                {"type": "string"},
            ),
            "onJobFailureMessagePatterns": array(
                "RE2 patterns of Job failure messages the rule applies to; empty matches any.",
                {"type": "string"},
            ),
            "targetReplicatedJobs": atomic_strings(
                "ReplicatedJobs the rule applies to; empty means all."
            ),
        },
        required=["action", "name"],
    )


def failure_policy_schema() -> Schema:
    """`spec.failurePolicy`."""
    return obj(
        "How Job failures are handled: restarts, their budget, and per-failure rules. "
        "Without it, the first failed Job fails the JobSet.",
        {
            "maxRestarts": integer("Restarts allowed (counted ones) before the JobSet fails."),
            "restartStrategy": string(
                "Recreate replaces each Job as soon as its predecessor is gone; "
                "BlockingRecreate waits until all are gone; InPlaceRestart restarts "
                "healthy pods in place.",
                default="Recreate",
                enum=["Recreate", "BlockingRecreate", "InPlaceRestart"],
            ),
            "rules": array(
                "Rules tried in order for a failed Job; the first match applies. No "
                "match means RestartJobSet.",
                failure_rule_schema(),
            ),
        },
        extensions={"x-kubernetes-validations": immutable()},
    )


def network_schema() -> Schema:
    """`spec.network`."""
    return obj(
        "Pod networking: DNS hostnames through a headless Service.",
        {
            "enableDNSHostnames": boolean(
                "Give pods stable hostnames <jobset>-<rjob>-<jobIndex>-<podIndex>.<subdomain>."
            ),
            "subdomain": string(
                "Name of the headless Service and pod subdomain; the JobSet name if empty."
            ),
            "publishNotReadyAddresses": boolean(
                "Publish DNS records of pods before they are ready (default true)."
            ),
        },
        extensions={"x-kubernetes-validations": immutable()},
    )


def success_policy_schema() -> Schema:
    """`spec.successPolicy`."""
    return obj(
        "When the JobSet counts as Completed.",
        {
            "operator": string(
                "All: every Job of the targets succeeded. Any: one Job did.",
                enum=["All", "Any"],
            ),
            "targetReplicatedJobs": atomic_strings(
                "ReplicatedJobs the operator looks at; empty means all."
            ),
        },
        required=["operator"],
        extensions={"x-kubernetes-validations": immutable()},
    )


def spec_schema(kube: KubeSchemas) -> Schema:
    properties: Schema = {
        "replicatedJobs": array(
            "The groups of Jobs forming the set.",
            replicated_job_schema(kube),
            **{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
        ),
        "network": network_schema(),
        "successPolicy": success_policy_schema(),
        "failurePolicy": failure_policy_schema(),
        "startupPolicy": obj(
            "Order of ReplicatedJob creation. Deprecated in favour of dependsOn.",
            {
                "startupPolicyOrder": string(
                    "AnyOrder creates all at once; InOrder creates each ReplicatedJob once "
                    "the previous one's Jobs are ready.",
                    enum=["AnyOrder", "InOrder"],
                )
            },
            required=["startupPolicyOrder"],
            extensions={"x-kubernetes-validations": immutable()},
        ),
        "suspend": boolean("Suspend the child Jobs (and create new ones suspended)."),
        "coordinator": obj(
            "A pod whose stable endpoint is given to every pod as the coordinator "
            "label/annotation.",
            {
                "replicatedJob": string("ReplicatedJob of the coordinator pod."),
                "jobIndex": integer("Job index of the coordinator pod.", None),
                "podIndex": integer("Completion index of the coordinator pod.", None),
            },
            required=["replicatedJob"],
        ),
        "managedBy": string(
            "Controller reconciling this JobSet; the built-in controller only acts when it "
            "is unset or jobset.sigs.k8s.io/jobset-controller. A domain-prefixed path of at "
            "most 63 characters; immutable."
        ),
        "ttlSecondsAfterFinished": integer(
            "Delete the JobSet this many seconds after it completes or fails.", minimum=0
        ),
        "volumeClaimPolicies": array(
            "Shared PersistentVolumeClaims mounted into the pod templates.",
            volume_claim_policy_schema(kube),
            maxItems=50,
            **{"x-kubernetes-list-type": "atomic", "x-kubernetes-validations": immutable()},
        ),
    }
    return obj(
        "Desired state of the JobSet.",
        properties,
        extensions={
            "x-kubernetes-validations": [
                {
                    "rule": (
                        "!(has(self.startupPolicy) && self.startupPolicy.startupPolicyOrder "
                        "== 'InOrder' && self.replicatedJobs.exists(x, has(x.dependsOn)))"
                    ),
                    "message": "StartupPolicy and DependsOn APIs are mutually exclusive",
                }
            ]
        },
    )


def status_schema() -> Schema:
    counts = {
        "ready": "Jobs whose ready plus succeeded pods reach min(parallelism, completions).",
        "succeeded": "Jobs that completed successfully.",
        "failed": "Jobs that failed.",
        "active": "Jobs with at least one pending or running pod, not being deleted.",
        "suspended": "Jobs that are suspended.",
    }
    rjob_status_props: Schema = {"name": string("Name of the ReplicatedJob.")}
    rjob_status_props.update({k: integer(v) for k, v in counts.items()})
    rjob_status_props["jobRestarts"] = array(
        "Per job index, how many times that Job alone was restarted (RestartJob actions).",
        {"type": "integer", "format": "int32"},
        maxItems=1024,
        **{"x-kubernetes-list-type": "atomic"},
    )
    rjob_status_props["jobRestartsCountTowardsMax"] = array(
        "Per job index, the individual restarts that count towards maxRestarts.",
        {"type": "integer", "format": "int32"},
        maxItems=1024,
        **{"x-kubernetes-list-type": "atomic"},
    )
    return obj(
        "Observed state of the JobSet.",
        {
            "conditions": array(
                "Completed, Failed, Suspended, RestartingJobSet and startup-policy conditions.",
                condition_schema(),
                **{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
            ),
            "restarts": integer("Times all Jobs were recreated by a JobSet-wide restart."),
            "restartsCountTowardsMax": integer(
                "JobSet-wide restarts that count towards failurePolicy.maxRestarts."
            ),
            "executionAttempts": integer(
                "Runs so far, counting resumes and JobSet-wide restarts: 0 on the first "
                "run, unset when never run or the ExecutionAttemptsTracking gate is off.",
                minimum=0,
            ),
            "terminalState": string("Completed or Failed once the JobSet has finished."),
            "replicatedJobsStatus": array(
                "Job counts per ReplicatedJob.",
                obj(
                    "Job counts of one ReplicatedJob.",
                    rjob_status_props,
                    required=["active", "failed", "name", "ready", "succeeded", "suspended"],
                ),
                **{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
            ),
            "previousInPlaceRestartAttempt": integer(
                "In-place restart attempt before the current one; agents at or below it "
                "restart their pod in place.",
                minimum=0,
            ),
            "currentInPlaceRestartAttempt": integer(
                "Current in-place restart attempt; agents at it lift their barrier.",
                minimum=0,
            ),
        },
    )


def crd() -> Schema:
    """The whole CustomResourceDefinition object."""
    kube = KubeSchemas()
    root = obj(
        "A JobSet runs a group of batch/v1 Jobs as one workload (leaders, workers, ...), "
        "with networking, success and failure policies, restarts and ordered startup.",
        {
            "apiVersion": string("Versioned schema of this object (jobset.x-k8s.io/v1alpha2)."),
            "kind": string("REST resource this object represents (JobSet)."),
            "metadata": {"type": "object"},
            "spec": spec_schema(kube),
            "status": status_schema(),
        },
    )
    version = {
        "name": VERSION,
        "served": True,
        "storage": True,
        "subresources": {"status": {}},
        "additionalPrinterColumns": [
            {
                "name": "TerminalState",
                "type": "string",
                "jsonPath": ".status.terminalState",
                "description": "Completed or Failed once finished",
            },
            {
                "name": "Restarts",
                "type": "string",
                "jsonPath": ".status.restarts",
                "description": "JobSet-wide restarts so far",
            },
            {
                "name": "Completed",
                "type": "string",
                "jsonPath": '.status.conditions[?(@.type=="Completed")].status',
            },
            {
                "name": "Suspended",
                "type": "string",
                "jsonPath": ".spec.suspend",
                "description": "Whether the JobSet is suspended",
            },
            {
                "name": "Age",
                "type": "date",
                "jsonPath": ".metadata.creationTimestamp",
                "description": "Time since creation",
            },
        ],
        "schema": {"openAPIV3Schema": root},
    }
    k8s_version = importlib.metadata.version("kubernetes_asyncio")
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{PLURAL}.{GROUP}",
            "annotations": {
                "jobset.x-k8s.io/generated-by": f"tools/gen_crd.py (kubernetes_asyncio {k8s_version})"
            },
        },
        "spec": {
            "group": GROUP,
            "names": {
                "kind": KIND,
                "listKind": f"{KIND}List",
                "plural": PLURAL,
                "singular": "jobset",
            },
            "scope": "Namespaced",
            "versions": [version],
        },
    }


# ================================================================================================
# Output


class _Dumper(yaml.SafeDumper):
    """Block style, multi-line strings as literal blocks, lists indented under their key."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)

    def ignore_aliases(self, data: Any) -> bool:
        """Never emit anchors: schemas share sub-dicts, but readers expect plain YAML."""
        return True


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_representer)

HEADER = (
    "# Generated by tools/gen_crd.py: do not edit by hand. Regenerate with\n"
    "#   .venv/bin/python tools/gen_crd.py\n"
)


def render() -> str:
    """The CRD file's full text."""
    body = yaml.dump(crd(), Dumper=_Dumper, sort_keys=True, default_flow_style=False, width=100)
    return HEADER + "---\n" + body


def main(argv: Sequence[str] | None = None, out: Callable[[str], Any] = print) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="fail if the file is stale")
    parser.add_argument("--stdout", action="store_true", help="print instead of writing")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument(
        "--derive-markers",
        type=Path,
        metavar="UPSTREAM_CRD",
        help=f"rewrite {MARKERS_FILE.relative_to(REPO)} from upstream's generated CRD",
    )
    args = parser.parse_args(argv)
    if args.derive_markers is not None:
        table = derive_markers(yaml.safe_load(args.derive_markers.read_text()))
        MARKERS_FILE.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
        out(f"wrote {MARKERS_FILE}")
        return 0
    text = render()
    if args.stdout:
        out(text)
        return 0
    if args.check:
        current = args.output.read_text() if args.output.exists() else ""
        if current != text:
            out(f"{args.output} is stale: run python tools/gen_crd.py")
            return 1
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    out(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
