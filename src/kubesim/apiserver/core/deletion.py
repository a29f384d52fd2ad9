"""What a DELETE does to an object before the store sees it, as kube-apiserver decides it.

Pure functions over the object and the request's DeleteOptions: preconditions (uid,
resourceVersion), the propagation policy (`Orphan`, `Background`, `Foreground`, and the
`orphan` / `foregroundDeletion` finalizers they imply), a pod's grace period, the
deletionTimestamp, and whether the object must stay (finalizers, a kubelet's grace, a
namespace's content). `ApiCore.delete` runs admission and writes the result.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.clock import now_rfc3339
from kubesim.machinery import field as fe
from kubesim.machinery.errors import bad_request, conflict, invalid

__all__ = [
    "check_preconditions",
    "default_propagation",
    "delete_options",
    "deletion_blocked",
    "graceful_pending",
    "mark_deleted",
    "propagation_policy",
]

_POLICIES = ("Foreground", "Background", "Orphan")
_INT64 = (-(2**63), 2**63 - 1)
_DECIMAL = re.compile(r"[+-]?[0-9]+")
# DeleteOptions' fields and their JSON types, as Go decodes them (bool is no integer).
_OPTION_TYPES: dict[str, tuple[type, ...]] = {
    "gracePeriodSeconds": (int,),
    "propagationPolicy": (str,),
    "orphanDependents": (bool,),
    "preconditions": (dict,),
    "dryRun": (list,),
    "apiVersion": (str,),
    "kind": (str,),
}


def _int64(value: str, param: str) -> int:
    """A query parameter as Go's strconv.ParseInt(value, 10, 64) reads it."""
    if not _DECIMAL.fullmatch(value):
        raise bad_request(f'{param}: strconv.ParseInt: parsing "{value}": invalid syntax')
    number = int(value)
    if not _INT64[0] <= number <= _INT64[1]:
        raise bad_request(f'{param}: strconv.ParseInt: parsing "{value}": value out of range')
    return number


def delete_options(body: Any, query: Mapping[str, str]) -> dict[str, Any]:
    """A DELETE's DeleteOptions, from its body (an object or nothing) and the query parameters
    that override it; a body or parameter of the wrong type is kube-apiserver's 400, not an
    error further in."""
    if body is None:
        options: dict[str, Any] = {}
    elif isinstance(body, dict):
        options = dict(body)
    else:
        raise bad_request(
            f"json: cannot unmarshal {_json_type(body)} into Go value of type v1.DeleteOptions"
        )
    for key, types in _OPTION_TYPES.items():
        value = options.get(key)
        if value is None:
            continue
        if not isinstance(value, types) or (bool not in types and isinstance(value, bool)):
            raise bad_request(
                f"json: cannot unmarshal {_json_type(value)} into Go struct field "
                f"DeleteOptions.{key} of type {types[0].__name__}"
            )
    grace = options.get("gracePeriodSeconds")
    if grace is not None and not _INT64[0] <= grace <= _INT64[1]:
        raise bad_request(
            f"json: cannot unmarshal number {grace} into Go struct field "
            "DeleteOptions.gracePeriodSeconds of type int64"
        )
    pre = options.get("preconditions") or {}
    for key in ("uid", "resourceVersion"):
        if pre.get(key) is not None and not isinstance(pre[key], str):
            raise bad_request(
                f"json: cannot unmarshal {_json_type(pre[key])} into Go struct field "
                f"Preconditions.preconditions.{key} of type string"
            )
    if "propagationPolicy" in query:
        options["propagationPolicy"] = query["propagationPolicy"]
    if "gracePeriodSeconds" in query:
        options["gracePeriodSeconds"] = _int64(query["gracePeriodSeconds"], "gracePeriodSeconds")
    if "orphanDependents" in query:
        options["orphanDependents"] = query["orphanDependents"].lower() in ("true", "1", "")
    return options


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def default_propagation(rt: ResourceType) -> str:
    # batch/v1 Jobs orphan their pods when deleted through the API without a policy.
    if rt.group == "batch" and rt.plural == "jobs":
        return "Orphan"
    return "Background"


