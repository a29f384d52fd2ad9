"""PATCH for the simulated API server: JSON patch, JSON merge patch, strategic merge patch and
server-side apply, plus the `metadata.managedFields` bookkeeping of ordinary writes.

Real clients depend on the exact semantics here: `kubectl patch`, `kubectl apply` (client-side it
sends a three-way strategic merge patch built from the server's OpenAPI, server-side it sends the
whole object as an apply patch), Helm (server-side apply by default in v4, three-way strategic
merge otherwise) and controllers that read `managedFields`. So the behaviour follows Kubernetes'
own implementations -- `k8s.io/apimachinery/pkg/util/strategicpatch` for strategic merge patch
and `sigs.k8s.io/structured-merge-diff` for server-side apply -- rather than a simpler model.

Everything is a pure function over JSON values (`dict`/`list`/scalars): no I/O, no asyncio, and
inputs are never mutated. Results share unchanged sub-trees with the inputs, so callers must
treat both as immutable (the API server never edits a stored object in place).

List semantics come from a `PatchSchema`: `builtin_patch_schema` knows the merge keys of the
built-in types (from the `patchStrategy`/`patchMergeKey` tags and `+listType` markers of
k8s.io/api), `crd_patch_schema` reads `x-kubernetes-list-type` & co. from a CRD's structural
schema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any, Final, NamedTuple

import jsonpatch

JsonDict = dict[str, Any]
# A field path in the FieldsV1 vocabulary: one serialized path element per step, e.g.
# ("f:spec", "f:containers", 'k:{"name":"app"}', "f:image").
FieldPath = tuple[str, ...]

__all__ = [
    "ConflictError",
    "FieldConflict",
    "ListStrategy",
    "PatchError",
    "PatchSchema",
    "SchemaNode",
    "apply_json_patch",
    "apply_merge_patch",
    "apply_strategic_merge_patch",
    "builtin_patch_schema",
    "crd_patch_schema",
    "server_side_apply",
    "update_managed_fields",
]


# --------------------------------------------------------------------------------------- errors


class PatchError(Exception):
    """A patch that cannot be applied (bad operation or path, failed `test`, bad directive, list
    item without its merge key...). The message says what is wrong; the server turns it into a
    400/422 `Status`."""


@dataclass(frozen=True)
class FieldConflict:
    """One field that an apply would change although another manager owns it."""

    path: str  # structured-merge-diff notation, e.g. `.spec.containers[name="app"].image`
    manager: str
    operation: str
    api_version: str
    subresource: str = ""
    time: str = ""

    def describe_manager(self) -> str:
        """The manager as the real API server prints it in conflict messages."""
        text = json.dumps(self.manager)
        if self.subresource:
            text += f" with subresource {json.dumps(self.subresource)}"
        if self.operation == "Update":
            text += f" using {self.api_version}"
            if self.time:
                text += f" at {self.time}"
        return text

    def message(self) -> str:
        return f"conflict with {self.describe_manager()}: {self.path}"


class ConflictError(Exception):
    """Server-side apply would change fields owned by other managers and `force` was not set.

    `conflicts` is `[(field_path, manager_name), ...]`; `details` keeps everything the real
    server puts into its 409 `Status` (see `message` and `status_causes`)."""

    def __init__(self, details: Sequence[FieldConflict]) -> None:
        self.details: list[FieldConflict] = list(details)
        self.conflicts: list[tuple[str, str]] = [(d.path, d.manager) for d in self.details]
        super().__init__(self.message)

    @property
    def message(self) -> str:
        """Worded like kube-apiserver's, which kubectl and Helm show to users verbatim."""
        if len(self.details) == 1:
            return f"Apply failed with 1 conflict: {self.details[0].message()}"
        by_manager: dict[str, list[str]] = {}
        for d in self.details:
            by_manager.setdefault(d.describe_manager(), []).append(d.path)
        lines: list[str] = []
        for manager in sorted(by_manager):
            lines.append(f"conflicts with {manager}")
            lines.extend(f"- {p}" for p in by_manager[manager])
        return f"Apply failed with {len(self.details)} conflicts: " + "\n".join(lines)

    def status_causes(self) -> list[dict[str, str]]:
        """`Status.details.causes` entries as kube-apiserver builds them."""
        return [
            {"reason": "conflict", "message": d.message(), "field": d.path} for d in self.details
        ]


# --------------------------------------------------------------------------------------- schema


class ListStrategy(NamedTuple):
    """How one list field merges.

    `type` is the structured-merge-diff list type used by server-side apply and CRDs:
    "map" (items identified by `keys`), "set" (scalar items identified by value) or "atomic"
    (the list is one value). Strategic merge patch has its own, older vocabulary: `smp_merge`
    says whether the list merges at all and `smp_key` is its `patchMergeKey` (None for a merging
    list of scalars). The two differ for real types -- container ports merge by `containerPort`
    in strategic merge patch but by (containerPort, protocol) in apply; Job conditions merge by
    type in strategic merge patch but are atomic in apply -- which is why both are kept.
    `key_defaults` are the schema defaults of key fields (ports' protocol is "TCP"), which apply
    uses when an item omits a key."""

    type: str = "atomic"
    keys: tuple[str, ...] = ()
    smp_merge: bool = False
    smp_key: str | None = None
    key_defaults: tuple[tuple[str, Any], ...] = ()


ATOMIC_LIST: Final = ListStrategy()


@dataclass(frozen=True, eq=False)
class SchemaNode:
    """The merge-relevant shape of one value: the fields of an object (`fields`, with `elem` for
    map values / additionalProperties), or, for a list, its `list` strategy and `item` shape.
    `atomic` marks objects that are replaced as a whole (`+structType=atomic`,
    `x-kubernetes-map-type: atomic`). Anything the schema does not describe is a granular
    object / atomic list, which is also how Kubernetes treats schema-less data."""

    fields: Mapping[str, SchemaNode] = field(default_factory=dict)
    elem: SchemaNode | None = None
    list: ListStrategy | None = None
    item: SchemaNode | None = None
    atomic: bool = False

    def child(self, name: str) -> SchemaNode:
        node = self.fields.get(name)
        if node is not None:
            return node
        return self.elem if self.elem is not None else UNKNOWN

    @property
    def list_strategy(self) -> ListStrategy:
        return self.list if self.list is not None else ATOMIC_LIST

    @property
    def item_node(self) -> SchemaNode:
        return self.item if self.item is not None else UNKNOWN


UNKNOWN: Final = SchemaNode()


class PatchSchema:
    """Per-path merge semantics of one resource type.

    Paths are field names from the object root with list items skipped, e.g.
    `("spec", "template", "spec", "containers", "env")`. The patch functions themselves walk
    the `SchemaNode` tree directly (cheaper than resolving a path per field)."""

    def __init__(self, root: SchemaNode, name: str = "", *, typed: bool = False) -> None:
        self.root = root
        self.name = name
        # Built-in kinds are Go structs on the real server, whose zero value already has `spec`
        # and `status` objects: a create does not count those as added (no `.` in FieldsV1).
        self.typed = typed

    def node(self, path: Iterable[str]) -> SchemaNode:
        node = self.root
        for name in path:
            while node.list is not None:  # list items are skipped in paths
                node = node.item_node
            node = node.child(name)
        return node

    def list_strategy(self, path: Iterable[str]) -> ListStrategy:
        return self.node(path).list_strategy

    def __call__(self, path: Iterable[str]) -> ListStrategy:
        return self.list_strategy(path)

    def __repr__(self) -> str:
        return f"PatchSchema({self.name!r})"


# Built-in types, transcribed from the `patchStrategy`/`patchMergeKey` struct tags and the
# `+listType`/`+listMapKey`/`+structType`/`+mapType` markers of k8s.io/api (v1.32). Only fields
# that are not "granular object / atomic list" are listed; a type name refers to another entry.


@dataclass(frozen=True)
class _ListSpec:
    strategy: ListStrategy
    item: str | None = None


class _AtomicMap:
    pass


_ATOMIC_MAP: Final = _AtomicMap()
_Spec = str | _ListSpec | _AtomicMap


