"""Pure steps of a write on the objects themselves: type meta and metadata checks, the
fields the server sets on create and keeps on update, generation, no-op detection.

`ApiCore` (`apicore.py`) runs them in kube-apiserver's order; none touches the store but
`check_namespace`, which reads it.
"""

from __future__ import annotations

import os
import random
from typing import Any

from kubesim.apiserver.core.store import Store
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.clock import now_rfc3339
from kubesim.machinery import field as fe
from kubesim.machinery.errors import ApiError, Cause, bad_request, conflict, invalid, not_found
from kubesim.machinery.uids import new_uid
from kubeutil import names

__all__ = [
    "bind_pod",
    "carry_over",
    "check_kind",
    "check_namespace",
    "check_version",
    "content",
    "copy_meta",
    "create_namespace",
    "go_json_type",
    "same_object",
    "set_create_fields",
    "tracks_generation",
    "validate_meta",
    "with_pod_scheduled",
]

_SUFFIX_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # the alphabet of Kubernetes' generateName
# generateName's suffixes come from a seeded pseudo-random generator, as Kubernetes' do (Go's
# math/rand): one OS random read per suffix character cost more than the rest of the name.
_SUFFIX_RNG = random.Random()
os.register_at_fork(after_in_child=_SUFFIX_RNG.seed)  # a forked child draws other names


# Built-in types whose strategy maintains metadata.generation (custom resources always do).
_GENERATION_TYPES = frozenset(
    {
        ("batch", "jobs"),
        ("batch", "cronjobs"),
        ("apps", "deployments"),
        ("apps", "replicasets"),
        ("", "replicationcontrollers"),
        ("apps", "statefulsets"),
        ("apps", "daemonsets"),
        ("policy", "poddisruptionbudgets"),
        ("networking.k8s.io", "networkpolicies"),
        ("networking.k8s.io", "ingresses"),
        ("apiextensions.k8s.io", "customresourcedefinitions"),
    }
)


def tracks_generation(rt: ResourceType) -> bool:
    return rt.crd is not None or rt.key in _GENERATION_TYPES


def copy_meta(obj: dict[str, Any]) -> dict[str, Any]:
    """A shallow copy of the object with its own metadata dict (so metadata can be edited)."""
    out = dict(obj)
    out["metadata"] = dict(obj.get("metadata") or {})
    return out


