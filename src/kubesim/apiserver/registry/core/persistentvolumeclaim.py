"""core/v1 PersistentVolumeClaim, and the storage rules PersistentVolumes share with it, as
kube-apiserver has them (`pkg/apis/core/validation`, the types' defaulters): defaults
(Filesystem, phase Pending), the spec rules, and a spec that only binding (volumeName once, a
class once) and a bound claim's expansion may change.

Pure: every function reads the objects it is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubesim.apiserver.registry.columns import (
    Obj,
    access_modes,
    age,
    claim_class,
    name,
    storage_phase,
    vac,
    volume_mode,
)
from kubesim.apiserver.registry.resource import Resource, always
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.apiserver.registry.strategy import Strategy
from kubesim.machinery import field as fe
from kubesim.machinery.errors import Cause
from kubeutil.quantity import parse_quantity

__all__ = [
    "ACCESS_MODES",
    "RESOURCE",
    "VOLUME_MODES",
    "PersistentVolumeClaimStrategy",
    "access_modes_causes",
    "spec_of",
    "storage_bytes",
    "storage_request_causes",
]

TYPE = ResourceType(
    "",
    "v1",
    "PersistentVolumeClaim",
    "persistentvolumeclaims",
    True,
    short_names=("pvc",),
    subresources=frozenset(("status",)),
)


ACCESS_MODES: Final = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
VOLUME_MODES: Final = ("Block", "Filesystem")
_CLAIM_IMMUTABLE: Final = (
    "spec is immutable after creation except resources.requests and "
    "volumeAttributesClassName for bound claims"
)


def storage_bytes(value: Any) -> int | None:
    """A storage quantity in bytes, rounded up; None when absent or not a quantity."""
    if value is None:
        return None
    try:
        q = parse_quantity(value)
    except (ValueError, TypeError):
        return None
    return -(-q.numerator // q.denominator)


def spec_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    return _dict(obj.get("spec"))


def _dict(value: Any) -> dict[str, Any]:
    """`value` if it is an object, else empty: malformed input is reported, never a crash."""
    return value if isinstance(value, dict) else {}


def _requests(spec: Mapping[str, Any]) -> dict[str, Any]:
    return _dict(_dict(spec.get("resources")).get("requests"))


def access_modes_causes(path: str, modes: Any, what: str) -> list[Cause]:
    if not modes:
        return [fe.required(path, what)]
    if not isinstance(modes, list):
        return [fe.invalid(path, modes, "must be a list of access modes")]
    causes = [fe.not_supported(path, m, ACCESS_MODES) for m in modes if m not in ACCESS_MODES]
    if "ReadWriteOncePod" in modes and len(modes) > 1:
        causes.append(fe.forbidden(path, "may not use ReadWriteOncePod with other access modes"))
    return causes


def storage_request_causes(path: str, value: Any) -> list[Cause]:
    if value is None:
        return [fe.required(path)]
    amount = storage_bytes(value)
    if amount is None:
        return [fe.invalid(path, value, "quantities must match the regular expression")]
    if amount <= 0:
        return [fe.invalid(path, str(value), "must be greater than zero")]
    return []


class PersistentVolumeClaimStrategy(Strategy):
    """core/v1 PersistentVolumeClaim: defaults (Filesystem, phase Pending), the spec rules,
    and a spec that only binding (volumeName once, a class once) and a bound claim's
    expansion may change."""

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        spec = dict(spec_of(obj))
        spec.setdefault("volumeMode", "Filesystem")
        obj["spec"] = spec
        obj["status"] = {"phase": "Pending"}
        return obj

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        spec = spec_of(obj)
        causes = access_modes_causes(
            "spec.accessModes", spec.get("accessModes"), "at least 1 access mode is required"
        )
        causes += storage_request_causes("spec.resources[storage]", _requests(spec).get("storage"))
        if spec.get("volumeMode") not in VOLUME_MODES:
            causes.append(fe.not_supported("spec.volumeMode", spec.get("volumeMode"), VOLUME_MODES))
        if old is None:
            return causes
        return causes + _claim_update(obj, old)


def _claim_update(obj: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    spec, old_spec = dict(spec_of(obj)), dict(spec_of(old))
    # What may change: volumeName and storageClassName from unset, a bound claim's requests.
    if not old_spec.get("volumeName"):
        old_spec["volumeName"] = spec.get("volumeName")
    if old_spec.get("storageClassName") is None:
        old_spec["storageClassName"] = spec.get("storageClassName")
    old_spec["volumeAttributesClassName"] = spec.get("volumeAttributesClassName")
    old_status = _dict(old.get("status"))
    bound = old_status.get("phase") == "Bound"
    causes: list[Cause] = []
    if bound:
        capacity = _dict(old_status.get("capacity")).get("storage")
        new_size = storage_bytes(_requests(spec).get("storage"))
        cap_size = storage_bytes(capacity)
        if new_size is not None and cap_size is not None and new_size < cap_size:
            causes.append(
                fe.forbidden(
                    "spec.resources.requests.storage", "field can not be less than status.capacity"
                )
            )
        old_spec["resources"] = {
            **_dict(old_spec.get("resources")),
            "requests": _dict(spec.get("resources")).get("requests"),
        }
    if {k: v for k, v in spec.items() if v is not None} != {
        k: v for k, v in old_spec.items() if v is not None
    }:
        causes.append(fe.forbidden("spec", _CLAIM_IMMUTABLE))
    return causes


def _pvc_capacity(o: Obj) -> str:
    if not (o.get("spec") or {}).get("volumeName"):
        return ""
    return str(((o.get("status") or {}).get("capacity") or {}).get("storage") or "0")


def _pvc_modes(o: Obj) -> str:
    if not (o.get("spec") or {}).get("volumeName"):
        return ""
    return access_modes((o.get("status") or {}).get("accessModes"))


RESOURCE = Resource(
    TYPE,
    always(PersistentVolumeClaimStrategy()),
    (
        ("Name", "string", 0, name),
        ("Status", "string", 0, storage_phase),
        ("Volume", "string", 0, lambda o: (o.get("spec") or {}).get("volumeName") or ""),
        ("Capacity", "string", 0, _pvc_capacity),
        ("Access Modes", "string", 0, _pvc_modes),
        ("StorageClass", "string", 0, claim_class),
        ("VolumeAttributesClass", "string", 0, vac),
        ("Age", "string", 0, age),
        ("VolumeMode", "string", 1, volume_mode),
    ),
)