def _lmap(
    *keys: str,
    item: str | None = None,
    smp: bool = True,
    smp_key: str | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> _ListSpec:
    """A list of objects keyed by `keys` (`+listType=map`), by default also merged by its first
    key in strategic merge patch (`patchStrategy=merge`)."""
    return _ListSpec(
        ListStrategy(
            "map",
            keys,
            smp_merge=smp,
            smp_key=(smp_key or keys[0]) if smp else None,
            key_defaults=tuple((defaults or {}).items()),
        ),
        item,
    )


def _lset(*, smp: bool) -> _ListSpec:
    return _ListSpec(ListStrategy("set", smp_merge=smp))


def _latomic(smp_key: str) -> _ListSpec:
    """Atomic for apply but merged by `smp_key` in strategic merge patch."""
    return _ListSpec(ListStrategy("atomic", smp_merge=True, smp_key=smp_key))


_ATOMIC_STRUCTS: Final = frozenset(
    {
        "ConfigMapKeySelector",
        "LabelSelector",
        "LocalObjectReference",
        "NodeSelector",
        "ObjectFieldSelector",
        "ObjectReference",
        "OwnerReference",
        "ResourceFieldSelector",
        "RoleRef",
        "ScopeSelector",
        "SecretKeySelector",
        "SecretReference",
        "TypedLocalObjectReference",
    }
)

_SECRET_REF: Final[Mapping[str, _Spec]] = {"secretRef": "LocalObjectReference"}
_CONDITIONS: Final[Mapping[str, _Spec]] = {"conditions": _lmap("type")}

_TYPES: Final[Mapping[str, Mapping[str, _Spec]]] = {
    "ObjectMeta": {
        "finalizers": _lset(smp=True),
        "ownerReferences": _lmap("uid", item="OwnerReference"),
    },
    # core/v1 pods
    "PodTemplateSpec": {"metadata": "ObjectMeta", "spec": "PodSpec"},
    "PodSpec": {
        "volumes": _lmap("name", item="Volume"),
        "initContainers": _lmap("name", item="Container"),
        "containers": _lmap("name", item="Container"),
        "ephemeralContainers": _lmap("name", item="Container"),
        "imagePullSecrets": _lmap("name", item="LocalObjectReference"),
        "hostAliases": _lmap("ip"),
        "topologySpreadConstraints": _lmap(
            "topologyKey", "whenUnsatisfiable", item="TopologySpreadConstraint"
        ),
        "schedulingGates": _lmap("name"),
        "resourceClaims": _lmap("name"),
        "nodeSelector": _ATOMIC_MAP,
        "affinity": "Affinity",
        "resources": "ResourceRequirements",
    },
    "Container": {
        "ports": _lmap("containerPort", "protocol", defaults={"protocol": "TCP"}),
        "env": _lmap("name", item="EnvVar"),
        "volumeMounts": _lmap("mountPath"),
        "volumeDevices": _lmap("devicePath"),
        "resources": "ResourceRequirements",
    },
    "EnvVar": {"valueFrom": "EnvVarSource"},
    "EnvVarSource": {
        "fieldRef": "ObjectFieldSelector",
        "resourceFieldRef": "ResourceFieldSelector",
        "configMapKeyRef": "ConfigMapKeySelector",
        "secretKeyRef": "SecretKeySelector",
    },
    "ResourceRequirements": {"claims": _lmap("name", smp=False)},
    "Affinity": {"nodeAffinity": "NodeAffinity"},
    "NodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": "NodeSelector"},
    "TopologySpreadConstraint": {"labelSelector": "LabelSelector"},
    "Volume": {
        "cephfs": "SecretRefHolder",
        "cinder": "SecretRefHolder",
        "flexVolume": "SecretRefHolder",
        "iscsi": "SecretRefHolder",
        "rbd": "SecretRefHolder",
        "scaleIO": "SecretRefHolder",
        "storageos": "SecretRefHolder",
        "csi": "CSIVolumeSource",
        "ephemeral": "EphemeralVolumeSource",
    },
    "SecretRefHolder": _SECRET_REF,
    "CSIVolumeSource": {"nodePublishSecretRef": "LocalObjectReference"},
    "EphemeralVolumeSource": {"volumeClaimTemplate": "PersistentVolumeClaimTemplate"},
    "PersistentVolumeClaimTemplate": {
        "metadata": "ObjectMeta",
        "spec": "PersistentVolumeClaimSpec",
    },
    "PersistentVolumeClaimSpec": {
        "selector": "LabelSelector",
        "dataSource": "TypedLocalObjectReference",
    },
    "PodStatus": {
        "conditions": _lmap("type"),
        "podIPs": _lmap("ip"),
        "hostIPs": _latomic("ip"),
        "resourceClaimStatuses": _lmap("name"),
    },
    "Conditions": _CONDITIONS,
    "Pod": {"metadata": "ObjectMeta", "spec": "PodSpec", "status": "PodStatus"},
    "PodTemplate": {"metadata": "ObjectMeta", "template": "PodTemplateSpec"},
    "ReplicationController": {
        "metadata": "ObjectMeta",
        "spec": "ReplicationControllerSpec",
        "status": "Conditions",
    },
    "ReplicationControllerSpec": {"selector": _ATOMIC_MAP, "template": "PodTemplateSpec"},
    # core/v1 others
    "Service": {"metadata": "ObjectMeta", "spec": "ServiceSpec", "status": "Conditions"},
    "ServiceSpec": {
        "ports": _lmap("port", "protocol", defaults={"protocol": "TCP"}),
        "selector": _ATOMIC_MAP,
    },
    "Node": {"metadata": "ObjectMeta", "spec": "NodeSpec", "status": "NodeStatus"},
    "NodeSpec": {"podCIDRs": _lset(smp=True)},
    "NodeStatus": {"conditions": _lmap("type"), "addresses": _lmap("type")},
    "PersistentVolumeClaim": {
        "metadata": "ObjectMeta",
        "spec": "PersistentVolumeClaimSpec",
        "status": "Conditions",
    },
    "PersistentVolume": {"metadata": "ObjectMeta", "spec": "PersistentVolumeSpec"},
    "PersistentVolumeSpec": {
        "claimRef": "ObjectReference",
        "nodeAffinity": "VolumeNodeAffinity",
    },
    "VolumeNodeAffinity": {"required": "NodeSelector"},
    "ServiceAccount": {
        "metadata": "ObjectMeta",
        "secrets": _lmap("name", item="ObjectReference"),
    },
    "Namespace": {"metadata": "ObjectMeta", "status": "Conditions"},
    "Event": {
        "metadata": "ObjectMeta",
        "involvedObject": "ObjectReference",
        "related": "ObjectReference",
    },
    "EventsV1Event": {
        "metadata": "ObjectMeta",
        "regarding": "ObjectReference",
        "related": "ObjectReference",
    },
    "ResourceQuota": {"metadata": "ObjectMeta", "spec": "ResourceQuotaSpec"},
    "ResourceQuotaSpec": {"scopeSelector": "ScopeSelector"},
    "MetaOnly": {"metadata": "ObjectMeta"},
    # apps/v1
    "Workload": {"metadata": "ObjectMeta", "spec": "WorkloadSpec", "status": "Conditions"},
    "WorkloadSpec": {"selector": "LabelSelector", "template": "PodTemplateSpec"},
    # batch/v1
    "Job": {"metadata": "ObjectMeta", "spec": "JobSpec", "status": "JobStatus"},
    "JobSpec": {"selector": "LabelSelector", "template": "PodTemplateSpec"},
    "JobStatus": {
        "conditions": _latomic("type"),
        "uncountedTerminatedPods": "UncountedTerminatedPods",
    },
    "UncountedTerminatedPods": {"succeeded": _lset(smp=False), "failed": _lset(smp=False)},
    "CronJob": {"metadata": "ObjectMeta", "spec": "CronJobSpec"},
    "CronJobSpec": {"jobTemplate": "JobTemplateSpec"},
    "JobTemplateSpec": {"metadata": "ObjectMeta", "spec": "JobSpec"},
    # admissionregistration.k8s.io/v1
    "WebhookConfiguration": {
        "metadata": "ObjectMeta",
        "webhooks": _lmap("name", item="Webhook"),
    },
    "Webhook": {
        "namespaceSelector": "LabelSelector",
        "objectSelector": "LabelSelector",
        "matchConditions": _lmap("name"),
    },
    # rbac.authorization.k8s.io/v1
    "RoleBinding": {"metadata": "ObjectMeta", "roleRef": "RoleRef"},
    # policy/v1, networking.k8s.io/v1
    "PodDisruptionBudget": {
        "metadata": "ObjectMeta",
        "spec": "SelectorSpec",
        "status": "Conditions",
    },
    "SelectorSpec": {"selector": "LabelSelector"},
    "NetworkPolicy": {"metadata": "ObjectMeta", "spec": "NetworkPolicySpec"},
    "NetworkPolicySpec": {"podSelector": "LabelSelector"},
    # apiextensions.k8s.io/v1
    "CustomResourceDefinition": {"metadata": "ObjectMeta", "status": "CRDStatus"},
    "CRDStatus": {"conditions": _lmap("type", smp=False)},
    # Kinds not listed below: metadata is ObjectMeta, pod templates are recognised where
    # workload APIs put them, and conditions merge by type.
    "Generic": {"metadata": "ObjectMeta", "spec": "GenericSpec", "status": "Conditions"},
    "GenericSpec": {"template": "PodTemplateSpec", "jobTemplate": "JobTemplateSpec"},
}

