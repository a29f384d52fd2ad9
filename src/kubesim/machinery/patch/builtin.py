"""The patch schemas of the built-in types: one table of merge keys and list types, from the
`patchStrategy`/`patchMergeKey` tags and `+listType`/`+mapType`/`+structType` markers of
k8s.io/api, and `builtin_patch_schema(group, kind)` over it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

from kubesim.machinery.patch.schema import ListStrategy, PatchSchema, SchemaNode

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
    ("storage.k8s.io", "StorageClass"): "MetaOnly",
    ("networking.k8s.io", "NetworkPolicy"): "NetworkPolicy",
    ("apiextensions.k8s.io", "CustomResourceDefinition"): "CustomResourceDefinition",
}

_ATOMIC_NODE: Final = SchemaNode(atomic=True)


@cache
def builtin_node(type_name: str) -> SchemaNode:
    if type_name in _ATOMIC_STRUCTS:
        return _ATOMIC_NODE
    return SchemaNode(fields={name: _spec_node(spec) for name, spec in _TYPES[type_name].items()})


def _spec_node(spec: _Spec) -> SchemaNode:
    if isinstance(spec, str):
        return builtin_node(spec)
    if isinstance(spec, _AtomicMap):
        return _ATOMIC_NODE
    item = builtin_node(spec.item) if spec.item else None
    return SchemaNode(list=spec.strategy, item=item)


@cache
def builtin_patch_schema(group: str, kind: str) -> PatchSchema:
    """Merge semantics of a built-in kind. Unknown kinds get a generic schema that still knows
    ObjectMeta, pod templates under `spec.template` / `spec.jobTemplate` and `status.conditions`,
    so strategic merge patch of containers by name works for any workload-like kind."""
    type_name = _KINDS.get((group, kind), "Generic")
    name = f"{group}/{kind}" if group else kind
    return PatchSchema(builtin_node(type_name), name, typed=(group, kind) in _KINDS)