def content(obj: dict[str, Any]) -> dict[str, Any]:
    """What counts as spec for generation: everything but metadata and status."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def _untimed(entries: Any) -> Any:
    if not isinstance(entries, list):
        return entries
    return [
        {k: v for k, v in e.items() if k != "time"} if isinstance(e, dict) else e for e in entries
    ]


def same_object(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """Equal but for resourceVersion and managedFields timestamps: a write that changes nothing."""
    if new == old:
        return True
    new_meta, old_meta = new.get("metadata") or {}, old.get("metadata") or {}
    if {k: v for k, v in new.items() if k != "metadata"} != {
        k: v for k, v in old.items() if k != "metadata"
    }:
        return False
    skip = ("resourceVersion", "managedFields")
    if {k: v for k, v in new_meta.items() if k not in skip} != {
        k: v for k, v in old_meta.items() if k not in skip
    }:
        return False
    return bool(_untimed(new_meta.get("managedFields")) == _untimed(old_meta.get("managedFields")))


def create_namespace(rt: ResourceType, meta: dict[str, Any], namespace: str) -> str:
    """The namespace an object is created in: the URL's, which the body's must match (none
    for a cluster-scoped type); written into `meta`."""
    if rt.namespaced:
        body_ns = meta.get("namespace")
        if body_ns and namespace and body_ns != namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent "
                "on the request"
            )
        namespace = namespace or body_ns or ""
        meta["namespace"] = namespace
    else:
        meta.pop("namespace", None)
        namespace = ""
    return namespace


def set_create_fields(rt: ResourceType, meta: dict[str, Any]) -> None:
    """The metadata the server sets on create: a generated name, uid, creationTimestamp,
    generation; a client's values of the server's fields are dropped."""
    if not meta.get("name"):
        prefix = meta.get("generateName")
        if not prefix:
            raise invalid(
                rt.group,
                rt.kind,
                "",
                [fe.required("metadata.name", "name or generateName is required")],
            )
        meta["name"] = prefix + "".join(_SUFFIX_RNG.choices(_SUFFIX_CHARS, k=5))
    for server_field in (
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
    ):
        meta.pop(server_field, None)
    meta["uid"] = new_uid()
    meta["creationTimestamp"] = now_rfc3339()
    if tracks_generation(rt):
        meta["generation"] = 1
    else:
        meta.pop("generation", None)


def bind_pod(
    rt: ResourceType, name: str, pod: dict[str, Any], binding: dict[str, Any]
) -> dict[str, Any]:
    """`pod` bound as `binding` says (pods/binding); a pod already assigned, or whose uid is
    not the Binding's `metadata.uid` (when given), is a 409 Conflict."""
    node = ((binding or {}).get("target") or {}).get("name")
    if not node:
        raise bad_request("binding target name is required")
    want_uid = ((binding or {}).get("metadata") or {}).get("uid")
    if want_uid and want_uid != pod["metadata"].get("uid"):
        raise conflict(
            rt.group,
            rt.plural,
            name,
            f"Precondition failed: UID in precondition: {want_uid}, "
            f"UID in object meta: {pod['metadata'].get('uid', '')}",
        )
    assigned = (pod.get("spec") or {}).get("nodeName")
    if assigned:
        raise ApiError(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is '
            f'already assigned to node "{assigned}"',
        )
    bound = copy_meta({**pod, "spec": {**pod["spec"], "nodeName": str(node)}})
    extra = ((binding or {}).get("metadata") or {}).get("annotations")
    if extra:
        bound["metadata"]["annotations"] = {**(bound["metadata"].get("annotations") or {}), **extra}
    bound["status"] = with_pod_scheduled(pod.get("status") or {}, "True")
    return bound


def with_pod_scheduled(
    status: dict[str, Any], value: str, reason: str = "", message: str = ""
) -> dict[str, Any]:
    """`status` with its PodScheduled condition set as podutil.UpdatePodCondition sets it:
    reason and message replaced, the transition time kept only when the status is unchanged.
    The binding writes it True with nodeName; the scheduler False when a pod does not fit."""
    conds = list(status.get("conditions") or [])
    old = next((c for c in conds if c.get("type") == "PodScheduled"), None)
    cond: dict[str, Any] = {
        "type": "PodScheduled",
        "status": value,
        "lastProbeTime": None,
        "lastTransitionTime": (
            old.get("lastTransitionTime")
            if old is not None and old.get("status") == value
            else now_rfc3339()
        ),
    }
    if reason:
        cond["reason"] = reason
    if message:
        cond["message"] = message
    if old is None:
        conds.append(cond)
    else:
        conds = [cond if c is old else c for c in conds]
    return {**status, "conditions": conds}


def check_version(rt: ResourceType, name: str, want: str | None, current: dict[str, Any]) -> None:
    """A write that names a resourceVersion (`want`) applies to that version only: another
    `current` one is kube-apiserver's 409 Conflict."""
    if want and want != current["metadata"]["resourceVersion"]:
        raise conflict(
            rt.group,
            rt.plural,
            name,
            "the object has been modified; please apply your changes to the latest version "
            "and try again",
        )


def check_kind(rt: ResourceType, obj: dict[str, Any]) -> None:
    kind = obj.get("kind")
    api_version = obj.get("apiVersion")
    for name, value in (("apiVersion", api_version), ("kind", kind)):
        if value is not None and not isinstance(value, str):
            # kube-apiserver reads the type meta with Go's json before anything else
            raise bad_request(
                "couldn't get version/kind; json parse error: json: cannot unmarshal "
                f"{go_json_type(value)} into Go struct field .{name} of type string"
            )
    if kind and kind != rt.kind:
        raise bad_request(
            f"the kind of the object ({kind}) does not match the resource ({rt.kind})"
        )
    if api_version and api_version.rpartition("/")[0] != rt.group:
        raise bad_request(
            f"the API version in the data ({api_version}) does not match the expected API "
            f"version ({rt.group_version})"
        )
    obj["apiVersion"] = rt.group_version
    obj["kind"] = rt.kind