_KINDS: Final[Mapping[tuple[str, str], str]] = {
    ("", "Pod"): "Pod",
    ("", "PodTemplate"): "PodTemplate",
    ("", "ReplicationController"): "ReplicationController",
    ("", "Service"): "Service",
    ("", "Node"): "Node",
    ("", "PersistentVolumeClaim"): "PersistentVolumeClaim",
    ("", "PersistentVolume"): "PersistentVolume",
    ("", "ServiceAccount"): "ServiceAccount",
    ("", "Namespace"): "Namespace",
    ("", "Event"): "Event",
    ("", "ResourceQuota"): "ResourceQuota",
    ("", "Secret"): "MetaOnly",
    ("", "ConfigMap"): "MetaOnly",
    ("", "Endpoints"): "MetaOnly",
    ("", "LimitRange"): "MetaOnly",
    ("apps", "Deployment"): "Workload",
    ("apps", "StatefulSet"): "Workload",
    ("apps", "DaemonSet"): "Workload",
    ("apps", "ReplicaSet"): "Workload",
    ("batch", "Job"): "Job",
    ("batch", "CronJob"): "CronJob",
    ("events.k8s.io", "Event"): "EventsV1Event",
    ("coordination.k8s.io", "Lease"): "MetaOnly",
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): "WebhookConfiguration",
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): "WebhookConfiguration",
    ("rbac.authorization.k8s.io", "Role"): "MetaOnly",
    ("rbac.authorization.k8s.io", "ClusterRole"): "MetaOnly",
    ("rbac.authorization.k8s.io", "RoleBinding"): "RoleBinding",
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): "RoleBinding",
    ("policy", "PodDisruptionBudget"): "PodDisruptionBudget",
    ("networking.k8s.io", "NetworkPolicy"): "NetworkPolicy",
    ("apiextensions.k8s.io", "CustomResourceDefinition"): "CustomResourceDefinition",
}

_ATOMIC_NODE: Final = SchemaNode(atomic=True)


@cache
def _builtin_node(type_name: str) -> SchemaNode:
    if type_name in _ATOMIC_STRUCTS:
        return _ATOMIC_NODE
    return SchemaNode(fields={name: _spec_node(spec) for name, spec in _TYPES[type_name].items()})


def _spec_node(spec: _Spec) -> SchemaNode:
    if isinstance(spec, str):
        return _builtin_node(spec)
    if isinstance(spec, _AtomicMap):
        return _ATOMIC_NODE
    item = _builtin_node(spec.item) if spec.item else None
    return SchemaNode(list=spec.strategy, item=item)


@cache
def builtin_patch_schema(group: str, kind: str) -> PatchSchema:
    """Merge semantics of a built-in kind. Unknown kinds get a generic schema that still knows
    ObjectMeta, pod templates under `spec.template` / `spec.jobTemplate` and `status.conditions`,
    so strategic merge patch of containers by name works for any workload-like kind."""
    type_name = _KINDS.get((group, kind), "Generic")
    name = f"{group}/{kind}" if group else kind
    return PatchSchema(_builtin_node(type_name), name, typed=(group, kind) in _KINDS)


_CRD_CACHE: dict[int, tuple[Mapping[str, Any], PatchSchema]] = {}
_CRD_CACHE_SIZE: Final = 128


def crd_patch_schema(openapi_v3_schema: Mapping[str, Any]) -> PatchSchema:
    """Merge semantics of a custom resource from its structural `openAPIV3Schema`:
    `x-kubernetes-list-type` (atomic, the default | set | map with `x-kubernetes-list-map-keys`)
    and `x-kubernetes-map-type: atomic`. `metadata` always follows ObjectMeta, as the API server
    does for every custom resource. Results are cached per schema object (CRD schemas are
    long-lived), so calling this on every request is cheap."""
    cached = _CRD_CACHE.get(id(openapi_v3_schema))
    if cached is not None and cached[0] is openapi_v3_schema:
        return cached[1]
    root = _crd_node(openapi_v3_schema)
    fields = dict(root.fields)
    fields["metadata"] = _builtin_node("ObjectMeta")
    schema = PatchSchema(replace(root, fields=fields), "crd")
    if len(_CRD_CACHE) >= _CRD_CACHE_SIZE:
        _CRD_CACHE.pop(next(iter(_CRD_CACHE)))
    _CRD_CACHE[id(openapi_v3_schema)] = (openapi_v3_schema, schema)
    return schema


def _crd_node(schema: Any) -> SchemaNode:
    if not isinstance(schema, Mapping):
        return UNKNOWN
    if schema.get("type") == "array" or "items" in schema:
        items = schema.get("items")
        item = _crd_node(items)
        list_type = schema.get("x-kubernetes-list-type", "atomic")
        if list_type == "map":
            keys = tuple(str(k) for k in schema.get("x-kubernetes-list-map-keys") or ())
            props = items.get("properties") if isinstance(items, Mapping) else None
            defaults = tuple(
                (k, props[k]["default"])
                for k in keys
                if isinstance(props, Mapping)
                and isinstance(props.get(k), Mapping)
                and "default" in props[k]
            )
            return SchemaNode(list=ListStrategy("map", keys, key_defaults=defaults), item=item)
        if list_type == "set":
            return SchemaNode(list=ListStrategy("set"), item=item)
        return SchemaNode(list=ATOMIC_LIST, item=item)
    props = schema.get("properties")
    fields = {str(k): _crd_node(v) for k, v in props.items()} if isinstance(props, Mapping) else {}
    if schema.get("x-kubernetes-embedded-resource"):
        fields["metadata"] = _builtin_node("ObjectMeta")
    extra = schema.get("additionalProperties")
    elem = _crd_node(extra) if isinstance(extra, Mapping) else None
    atomic = schema.get("x-kubernetes-map-type") == "atomic"
    if not fields and elem is None and not atomic:
        return UNKNOWN
    return SchemaNode(fields=fields, elem=elem, atomic=atomic)


# ----------------------------------------------------------------------------------- JSON patch

_MAX_JSON_PATCH_OPERATIONS: Final = 10000  # kube-apiserver's limit


def apply_json_patch(obj: JsonDict, ops: list[Any]) -> JsonDict:
    """RFC 6902 JSON patch, as `kubectl patch --type json` sends. The `jsonpatch` library works
    on a deep copy, so `obj` is untouched."""
    if not isinstance(ops, list):
        raise PatchError("a JSON patch must be a list of operations")
    if len(ops) > _MAX_JSON_PATCH_OPERATIONS:
        raise PatchError(
            f"The allowed maximum operations in a JSON patch is {_MAX_JSON_PATCH_OPERATIONS}, "
            f"got {len(ops)}"
        )
    for i, op in enumerate(ops):
        if not isinstance(op, dict):
            raise PatchError(f"JSON patch operation {i} is not an object")
        if "op" not in op:
            raise PatchError(f"JSON patch operation {i} has no 'op'")
        if "path" not in op:
            raise PatchError(f"JSON patch operation {i} ({op['op']}) has no 'path'")
    try:
        result = jsonpatch.JsonPatch(ops).apply(obj, in_place=False)
    except jsonpatch.JsonPatchTestFailed as exc:
        detail = re.sub(r" \(<class '\w+'>\)", "", str(exc))
        raise PatchError(f"the test operation failed: {detail}") from None
    except (
        jsonpatch.JsonPatchException,
        jsonpatch.JsonPointerException,
        KeyError,
        IndexError,
        TypeError,
        ValueError,
        AttributeError,
    ) as exc:
        raise PatchError(f"unable to apply JSON patch: {exc}") from None
    if not isinstance(result, dict):
        raise PatchError("a JSON patch must leave an object")
    return result


# ----------------------------------------------------------------------------- JSON merge patch


