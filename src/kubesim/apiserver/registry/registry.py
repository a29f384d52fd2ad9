"""The catalogue of resource types the simulated API server serves.

Built-in types are declared here once; CRDs add types at run time. Everything the
server needs to route a request, answer discovery, and pick storage semantics for a
type (namespaced or not, which subresources, whether the main resource ignores
`.status`) lives on `ResourceType`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

STANDARD_VERBS = (
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
)


@dataclass(frozen=True)
class ResourceType:
    """One served resource, e.g. `batch/v1 jobs`."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: frozenset[str] = frozenset()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = STANDARD_VERBS
    # For custom resources: the served versions, their schemas and printer columns.
    crd: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    singular_name: str = ""
    # A view of another type's objects, stored as (group, version, plural) of that type and
    # converted at the API boundary: events.k8s.io/v1 Events are core/v1 Events
    # (`eventsapi.py`), as in kube-apiserver.
    storage: tuple[str, str, str] | None = None

    @property
    def singular(self) -> str:
        return self.singular_name or self.kind.lower()

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> tuple[str, str]:
        """Storage key: one store per group and plural, whatever the version (the stored
        type's, for a view)."""
        if self.storage is not None:
            return (self.storage[0], self.storage[2])
        return (self.group, self.plural)

    @property
    def has_status_subresource(self) -> bool:
        return "status" in self.subresources

    @property
    def qualified(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


def _rt(
    group: str,
    version: str,
    kind: str,
    plural: str,
    namespaced: bool = True,
    short: tuple[str, ...] = (),
    sub: tuple[str, ...] = (),
    categories: tuple[str, ...] = (),
    verbs: tuple[str, ...] = STANDARD_VERBS,
) -> ResourceType:
    return ResourceType(
        group, version, kind, plural, namespaced, short, frozenset(sub), categories, verbs
    )


ALL = ("all",)
BUILTIN_TYPES: tuple[ResourceType, ...] = (
    _rt("", "v1", "Namespace", "namespaces", False, ("ns",), ("status", "finalize")),
    _rt(
        "",
        "v1",
        "Pod",
        "pods",
        True,
        ("po",),
        ("status", "binding", "log", "eviction", "exec", "attach", "portforward"),
        ALL,
    ),
    _rt("", "v1", "Service", "services", True, ("svc",), ("status",), ALL),
    _rt("", "v1", "Endpoints", "endpoints", True, ("ep",)),
    _rt("", "v1", "Event", "events", True, ("ev",)),
    _rt("", "v1", "Node", "nodes", False, ("no",), ("status",)),
    _rt("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, ("pvc",), ("status",)),
    _rt("", "v1", "PersistentVolume", "persistentvolumes", False, ("pv",), ("status",)),
    _rt("", "v1", "Secret", "secrets"),
    _rt("", "v1", "ConfigMap", "configmaps", True, ("cm",)),
    _rt("", "v1", "ServiceAccount", "serviceaccounts", True, ("sa",), ("token",)),
    _rt("", "v1", "ResourceQuota", "resourcequotas", True, ("quota",), ("status",)),
    _rt("", "v1", "LimitRange", "limitranges", True, ("limits",)),
    _rt(
        "",
        "v1",
        "ReplicationController",
        "replicationcontrollers",
        True,
        ("rc",),
        ("status", "scale"),
        ALL,
    ),
    _rt("apps", "v1", "Deployment", "deployments", True, ("deploy",), ("status", "scale"), ALL),
    _rt("apps", "v1", "ReplicaSet", "replicasets", True, ("rs",), ("status", "scale"), ALL),
    _rt("apps", "v1", "StatefulSet", "statefulsets", True, ("sts",), ("status", "scale"), ALL),
    _rt("apps", "v1", "DaemonSet", "daemonsets", True, ("ds",), ("status",), ALL),
    _rt("apps", "v1", "ControllerRevision", "controllerrevisions", True),
    _rt("batch", "v1", "Job", "jobs", True, (), ("status",), ALL),
    _rt("batch", "v1", "CronJob", "cronjobs", True, ("cj",), ("status",), ALL),
    _rt("coordination.k8s.io", "v1", "Lease", "leases", True),
    replace(
        _rt("events.k8s.io", "v1", "Event", "events", True, ("ev",)), storage=("", "v1", "events")
    ),
    _rt("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True, ("pdb",), ("status",)),
    _rt("storage.k8s.io", "v1", "StorageClass", "storageclasses", False, ("sc",)),
    _rt("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False, ("pc",)),
    _rt("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", True),
    _rt("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", True, ("netpol",)),
    _rt("networking.k8s.io", "v1", "Ingress", "ingresses", True, ("ing",), ("status",)),
    _rt(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        False,
        ("crd", "crds"),
        ("status",),
    ),
    _rt(
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        False,
    ),
    _rt(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        False,
    ),
    _rt(
        "apiregistration.k8s.io",
        "v1",
        "APIService",
        "apiservices",
        False,
        (),
        ("status",),
        ("api-extensions",),
    ),
    _rt(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicy",
        "validatingadmissionpolicies",
        False,
        sub=("status",),
    ),
    _rt(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
        False,
    ),
    _rt("rbac.authorization.k8s.io", "v1", "Role", "roles", True),
    _rt("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True),
    _rt("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False),
    _rt("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False),
    # The review APIs (reviews.py): create only, nothing stored.
    _rt(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        False,
        verbs=("create",),
    ),
    _rt(
        "authorization.k8s.io",
        "v1",
        "SubjectAccessReview",
        "subjectaccessreviews",
        False,
        verbs=("create",),
    ),
    _rt("authentication.k8s.io", "v1", "TokenReview", "tokenreviews", False, verbs=("create",)),
    _rt(
        "authentication.k8s.io",
        "v1",
        "SelfSubjectReview",
        "selfsubjectreviews",
        False,
        verbs=("create",),
    ),
)


class Registry:
    """The served types, looked up by (group, version, plural) or kind; CRDs come and go."""

    def __init__(self) -> None:
        self._by_gvr: dict[tuple[str, str, str], ResourceType] = {}
        self._by_gvk: dict[tuple[str, str, str], ResourceType] = {}
        # Storage key -> (group, version, plural) -> type: every type served from one store.
        self._by_key: dict[tuple[str, str], dict[tuple[str, str, str], ResourceType]] = {}
        for rt in BUILTIN_TYPES:
            self.add(rt)

    def add(self, rt: ResourceType) -> None:
        gvr = (rt.group, rt.version, rt.plural)
        replaced = self._by_gvr.get(gvr)
        if replaced is not None:
            self._by_key.get(replaced.key, {}).pop(gvr, None)
        self._by_gvr[gvr] = rt
        self._by_gvk[(rt.group, rt.version, rt.kind)] = rt
        self._by_key.setdefault(rt.key, {})[gvr] = rt

    def remove_group_resource(self, group: str, plural: str) -> list[ResourceType]:
        gone = [rt for rt in self._by_gvr.values() if rt.group == group and rt.plural == plural]
        for rt in gone:
            self._by_gvr.pop((rt.group, rt.version, rt.plural), None)
            self._by_gvk.pop((rt.group, rt.version, rt.kind), None)
            self._by_key.get(rt.key, {}).pop((rt.group, rt.version, rt.plural), None)
        return gone

    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_gvr.get((group, version, plural))

    def by_kind(self, group: str, version: str, kind: str) -> ResourceType | None:
        return self._by_gvk.get((group, version, kind))

    def sharing_storage(self, key: tuple[str, str]) -> list[ResourceType]:
        """The served types stored under `key` (`ResourceType.key`): a dict lookup, for
        admission asks on every request a webhook's rules do not match as such."""
        return list(self._by_key.get(key, {}).values())

    def all(self) -> list[ResourceType]:
        return list(self._by_gvr.values())

    def groups(self) -> dict[str, list[str]]:
        """Group name → served versions, preferred (first declared) first; core group is ''."""
        out: dict[str, list[str]] = {}
        for rt in self._by_gvr.values():
            versions = out.setdefault(rt.group, [])
            if rt.version not in versions:
                versions.append(rt.version)
        return out

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [rt for rt in self._by_gvr.values() if rt.group == group and rt.version == version]