def validate_meta(rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
    """The rules every object's metadata follows: its name, annotation size, label values."""
    causes: list[Cause] = []
    name = obj["metadata"].get("name", "")
    label_only = rt.plural in ("namespaces", "services") and rt.group == ""
    check = names.is_dns1123_label if label_only else names.is_dns1123_subdomain
    # RBAC objects and CRDs have path-segment names (e.g. "system:foo"), not DNS ones.
    # APIServices are `version.group` path segments, checked by their strategy.
    path_segment = rt.plural in ("customresourcedefinitions", "apiservices")
    if rt.group != "rbac.authorization.k8s.io" and not path_segment:
        causes += [fe.invalid("metadata.name", name, msg) for msg in check(name)]
    annotations = obj["metadata"].get("annotations") or {}
    total = sum(len(k) + len(v) for k, v in annotations.items() if isinstance(v, str))
    if total > 262144:  # kube-apiserver's TotalAnnotationSizeLimitB
        causes.append(fe.too_long("metadata.annotations", 262144))
    for key, value in (obj["metadata"].get("labels") or {}).items():
        if not isinstance(value, str):
            causes.append(
                Cause("FieldValueInvalid", "label values must be strings", "metadata.labels")
            )
        elif len(value) > names.LABEL_VALUE_MAX_LENGTH:
            causes.append(
                fe.invalid(
                    f"metadata.labels[{key}]",
                    value,
                    names.max_len_error(names.LABEL_VALUE_MAX_LENGTH),
                )
            )
    return causes


def check_namespace(store: Store, rt: ResourceType, namespace: str, creating: bool) -> None:
    """The namespace of a namespaced write exists (and, for a create, is not terminating)."""
    if not rt.namespaced:
        return
    if not namespace:
        raise bad_request("the server could not find the requested resource: no namespace")
    ns = store.get(("", "namespaces"), ("", namespace))
    if ns is None:
        raise not_found("", "namespaces", namespace)
    if creating and ns["metadata"].get("deletionTimestamp"):
        raise ApiError(
            403,
            "Forbidden",
            f"{rt.kind.lower()} is forbidden: unable to create new content in namespace "
            f"{namespace} because it is being terminated",
            kind=rt.plural,
        )


def carry_over(
    rt: ResourceType, old: dict[str, Any], obj: dict[str, Any], subresource: str
) -> dict[str, Any]:
    """`obj` as an update of `old` may write it: the fields the server owns kept from `old`,
    and only `.status` from a status write (or everything but `.status` otherwise)."""
    meta = obj["metadata"]
    old_meta = old["metadata"]
    for key in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"):
        if key in old_meta:
            meta[key] = old_meta[key]
        else:
            meta.pop(key, None)
    meta["name"] = old_meta["name"]
    if rt.namespaced:
        meta["namespace"] = old_meta.get("namespace", "")
    else:
        meta.pop("namespace", None)
    if subresource == "status":
        # The status subresource changes .status only (and nothing of metadata but managedFields).
        new = dict(old)
        new["metadata"] = dict(old_meta)
        if "status" in obj:
            new["status"] = obj["status"]
        else:
            new.pop("status", None)
        return new
    if rt.has_status_subresource and subresource != "binding":
        # (a binding writes PodScheduled with nodeName, as kube-apiserver's BindingREST does)
        if "status" in old:
            obj["status"] = old["status"]
        else:
            obj.pop("status", None)
    return obj


def go_json_type(value: Any) -> str:
    """How Go's encoding/json names a JSON value's type in an unmarshal error."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "string"