def apply_merge_patch(obj: JsonDict, patch: JsonDict) -> JsonDict:
    """RFC 7386 JSON merge patch: objects merge recursively, `null` deletes, anything else
    (lists included) replaces."""
    if not isinstance(patch, dict):
        raise PatchError("a JSON merge patch for an object must be a JSON object")
    result = _merge_patch(obj, patch)
    assert isinstance(result, dict)
    return result


def _merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return patch
    out: JsonDict = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _merge_patch(out.get(key), value)
    return out


# ------------------------------------------------------------------------ strategic merge patch

_DIRECTIVE: Final = "$patch"
_RETAIN_KEYS: Final = "$retainKeys"
_SET_ORDER: Final = "$setElementOrder"
_DELETE_PRIMITIVE: Final = "$deleteFromPrimitiveList"


class _Missing:
    """Marks an absent value, as opposed to JSON `null`."""


_MISSING: Final = _Missing()


def apply_strategic_merge_patch(obj: JsonDict, patch: JsonDict, schema: PatchSchema) -> JsonDict:
    """Kubernetes' strategic merge patch (`kubectl patch`, client-side `kubectl apply`, Helm's
    three-way merge): like a JSON merge patch, except that lists declared as merging in the
    schema merge item by item (objects by merge key, scalars as a set), and these directives:

    - `$patch: replace` (object or list item: replace instead of merge; a `{"$patch": "replace"}`
      element replaces the whole list), `$patch: delete` (object: becomes `{}`; list item:
      removes the items with that merge key), `$patch: merge` (explicitly the default);
    - `$retainKeys: [...]`: drop the object's fields not listed, then merge;
    - `$setElementOrder/<list>: [...]`: the order of the merged list;
    - `$deleteFromPrimitiveList/<list>: [...]`: remove these scalars from the list.

    Differences from apimachinery, all where it would leave directives or nulls inside the
    stored object: a new sub-tree brought in by the patch is cleaned of directives and nulls
    the way an existing one would be (`$patch: replace` on a field the object lacks sets it
    instead of dropping it), and `$patch: merge` is accepted instead of rejected."""
    if not isinstance(obj, dict) or not isinstance(patch, dict):
        raise PatchError("a strategic merge patch and its target must be JSON objects")
    return _smp_map(obj, patch, schema.root, "")


def _smp_map(
    original: Mapping[str, Any] | None, patch: Mapping[str, Any], node: SchemaNode, where: str
) -> JsonDict:
    if _DIRECTIVE in patch:
        directive = patch[_DIRECTIVE]
        rest = {k: v for k, v in patch.items() if k != _DIRECTIVE}
        if directive == "replace":
            return _smp_map(None, rest, node, where)
        if directive == "delete":
            return {}
        if directive != "merge":
            raise PatchError(f"unknown patch type: {directive!r} in map at {where or '<root>'}")
        patch = rest
    result: JsonDict = dict(original) if original else {}
    handled: set[str] = set()

    if _RETAIN_KEYS in patch:
        retain = patch[_RETAIN_KEYS]
        if not isinstance(retain, list):
            raise PatchError(f"invalid patch format of retainKeys at {where or '<root>'}")
        keep = {k for k in retain if isinstance(k, str)}
        for key, value in patch.items():
            if value is not None and not key.startswith("$") and key not in keep:
                raise PatchError(
                    f"the patch has field {where}.{key} which is not in its $retainKeys list"
                )
        result = {k: v for k, v in result.items() if k in keep}
        handled.add(_RETAIN_KEYS)

    for key, value in patch.items():
        if key.startswith(_SET_ORDER):
            field_name = _directive_field(key, _SET_ORDER, "setElementOrder list")
            _smp_set_element_order(result, patch, field_name, value, node, where)
            handled.update((key, field_name))

    for key, value in patch.items():
        if key in handled:
            continue
        delete_list = key.startswith(_DELETE_PRIMITIVE)
        if delete_list:
            key = _directive_field(key, _DELETE_PRIMITIVE, "primitive list")
        child = node.child(key)
        path = f"{where}.{key}"
        if value is None:
            result.pop(key, None)
            continue
        current = result.get(key, _MISSING)
        if isinstance(current, dict) and isinstance(value, dict):
            result[key] = _smp_map(current, value, child, path)
        elif isinstance(current, list) and isinstance(value, list):
            if delete_list:
                result[key] = _delete_from_list(current, value)
            elif child.list_strategy.smp_merge:
                result[key] = _smp_list(current, value, child, path)
            else:
                result[key] = _smp_new_list(value, child, path)
        elif not delete_list:
            new = _smp_new(value, child, path)
            if new is _MISSING:
                result.pop(key, None)
            else:
                result[key] = new
    return result


def _directive_field(key: str, prefix: str, what: str) -> str:
    name = key[len(prefix) :]
    if not name.startswith("/") or len(name) < 2:
        raise PatchError(f"invalid patch format of {what}: {key!r}")
    return name[1:]


def _smp_new(value: Any, node: SchemaNode, where: str) -> Any:
    """A patch value for a field the object lacks (or holds with another type): the patch value
    itself, cleaned of directives and nulls. `_MISSING` means "leave the field out"."""
    if isinstance(value, dict):
        if value.get(_DIRECTIVE) == "delete":
            return _MISSING
        return _smp_map(None, value, node, where)
    if isinstance(value, list):
        return _smp_new_list(value, node, where)
    return value


def _smp_new_list(items: Sequence[Any], node: SchemaNode, where: str) -> list[Any]:
    """A list taken from the patch as is (a new or non-merging list): directive markers such as
    `{"$patch": "replace"}` and delete entries are instructions, not items."""
    item_node = node.item_node
    out: list[Any] = []
    for item in items:
        if isinstance(item, dict):
            if item.get(_DIRECTIVE) == "delete" or (_DIRECTIVE in item and len(item) == 1):
                continue
            out.append(_smp_map(None, item, item_node, where))
        else:
            out.append(item)
    return out


def _delete_from_list(current: Sequence[Any], remove: Sequence[Any]) -> list[Any]:
    doomed = {_ident(v) for v in remove}
    return [v for v in current if _ident(v) not in doomed]


def _ident(value: Any) -> Any:
    """A hashable identity for a JSON value, keeping `true` apart from `1` (Python's bool is an
    int) while `1 == 1.0` as in Go's decoding of JSON numbers."""
    if isinstance(value, bool) or value is None:
        return ("b", value)
    if isinstance(value, int | float):
        return ("n", value)
    if isinstance(value, str):
        return ("s", value)
    return ("j", json.dumps(value, sort_keys=True))


def _element_kind(*lists: Sequence[Any]) -> str:
    kind = ""
    for items in lists:
        for item in items:
            if isinstance(item, list):
                raise PatchError("lists of lists are not supported")
            this = "map" if isinstance(item, dict) else "scalar"
            if kind and kind != this:
                raise PatchError("list element types are not identical")
            kind = this
    return kind


def _merge_key_of(item: Any, key: str, where: str) -> Any:
    if not isinstance(item, dict) or key not in item:
        raise PatchError(f"map: {item} does not contain declared merge key: {key} (at {where})")
    return _ident(item[key])


def _smp_list(
    original: Sequence[Any], patch: Sequence[Any], node: SchemaNode, where: str
) -> list[Any]:
    """Merge a patch list into a list whose strategy is merge."""
    return _smp_list_parts(original, patch, node, where)[0]


def _smp_list_parts(
    original: Sequence[Any], patch: Sequence[Any], node: SchemaNode, where: str
) -> tuple[list[Any], Sequence[Any]]:
    """`_smp_list`, plus the "server order" a `$setElementOrder` for the same list then sorts
    against. apimachinery reads that order through a slice that aliases the list being merged:
    after `$patch: delete` entries it shows the surviving items followed by as many appended
    items as were deleted. Mirroring that keeps the item order kubectl users get."""
    if not original and not patch:
        return list(original), original
    strategy = node.list_strategy
    if _element_kind(original, patch) != "map":
        merged: list[Any] = []
        seen: set[Any] = set()
        for item in [*original, *patch]:
            ident = _ident(item)
            if ident not in seen:
                seen.add(ident)
                merged.append(item)
        return _smp_order(merged, patch, original, None, where), original
    key = strategy.smp_key
    if not key:
        raise PatchError(f"cannot merge lists without merge key for {where}")
    base, items = _smp_special_elements(original, patch, key, node, where)
    merged = list(base)
    position: dict[Any, int] = {}
    for i, item in enumerate(merged):
        if isinstance(item, dict) and key in item:
            position.setdefault(_ident(item[key]), i)
    for item in items:
        ident = _merge_key_of(item, key, where)
        at = position.get(ident)
        if at is None:
            position[ident] = len(merged)
            merged.append(_smp_map(None, item, node.item_node, where))
        else:
            merged[at] = _smp_map(merged[at], item, node.item_node, where)
    return _smp_order(merged, items, base, key, where), merged[: len(original)]