def check_preconditions(
    rt: ResourceType, name: str, obj: Mapping[str, Any], options: Mapping[str, Any]
) -> None:
    """DeleteOptions.preconditions: a 409 Conflict when uid or resourceVersion differ."""
    pre = options.get("preconditions") or {}
    if pre.get("uid") and pre["uid"] != obj["metadata"].get("uid"):
        raise conflict(
            rt.group,
            rt.plural,
            name,
            f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: "
            f"{obj['metadata'].get('uid')}",
        )
    if pre.get("resourceVersion") and pre["resourceVersion"] != obj["metadata"]["resourceVersion"]:
        raise conflict(
            rt.group,
            rt.plural,
            name,
            f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
            f"ResourceVersion in object meta: {obj['metadata']['resourceVersion']}",
        )


def propagation_policy(rt: ResourceType, name: str, options: Mapping[str, Any]) -> str:
    """propagationPolicy, else the deprecated orphanDependents, else the type's default."""
    policy = options.get("propagationPolicy")
    if policy is None and options.get("orphanDependents") is not None:
        policy = "Orphan" if options["orphanDependents"] else "Background"
    if policy is None:
        policy = default_propagation(rt)
    if policy not in _POLICIES:
        raise invalid(
            rt.group,
            rt.kind,
            name,
            [fe.not_supported("propagationPolicy", policy, _POLICIES)],
        )
    return str(policy)


def mark_deleted(
    rt: ResourceType,
    obj: dict[str, Any],
    policy: str,
    has_dependents: bool,
    grace_seconds: Any,
    graceful_pods: bool,
) -> dict[str, Any]:
    """The object as the deletion leaves it: finalizers for the policy, a pod's grace
    period, deletionTimestamp, a namespace Terminating."""
    meta = dict(obj.get("metadata") or {})
    new = {**obj, "metadata": meta}
    finalizers = list(meta.get("finalizers") or [])
    if policy == "Orphan" and has_dependents and "orphan" not in finalizers:
        finalizers.append("orphan")
    # As kube-apiserver: the finalizer whether or not there are dependents (the garbage
    # collector lifts it), so a client waiting for it sees it on a leaf object too.
    if policy == "Foreground" and "foregroundDeletion" not in finalizers:
        finalizers.append("foregroundDeletion")
    if policy != "Orphan" and "orphan" in finalizers and not meta.get("deletionTimestamp"):
        finalizers.remove("orphan")
    if finalizers:
        meta["finalizers"] = finalizers
    grace = grace_seconds
    if rt.group == "" and rt.plural == "pods" and graceful_pods:
        if grace is None:
            grace = (new.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
        if meta.get("deletionGracePeriodSeconds") is not None:
            grace = min(int(grace), int(meta["deletionGracePeriodSeconds"]))
        meta["deletionGracePeriodSeconds"] = int(grace)
    if meta.get("deletionTimestamp") is None:
        meta["deletionTimestamp"] = now_rfc3339()
    if rt.key == ("", "namespaces"):
        new["status"] = {**(new.get("status") or {}), "phase": "Terminating"}
    return new


def graceful_pending(rt: ResourceType, obj: Mapping[str, Any], graceful_pods: bool) -> bool:
    """A pod on a node is removed by its kubelet after the grace period, not at once."""
    if not (graceful_pods and rt.group == "" and rt.plural == "pods"):
        return False
    meta = obj["metadata"]
    return bool(
        (obj.get("spec") or {}).get("nodeName")
        and meta.get("deletionGracePeriodSeconds", 0) > 0
        and (obj.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
    )


def deletion_blocked(rt: ResourceType, obj: Mapping[str, Any], graceful_pods: bool) -> bool:
    """Whether a deleted object must stay: finalizers, a kubelet's grace, namespace content."""
    if obj["metadata"].get("finalizers") or graceful_pending(rt, obj, graceful_pods):
        return True
    return rt.key == ("", "namespaces") and bool((obj.get("spec") or {}).get("finalizers"))