def _smp_special_elements(
    original: Sequence[Any], patch: Sequence[Any], key: str, node: SchemaNode, where: str
) -> tuple[list[Any], list[Any]]:
    """Apply the `$patch` list elements: delete items by merge key, or replace the whole list.
    Returns the list to merge into and the ordinary patch items."""
    base = list(original)
    items: list[Any] = []
    replace_all = False
    for item in patch:
        directive = item.get(_DIRECTIVE, _MISSING)
        if directive is _MISSING:
            items.append(item)
        elif directive == "delete":
            doomed = _merge_key_of(item, key, where)
            base = [
                o
                for o in base
                if not (isinstance(o, dict) and key in o and _ident(o[key]) == doomed)
            ]
        elif directive == "replace":
            replace_all = True
        elif directive == "merge":
            rest = {k: v for k, v in item.items() if k != _DIRECTIVE}
            if rest:
                items.append(rest)
        else:
            raise PatchError(f"unknown patch type: {directive!r} in list at {where}")
    if replace_all:
        return [_smp_map(None, item, node.item_node, where) for item in items], []
    return base, items


def _smp_order(
    merged: Sequence[Any],
    patch_order: Sequence[Any],
    server_order: Sequence[Any],
    key: str | None,
    where: str,
) -> list[Any]:
    """Order a merged list as apimachinery does: items named in the patch keep the patch's
    relative order, the others keep the server's, and the two are interleaved so that each
    server-only item stays ahead of the patch items it preceded on the server."""

    def ident(item: Any) -> Any:
        if key is None:
            return _ident(item)
        if isinstance(item, dict) and key in item:
            return _ident(item[key])
        return ("?", id(item))

    def positions(items: Sequence[Any]) -> dict[Any, int]:
        out: dict[Any, int] = {}
        for i, item in enumerate(items):
            out.setdefault(ident(item), i)
        return out

    in_patch_at = positions(patch_order)
    server_at = positions(server_order)
    ours = [m for m in merged if ident(m) in in_patch_at]
    theirs = [m for m in merged if ident(m) not in in_patch_at]
    ours.sort(key=lambda m: in_patch_at[ident(m)])
    theirs.sort(key=lambda m: server_at.get(ident(m), len(server_at)))
    out: list[Any] = []
    i = j = 0
    while i < len(theirs) or j < len(ours):
        if j >= len(ours):
            out.append(theirs[i])
            i += 1
        elif i >= len(theirs):
            out.append(ours[j])
            j += 1
        else:
            left = server_at.get(ident(theirs[i]), -1)
            right = server_at.get(ident(ours[j]), -1)
            if left >= 0 and right >= 0 and left < right:
                out.append(theirs[i])
                i += 1
            else:
                out.append(ours[j])
                j += 1
    return out


def _smp_set_element_order(
    result: JsonDict,
    patch: Mapping[str, Any],
    field_name: str,
    order: Any,
    node: SchemaNode,
    where: str,
) -> None:
    """Merge `patch[field_name]` into `result[field_name]` and order the outcome by the
    `$setElementOrder/<field>` list (kubectl sends one for every merging list it patches)."""
    path = f"{where}.{field_name}"
    if not isinstance(order, list):
        raise PatchError(f"invalid patch format of setElementOrder list at {path}")
    child = node.child(field_name)
    strategy = child.list_strategy
    current = result.get(field_name, _MISSING)
    incoming = patch.get(field_name, _MISSING)
    if current is not _MISSING and not isinstance(current, list):
        raise PatchError(f"{path} is not a list")
    if incoming is not _MISSING and not isinstance(incoming, list):
        raise PatchError(f"the patch for {path} is not a list")
    key = strategy.smp_key if strategy.smp_merge else None
    if isinstance(incoming, list):
        _check_element_order(incoming, order, key, path)
    server_order: Sequence[Any] = []
    if isinstance(current, list) and isinstance(incoming, list):
        if strategy.smp_merge:
            merged, server_order = _smp_list_parts(current, incoming, child, path)
        else:
            merged = _smp_new_list(incoming, child, path)
    elif isinstance(incoming, list):
        merged = _smp_new_list(incoming, child, path)
    elif isinstance(current, list):
        merged = server_order = current
    else:
        return
    if strategy.smp_merge:
        merged = _smp_order(merged, order, server_order, key, path)
    result[field_name] = merged


def _check_element_order(
    patch_list: Sequence[Any], order: Sequence[Any], key: str | None, where: str
) -> None:
    """The patch items must appear in `$setElementOrder` and in the same relative order."""
    if not patch_list or not order:
        return
    items = [
        p for p in patch_list if not (key and isinstance(p, dict) and p.get(_DIRECTIVE) == "delete")
    ]
    pi = oi = 0
    while pi < len(items) and oi < len(order):
        item = items[pi]
        if isinstance(item, dict) and _DIRECTIVE in item:
            pi += 1
            continue
        if key is None:
            same = _ident(item) == _ident(order[oi])
        else:
            same = _merge_key_of(item, key, where) == _merge_key_of(order[oi], key, where)
        if same:
            pi += 1
        oi += 1
    if pi < len(items):
        raise PatchError(
            f"the order in patch list {list(patch_list)} doesn't match $setElementOrder list "
            f"{list(order)} at {where}"
        )


# ---------------------------------------------------------------------- field paths (FieldsV1)


def _go_json(value: Any) -> str:
    """JSON as Go's encoding/json writes it in FieldsV1 keys: compact, HTML characters escaped,
    other non-ASCII characters left as they are."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    for char, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escaped)
    return text


def _item_element(item: Any, strategy: ListStrategy) -> str | None:
    """The FieldsV1 path element of a list item: `k:{...}` for map lists (key fields, sorted by
    name, schema defaults filling omitted ones), `v:...` for sets; None if the item has no
    identity (no key field at all, or an object in a set)."""
    if strategy.type == "map":
        if not isinstance(item, dict):
            return None
        defaults = dict(strategy.key_defaults)
        key: JsonDict = {}
        for name in strategy.keys:
            if item.get(name) is not None:
                key[name] = item[name]
            elif name in defaults:
                key[name] = defaults[name]
        return "k:" + _go_json(key) if key else None
    if isinstance(item, dict | list) or item is None:
        return None
    return "v:" + _go_json(item)


def _list_elements(
    items: Sequence[Any], strategy: ListStrategy
) -> tuple[list[str], dict[str, Any], set[str]] | None:
    """Path elements of all items, the first item per element and the duplicated elements;
    None if some item has no identity, in which case the list can only be handled whole."""
    elements: list[str] = []
    first: dict[str, Any] = {}
    duplicates: set[str] = set()
    for item in items:
        element = _item_element(item, strategy)
        if element is None:
            return None
        if element in first:
            duplicates.add(element)
        else:
            first[element] = item
        elements.append(element)
    return elements, first, duplicates


def _is_granular_list(value: Any, node: SchemaNode) -> bool:
    return isinstance(value, list) and node.list_strategy.type != "atomic"


def _collect_fields(value: Any, node: SchemaNode, prefix: FieldPath, out: set[FieldPath]) -> None:
    """The fields an applied configuration sets, as structured-merge-diff's ToFieldSet: leaves,
    empty objects, atomic objects/lists and list items (`.` of `k:`/`v:` elements); a non-empty
    object is not a member itself, only its contents are. Raises `PatchError` for list items
    without identity or with duplicate keys, which apply rejects."""
    if isinstance(value, dict) and value and not node.atomic:
        for key, sub in value.items():
            _collect_fields(sub, node.child(key), (*prefix, "f:" + key), out)
        return
    if _is_granular_list(value, node):
        where = _pretty_path(prefix)
        for element, item in zip(
            _config_elements(value, node.list_strategy, where), value, strict=True
        ):
            out.add((*prefix, element))
            _collect_fields(item, node.item_node, (*prefix, element), out)
        return
    if prefix:
        out.add(prefix)


@dataclass
class _Diff:
    added: set[FieldPath] = field(default_factory=set)
    modified: set[FieldPath] = field(default_factory=set)
    removed: set[FieldPath] = field(default_factory=set)

    def changed(self) -> set[FieldPath]:
        return self.added | self.modified


def _diff(old: Any, new: Any, node: SchemaNode) -> _Diff:
    """Which fields an update added, modified and removed (structured-merge-diff's Compare):
    the basis of ownership for Update operations and of apply conflicts."""
    diff = _Diff()
    _compare(old, new, node, (), diff)
    return diff


def _compare(old: Any, new: Any, node: SchemaNode, path: FieldPath, diff: _Diff) -> None:
    old_present = old is not _MISSING
    new_present = new is not _MISSING
    if (not old_present or isinstance(old, dict)) and (not new_present or isinstance(new, dict)):
        olds: Mapping[str, Any] = old if old_present else {}
        news: Mapping[str, Any] = new if new_present else {}
        if node.atomic or (not olds and not news):
            _compare_leaf(old, new, path, diff)
            return
        for key in dict.fromkeys([*olds, *news]):
            child_path = (*path, "f:" + key)
            child = node.child(key)
            _compare(olds.get(key, _MISSING), news.get(key, _MISSING), child, child_path, diff)
        _compare_container(old_present, new_present, path, diff)
        return
    old_list = old if isinstance(old, list) else None
    new_list = new if isinstance(new, list) else None
    if (old_list is not None or not old_present) and (new_list is not None or not new_present):
        strategy = node.list_strategy
        if strategy.type != "atomic" and (old_list or new_list):
            old_index = _list_elements(old_list or [], strategy)
            new_index = _list_elements(new_list or [], strategy)
            if old_index is not None and new_index is not None:
                _compare_items(
                    old_list or [], new_list or [], old_index, new_index, node, path, diff
                )
                _compare_container(old_present, new_present, path, diff)
                return
    _compare_leaf(old, new, path, diff)


def _compare_items(
    old: Sequence[Any],
    new: Sequence[Any],
    old_index: tuple[list[str], dict[str, Any], set[str]],
    new_index: tuple[list[str], dict[str, Any], set[str]],
    node: SchemaNode,
    path: FieldPath,
    diff: _Diff,
) -> None:
    old_elements, old_first, old_dups = old_index
    new_elements, new_first, new_dups = new_index
    for element in dict.fromkeys([*old_elements, *new_elements]):
        item_path = (*path, element)
        if element in old_dups or element in new_dups:
            # Duplicated keys (only possible in objects written without apply) are compared as
            # a whole, as structured-merge-diff does.
            olds = [o for o, e in zip(old, old_elements, strict=True) if e == element]
            news = [n for n, e in zip(new, new_elements, strict=True) if e == element]
            if olds != news:
                (diff.modified if olds and news else diff.added if news else diff.removed).add(
                    item_path
                )
            continue
        old_item = old_first.get(element, _MISSING)
        new_item = new_first.get(element, _MISSING)
        _compare(old_item, new_item, node.item_node, item_path, diff)


def _compare_leaf(old: Any, new: Any, path: FieldPath, diff: _Diff) -> None:
    if not path:
        return
    if old is _MISSING:
        if new is not _MISSING:
            diff.added.add(path)
    elif new is _MISSING:
        diff.removed.add(path)
    elif old != new or isinstance(old, bool) != isinstance(new, bool):
        diff.modified.add(path)


def _compare_container(old_present: bool, new_present: bool, path: FieldPath, diff: _Diff) -> None:
    if path and not old_present:
        diff.added.add(path)
    elif path and not new_present:
        diff.removed.add(path)


def _fields_to_paths(tree: Any, prefix: FieldPath, out: set[FieldPath]) -> None:
    if not isinstance(tree, Mapping):
        return
    for key, sub in tree.items():
        if key == ".":
            continue
        path = (*prefix, str(key))
        if not isinstance(sub, Mapping) or not sub or "." in sub:
            out.add(path)
        _fields_to_paths(sub, path, out)


def _element_sort_key(element: str) -> tuple[Any, ...]:
    """structured-merge-diff's order of path elements: field names, then keys, then values,
    then indexes; within a kind by value (numbers numerically)."""
    kind, _, body = element.partition(":")
    rank = {"f": 0, "k": 1, "v": 2, "i": 3}.get(kind, 4)
    if kind == "f":
        return (rank, body)
    if kind == "i":
        return (rank, int(body) if body.lstrip("-").isdigit() else 0, body)
    try:
        parsed = json.loads(body)
    except ValueError:
        return (rank, body)
    if kind == "k" and isinstance(parsed, dict):
        return (rank, tuple((name, _value_sort_key(v)) for name, v in sorted(parsed.items())))
    return (rank, _value_sort_key(parsed))


def _value_sort_key(value: Any) -> tuple[Any, ...]:
    if value is None:
        return (0,)
    if isinstance(value, bool):
        return (3, value)
    if isinstance(value, int | float):
        return (1, value)
    if isinstance(value, str):
        return (2, value)
    return (4, json.dumps(value, sort_keys=True))


def _paths_to_fields(paths: Iterable[FieldPath]) -> JsonDict:
    """Serialize a set of field paths as FieldsV1: nested objects keyed by path element, `{}`
    for a leaf, and `".": {}` where a path with children is itself a member."""
    trie: dict[str, Any] = {}
    members: set[FieldPath] = set(paths)
    for path in members:
        node = trie
        for element in path:
            node = node.setdefault(element, {})

    def emit(node: dict[str, Any], prefix: FieldPath) -> JsonDict:
        out: JsonDict = {}
        if prefix in members and node:
            out["."] = {}
        for element in sorted(node, key=_element_sort_key):
            out[element] = emit(node[element], (*prefix, element))
        return out

    return emit(trie, ())


def _pretty_path(path: FieldPath) -> str:
    """A field path in structured-merge-diff's human notation, e.g.
    `.spec.containers[name="app"].image`."""
    parts: list[str] = []
    for element in path:
        kind, _, body = element.partition(":")
        if kind == "f":
            parts.append("." + body)
        elif kind == "k":
            try:
                key = json.loads(body)
            except ValueError:
                key = {}
            parts.append(
                "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in sorted(key.items())) + "]"
            )
        elif kind == "v":
            parts.append(f"[={body}]")
        else:
            parts.append(f"[{body}]")
    return "".join(parts)


# --------------------------------------------------------------------------- managedFields

# Fields nobody owns: the API server strips them from every manager's set (stripMetaManager).
_STRIPPED: Final[frozenset[FieldPath]] = frozenset(
    {
        ("f:apiVersion",),
        ("f:kind",),
        ("f:metadata",),
        ("f:metadata", "f:name"),
        ("f:metadata", "f:namespace"),
        ("f:metadata", "f:creationTimestamp"),
        ("f:metadata", "f:selfLink"),
        ("f:metadata", "f:uid"),
        ("f:metadata", "f:clusterName"),
        ("f:metadata", "f:generation"),
        ("f:metadata", "f:managedFields"),
        ("f:metadata", "f:resourceVersion"),
    }
)

_LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"


@dataclass(frozen=True)
class _Entry:
    """One `metadata.managedFields` entry, its FieldsV1 decoded to a set of paths."""

    manager: str
    operation: str
    api_version: str
    subresource: str
    time: str
    fields: frozenset[FieldPath]

    @property
    def ident(self) -> tuple[str, str, str, str]:
        # As kube-apiserver keys managers: Apply entries are one per manager and subresource,
        # Update entries one per manager, subresource and apiVersion.
        version = "" if self.operation == "Apply" else self.api_version
        return (self.manager, self.operation, self.subresource, version)

    def encode(self) -> JsonDict:
        out: JsonDict = {"manager": self.manager, "operation": self.operation}
        if self.api_version:
            out["apiVersion"] = self.api_version
        if self.time:
            out["time"] = self.time
        out["fieldsType"] = "FieldsV1"
        out["fieldsV1"] = _paths_to_fields(self.fields)
        if self.subresource:
            out["subresource"] = self.subresource
        return out


def _decode_entries(raw: Any) -> list[_Entry]:
    """Parse managedFields; entries that are not FieldsV1 (or not entries at all) are dropped,
    and entries for the same manager identity are united, as the real decoder tolerates."""
    if not isinstance(raw, list):
        return []
    merged: dict[tuple[str, str, str, str], _Entry] = {}
    for item in raw:
        if not isinstance(item, dict) or item.get("fieldsType", "FieldsV1") != "FieldsV1":
            continue
        paths: set[FieldPath] = set()
        _fields_to_paths(item.get("fieldsV1") or {}, (), paths)
        entry = _Entry(
            manager=str(item.get("manager") or ""),
            operation=str(item.get("operation") or "Update"),
            api_version=str(item.get("apiVersion") or ""),
            subresource=str(item.get("subresource") or ""),
            time=str(item.get("time") or ""),
            fields=frozenset(paths),
        )
        previous = merged.get(entry.ident)
        if previous is not None:
            entry = replace(entry, fields=previous.fields | entry.fields)
        merged[entry.ident] = entry
    return list(merged.values())


def _encode_entries(entries: Iterable[_Entry]) -> list[JsonDict]:
    # kube-apiserver's order: by operation (Apply first), time, manager, apiVersion, subresource.
    ordered = sorted(
        entries, key=lambda e: (e.operation, e.time, e.manager, e.api_version, e.subresource)
    )
    return [e.encode() for e in ordered]


def _without_managed_fields(obj: Mapping[str, Any]) -> JsonDict:
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        body = dict(obj)
        body["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
        return body
    return dict(obj)


def _with_managed_fields(obj: Mapping[str, Any], entries: Sequence[_Entry]) -> JsonDict:
    out = dict(obj)
    meta = dict(out.get("metadata") or {})
    if entries:
        meta["managedFields"] = _encode_entries(entries)
    else:
        meta.pop("managedFields", None)
    out["metadata"] = meta
    return out


def _ignored(paths: Iterable[FieldPath], ignore: Collection[str]) -> set[FieldPath]:
    """Drop the stripped metadata fields and the sub-trees of top-level fields in `ignore`."""
    ignored = {"f:" + name for name in ignore}
    return {p for p in paths if p not in _STRIPPED and not (p and p[0] in ignored)}


def update_managed_fields(
    old: JsonDict | None,
    new: JsonDict,
    manager: str,
    operation: str,
    now: str,
    *,
    subresource: str = "",
    schema: PatchSchema | None = None,
) -> JsonDict:
    """Record an ordinary create/update/patch by `manager` in `new`'s managedFields and return
    the new object (the inputs are not modified).

    As kube-apiserver does: the manager's entry (one per manager, operation, apiVersion and
    subresource) gains every field the request added or changed and gets `time = now`; fields
    the request changed or removed are taken away from every other entry (an update always
    wins, conflicts are only for apply); entries left empty disappear. Managed fields supplied
    in `new` replace the stored ones (that is how kubectl migrates client-side apply to
    server-side apply), `[{}]` clears them, and an existing object without managed fields stays
    untracked; a create whose managed fields already hold this manager's Apply entry (made by
    `server_side_apply`) is left as it is. `operation` is normally "Update". `schema` defaults
    to the built-in schema of `new`'s kind (give the CRD's for custom resources, so that their
    list items are keyed right).

    Simplified: there is no cap on the number of Update entries (the real server folds the
    oldest into "ancient-changes" past 10)."""
    if not isinstance(new, dict) or not isinstance(new.get("metadata"), dict):
        return new
    if schema is None:
        schema = _schema_for(new)
    supplied = new["metadata"].get("managedFields")
    if supplied == [{}]:
        entries: list[_Entry] = []
    elif supplied:
        entries = _decode_entries(supplied)
    else:
        entries = _decode_entries(((old or {}).get("metadata") or {}).get("managedFields"))
    if old is not None and not entries:
        # Objects that predate field tracking stay untracked until someone applies.
        return _without_managed_fields(new)
    if old is None and any(
        e.manager == manager and e.operation == "Apply" and e.subresource == subresource
        for e in entries
    ):
        # A create that `server_side_apply` already recorded: it owns what it applied, and an
        # Update entry on top would make every later apply by the same manager conflict.
        return new
    new_body = _without_managed_fields(new)
    if old is not None:
        baseline: Any = _without_managed_fields(old)
    elif schema.typed:
        baseline = {k: {} for k in ("spec", "status") if isinstance(new_body.get(k), dict)}
    else:
        baseline = _MISSING
    diff = _diff(baseline, new_body, schema.root)
    changed = diff.changed()
    touched = changed | diff.removed
    mine = _ignored(changed, ())
    api_version = str(new.get("apiVersion") or "")
    ident = (manager, operation, subresource, "" if operation == "Apply" else api_version)
    result: list[_Entry] = []
    own: _Entry | None = None
    for entry in entries:
        kept = entry.fields - touched
        if entry.ident == ident:
            own = replace(entry, fields=frozenset(kept))
        elif kept:
            result.append(replace(entry, fields=frozenset(kept)))
    if mine:
        fields = (own.fields if own else frozenset()) | mine
        own = _Entry(manager, operation, api_version, subresource, now, frozenset(fields))
    if own is not None and own.fields:
        result.append(own)
    return _with_managed_fields(new_body, result)


def _schema_for(obj: Mapping[str, Any]) -> PatchSchema:
    api_version = str(obj.get("apiVersion") or "")
    group = api_version.rpartition("/")[0]
    return builtin_patch_schema(group, str(obj.get("kind") or ""))


# --------------------------------------------------------------------------- server-side apply


def server_side_apply(
    live: JsonDict | None,
    applied: JsonDict,
    manager: str,
    schema: PatchSchema,
    *,
    force: bool,
    now: str,
    subresource: str = "",
    ignore: Collection[str] = (),
) -> JsonDict:
    """Server-side apply (`application/apply-patch+yaml`) of `applied` by `manager` onto `live`
    (None to create), following structured-merge-diff:

    1. the applied configuration is merged into the live object: objects field by field, lists
       per the schema (map lists by key, sets by value, atomic lists replaced; merged items keep
       the live order with the applied ones placed in the applied order);
    2. fields this manager applied last time and no longer applies are removed, unless another
       manager owns them (or something inside them) -- objects and lists emptied by that are
       removed too;
    3. fields the result changes that another manager owns -- Apply *and* Update managers, as
       in Kubernetes -- are conflicts: `ConflictError` unless `force`, which moves their
       ownership to this manager;
    4. the manager's Apply entry in managedFields becomes exactly the applied fields (FieldsV1),
       with `time = now` when the object changed.

    `ignore` names top-level fields that this endpoint resets (e.g. `("status",)` on the main
    resource of a type with a status subresource): they are neither owned nor conflicted.

    As kube-apiserver does for the manager "kubectl" (what `kubectl apply --server-side` uses),
    conflicts on fields that kubectl's last-applied-configuration annotation holds with their
    live values are not conflicts, and that annotation, if present, is refreshed with the
    applied configuration: this is how an object moves from client-side to server-side apply.

    Simplified: `null` values in the applied configuration are dropped before applying (rather
    than owned as explicit nulls); apiVersions of managers are not converted (all versions of a
    kind are assumed to share field paths); when a field is pruned its unowned sibling fields
    inside an otherwise owned object stay.
    """
    if not isinstance(applied, dict):
        raise PatchError("an apply patch must be a JSON object")
    if not manager:
        raise PatchError("fieldManager is required for apply requests")
    applied_meta = applied.get("metadata")
    if applied_meta is not None and not isinstance(applied_meta, dict):
        raise PatchError("metadata must be an object")
    if isinstance(applied_meta, dict) and applied_meta.get("managedFields"):
        raise PatchError("metadata.managedFields must be nil")
    config = _drop_nulls(applied)
    live_obj: Mapping[str, Any] = live if live is not None else {}
    entries = _decode_entries((live_obj.get("metadata") or {}).get("managedFields"))
    live_body = _without_managed_fields(live_obj)
    root = schema.root

    config_fields: set[FieldPath] = set()
    _collect_fields(config, root, (), config_fields)  # also validates the configuration
    config_fields = _ignored(config_fields, ignore)
    merged = _apply_merge(live_body, config, root, "")

    ident = (manager, "Apply", subresource, "")
    previous = next((e for e in entries if e.ident == ident), None)
    others = [e for e in entries if e is not previous]
    if previous is not None:
        owned = set(config_fields).union(*(e.fields for e in others))
        stale = set(previous.fields) - owned
        if stale:
            pruned = _prune(merged, stale, owned, root, ())
            merged = pruned if isinstance(pruned, dict) else {}

    diff = _diff(live_body if live is not None else _MISSING, merged, root)
    changed = _ignored(diff.changed(), ignore)
    removed = diff.removed
    conflicts: list[tuple[FieldPath, FieldConflict]] = []
    for entry in others:
        for path in sorted(entry.fields & changed, key=_path_sort_key):
            conflict = FieldConflict(
                _pretty_path(path),
                entry.manager,
                entry.operation,
                entry.api_version,
                entry.subresource,
                entry.time,
            )
            conflicts.append((path, conflict))
    if conflicts and not force and manager == "kubectl":
        # kube-apiserver lets kubectl take over, without --force-conflicts, the fields it
        # applied client-side before (kubectl migrates the managedFields right afterwards).
        allowed = _client_side_applied(live_obj, live_body, root)
        conflicts = [(path, c) for path, c in conflicts if path not in allowed]
    if conflicts and not force:
        raise ConflictError([c for _, c in conflicts])

    result: list[_Entry] = []
    for entry in others:
        kept = entry.fields - changed - removed
        if kept:
            result.append(replace(entry, fields=frozenset(kept)))
    if config_fields:
        object_changed = merged != live_body
        when = previous.time if previous is not None and not object_changed else now
        api_version = str(applied.get("apiVersion") or live_obj.get("apiVersion") or "")
        result.append(
            _Entry(manager, "Apply", api_version, subresource, when, frozenset(config_fields))
        )
    if manager == "kubectl":
        merged = _refresh_last_applied(merged, applied)
    return _with_managed_fields(merged, result)


def _path_sort_key(path: FieldPath) -> list[tuple[Any, ...]]:
    return [_element_sort_key(e) for e in path]


def _client_side_applied(
    live: Mapping[str, Any], live_body: Mapping[str, Any], root: SchemaNode
) -> set[FieldPath]:
    """The fields of kubectl's last-applied-configuration annotation whose values the live
    object still has: those that `kubectl apply --server-side` may take over from the
    client-side-apply manager without conflict."""
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    try:
        last = json.loads(annotations.get(_LAST_APPLIED) or "")
    except (TypeError, ValueError):
        return set()
    if not isinstance(last, dict) or last.get("apiVersion") != live.get("apiVersion"):
        return set()
    fields: set[FieldPath] = set()
    try:
        _collect_fields(last, root, (), fields)
    except PatchError:
        return set()
    differs = _diff(last, live_body, root)
    return fields - differs.added - differs.modified - differs.removed


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def _apply_merge(live: Any, config: Any, node: SchemaNode, where: str) -> Any:
    """Merge an applied value into a live one (structured-merge-diff's Merge, config wins)."""
    if isinstance(config, dict):
        if not isinstance(live, dict) or node.atomic:
            return config
        out = dict(live)
        for key, value in config.items():
            path = f"{where}.{key}"
            out[key] = (
                _apply_merge(live[key], value, node.child(key), path) if key in live else value
            )
        return out
    if isinstance(config, list):
        strategy = node.list_strategy
        if not isinstance(live, list) or strategy.type == "atomic" or not (live or config):
            return config
        return _apply_merge_list(live, config, node, where)
    return config


def _config_elements(items: Sequence[Any], strategy: ListStrategy, where: str) -> list[str]:
    elements: list[str] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        element = _item_element(item, strategy)
        if element is None:
            if strategy.type == "map":
                raise PatchError(
                    f"{where}: element {i}: associative list with keys has an element that "
                    f"omits all key fields {list(strategy.keys)}"
                )
            raise PatchError(f"{where}: element {i}: a set may only hold scalar values")
        if element in seen:
            raise PatchError(f"{where}: duplicate entries for key {_pretty_path((element,))}")
        seen.add(element)
        elements.append(element)
    return elements


def _apply_merge_list(
    live: Sequence[Any], config: Sequence[Any], node: SchemaNode, where: str
) -> list[Any]:
    """Merge a keyed list, ordering the result as structured-merge-diff does: live items keep
    their places, items both sides have follow the applied order, new items come where the
    applied list puts them relative to the shared ones."""
    strategy = node.list_strategy
    config_elements = _config_elements(config, strategy, where)
    config_items = dict(zip(config_elements, config, strict=True))
    live_elements: list[str] = []
    live_items: dict[str, Any] = {}
    for i, item in enumerate(live):
        # A live item without identity (written by a plain update) cannot be matched: keep it.
        element = _item_element(item, strategy) or f"?{i}"
        live_items[element] = _MISSING if element in live_items else item
        live_elements.append(element)

    def merge(element: str) -> Any:
        current = live_items.get(element, _MISSING)
        new = config_items[element]
        if current is _MISSING:
            return new
        return _apply_merge(current, new, node.item_node, f"{where}{_pretty_path((element,))}")

    shared = iter([e for e in config_elements if e in live_items])
    next_shared = next(shared, None)
    merged_config: set[str] = set()
    out: list[Any] = []
    li = ci = 0
    while li < len(live_elements) or ci < len(config_elements):
        if li < len(live_elements) and ci < len(config_elements):
            element = live_elements[li]
            if element == config_elements[ci]:
                merged_config.add(element)
                out.append(merge(element))
                li += 1
                ci += 1
                next_shared = next(shared, None)
                continue
            if element in config_items and next_shared is not None and next_shared != element:
                li += 1  # shared, but its turn comes with the applied order
                continue
        if li < len(live_elements):
            element = live_elements[li]
            if element not in config_items:
                out.append(live[li])
                li += 1
                continue
            if element in merged_config:
                li += 1
        if ci < len(config_elements):
            element = config_elements[ci]
            merged_config.add(element)
            out.append(merge(element))
            ci += 1
            if next_shared is not None and next_shared == element:
                next_shared = next(shared, None)
    return out


def _prefixes(paths: Iterable[FieldPath]) -> set[FieldPath]:
    """Every proper prefix of the given paths."""
    out: set[FieldPath] = set()
    for path in paths:
        for i in range(1, len(path)):
            out.add(path[:i])
    return out


def _prune(
    value: Any, stale: set[FieldPath], owned: set[FieldPath], node: SchemaNode, path: FieldPath
) -> Any:
    """Remove the `stale` fields from an applied result; returns `_MISSING` when `value` itself
    goes. A stale field that another manager owns something inside of is descended into rather
    than removed whole; a container that pruning empties goes too unless someone owns it."""
    return _Pruner(stale, owned).prune(value, node, path)


class _Pruner:
    def __init__(self, stale: set[FieldPath], owned: set[FieldPath]) -> None:
        self.stale = stale
        self.owned = owned
        self.inside_stale = _prefixes(stale)
        self.inside_owned = _prefixes(owned)

    def prune(self, value: Any, node: SchemaNode, path: FieldPath) -> Any:
        if isinstance(value, dict) and not node.atomic:
            out: JsonDict = {}
            changed = False
            for key, sub in value.items():
                new = self.child(sub, node.child(key), (*path, "f:" + key))
                if new is _MISSING:
                    changed = True
                    continue
                changed = changed or new is not sub
                out[key] = new
            return self.result(value, out, changed, path)
        if _is_granular_list(value, node):
            strategy = node.list_strategy
            items: list[Any] = []
            changed = False
            for item in value:
                element = _item_element(item, strategy)
                if element is None:
                    items.append(item)
                    continue
                new = self.child(item, node.item_node, (*path, element))
                if new is _MISSING:
                    changed = True
                    continue
                changed = changed or new is not item
                items.append(new)
            return self.result(value, items, changed, path)
        return value

    def child(self, value: Any, node: SchemaNode, path: FieldPath) -> Any:
        if path in self.stale and path not in self.inside_owned:
            return _MISSING
        if path in self.stale or path in self.inside_stale:
            return self.prune(value, node, path)
        return value

    def result(self, before: Any, after: Any, changed: bool, path: FieldPath) -> Any:
        if not changed:
            return before
        if not after and path and path not in self.owned and path not in self.inside_owned:
            return _MISSING
        return after


def _refresh_last_applied(obj: JsonDict, applied: Mapping[str, Any]) -> JsonDict:
    """kube-apiserver keeps kubectl's client-side-apply annotation in step when kubectl applies
    server-side, so that switching back to client-side apply sees the right baseline."""
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    if not isinstance(annotations, dict) or _LAST_APPLIED not in annotations:
        return obj
    config = dict(applied)
    config_meta = dict(config.get("metadata") or {})
    config_annotations = {
        k: v for k, v in (config_meta.get("annotations") or {}).items() if k != _LAST_APPLIED
    }
    if config_annotations:
        config_meta["annotations"] = config_annotations
    else:
        config_meta.pop("annotations", None)
    config["metadata"] = config_meta
    out = dict(obj)
    out["metadata"] = dict(meta or {})
    out["metadata"]["annotations"] = {
        **annotations,
        _LAST_APPLIED: _go_json(config) + "\n",
    }
    return out
