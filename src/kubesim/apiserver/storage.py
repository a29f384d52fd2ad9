"""Storage API semantics of the simulated API server: StorageClass, PersistentVolume and
PersistentVolumeClaim defaults, validation and immutable fields as kube-apiserver has them
(`pkg/apis/core/validation`, `pkg/apis/storage/validation`, the types' defaulters), and the
DefaultStorageClass admission plugin (a claim without `storageClassName` gets the default
class's name).

Pure: every function reads the objects it is given; `DefaultStorageClassHook` reads the
stored StorageClasses through the store only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from kubesim.apiserver.core.hooks import MutatingHook
from kubesim.apiserver.registry.registry import ResourceType
from kubesim.apiserver.registry.strategy import Strategy
from kubesim.machinery import field as fe
from kubesim.machinery.errors import Cause
from kubeutil.quantity import parse_quantity

if TYPE_CHECKING:
    from kubesim.apiserver.core.apicore import Request
    from kubesim.apiserver.core.store import Store

__all__ = [
    "ACCESS_MODES",
    "DEFAULT_CLASS_ANNOTATION",
    "DefaultStorageClassHook",
    "PersistentVolumeClaimStrategy",
    "PersistentVolumeStrategy",
    "StorageClassStrategy",
    "default_class",
    "storage_bytes",
]

DEFAULT_CLASS_ANNOTATION: Final = "storageclass.kubernetes.io/is-default-class"
BETA_CLASS_ANNOTATION: Final = "volume.beta.kubernetes.io/storage-class"
ACCESS_MODES: Final = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
VOLUME_MODES: Final = ("Block", "Filesystem")
PV_RECLAIM: Final = ("Delete", "Recycle", "Retain")
SC_RECLAIM: Final = ("Delete", "Retain")
BINDING_MODES: Final = ("Immediate", "WaitForFirstConsumer")
# The volume sources a PersistentVolume may name; exactly one of them.
PV_SOURCES: Final = (
    "awsElasticBlockStore",
    "azureDisk",
    "azureFile",
    "cephfs",
    "cinder",
    "csi",
    "fc",
    "flexVolume",
    "flocker",
    "gcePersistentDisk",
    "glusterfs",
    "hostPath",
    "iscsi",
    "local",
    "nfs",
    "photonPersistentDisk",
    "portworxVolume",
    "quobyte",
    "rbd",
    "scaleIO",
    "storageos",
    "vsphereVolume",
)
_CLAIM_IMMUTABLE: Final = (
    "spec is immutable after creation except resources.requests and "
    "volumeAttributesClassName for bound claims"
)

_STORAGE_SC: Final = ("storage.k8s.io", "storageclasses")


def storage_bytes(value: Any) -> int | None:
    """A storage quantity in bytes, rounded up; None when absent or not a quantity."""
    if value is None:
        return None
    try:
        q = parse_quantity(value)
    except (ValueError, TypeError):
        return None
    return -(-q.numerator // q.denominator)


def _spec(obj: Mapping[str, Any]) -> dict[str, Any]:
    return _dict(obj.get("spec"))


def _dict(value: Any) -> dict[str, Any]:
    """`value` if it is an object, else empty: malformed input is reported, never a crash."""
    return value if isinstance(value, dict) else {}


def _requests(spec: Mapping[str, Any]) -> dict[str, Any]:
    return _dict(_dict(spec.get("resources")).get("requests"))


def _access_modes(path: str, modes: Any, what: str) -> list[Cause]:
    if not modes:
        return [fe.required(path, what)]
    if not isinstance(modes, list):
        return [fe.invalid(path, modes, "must be a list of access modes")]
    causes = [fe.not_supported(path, m, ACCESS_MODES) for m in modes if m not in ACCESS_MODES]
    if "ReadWriteOncePod" in modes and len(modes) > 1:
        causes.append(fe.forbidden(path, "may not use ReadWriteOncePod with other access modes"))
    return causes


def _storage_request(path: str, value: Any) -> list[Cause]:
    if value is None:
        return [fe.required(path)]
    amount = storage_bytes(value)
    if amount is None:
        return [fe.invalid(path, value, "quantities must match the regular expression")]
    if amount <= 0:
        return [fe.invalid(path, str(value), "must be greater than zero")]
    return []


class StorageClassStrategy(Strategy):
    """storage.k8s.io/v1 StorageClass: defaults Delete / Immediate; provisioner, parameters,
    reclaimPolicy and volumeBindingMode fixed after creation."""

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        obj.setdefault("reclaimPolicy", "Delete")
        obj.setdefault("volumeBindingMode", "Immediate")
        return obj

    def prepare_for_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any], subresource: str
    ) -> dict[str, Any]:
        return self.prepare_for_create(rt, obj)

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        causes: list[Cause] = []
        if not obj.get("provisioner"):
            causes.append(fe.required("provisioner"))
        if obj.get("reclaimPolicy") not in SC_RECLAIM:
            causes.append(fe.not_supported("reclaimPolicy", obj.get("reclaimPolicy"), SC_RECLAIM))
        mode = obj.get("volumeBindingMode")
        if mode not in BINDING_MODES:
            causes.append(fe.not_supported("volumeBindingMode", mode, BINDING_MODES))
        if old is None:
            return causes
        for key in ("parameters", "provisioner", "reclaimPolicy"):
            if obj.get(key) != old.get(key):
                causes.append(fe.forbidden(key, f"updates to {key} are forbidden."))
        if mode != old.get("volumeBindingMode"):
            causes.append(fe.invalid("volumeBindingMode", mode, "field is immutable"))
        return causes


class PersistentVolumeStrategy(Strategy):
    """core/v1 PersistentVolume: defaults (Retain, Filesystem, phase Pending), one volume
    source, and the source and volumeMode fixed after creation."""

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        spec = dict(_spec(obj))
        spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
        spec.setdefault("volumeMode", "Filesystem")
        obj["spec"] = spec
        obj["status"] = {"phase": "Pending"}
        return obj

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        spec = _spec(obj)
        causes = _access_modes("spec.accessModes", spec.get("accessModes"), "")
        capacity = spec.get("capacity")
        if not capacity:
            causes.append(fe.required("spec.capacity"))
        elif not isinstance(capacity, dict) or set(capacity) != {"storage"}:
            causes.append(fe.not_supported("spec.capacity", capacity, ["storage"]))
        else:
            causes += _storage_request("spec.capacity[storage]", capacity.get("storage"))
        policy = spec.get("persistentVolumeReclaimPolicy")
        if policy not in PV_RECLAIM:
            causes.append(
                fe.not_supported("spec.persistentVolumeReclaimPolicy", policy, PV_RECLAIM)
            )
        if spec.get("volumeMode") not in VOLUME_MODES:
            causes.append(fe.not_supported("spec.volumeMode", spec.get("volumeMode"), VOLUME_MODES))
        causes += _pv_source(spec)
        if old is None:
            return causes
        old_spec = _spec(old)
        if _source_of(spec) != _source_of(old_spec):
            causes.append(
                fe.forbidden(
                    "spec.persistentvolumesource",
                    "spec.persistentvolumesource is immutable after creation",
                )
            )
        if spec.get("volumeMode") != old_spec.get("volumeMode"):
            causes.append(
                fe.invalid("spec.volumeMode", spec.get("volumeMode"), "field is immutable")
            )
        if old_spec.get("nodeAffinity") and spec.get("nodeAffinity") != old_spec.get(
            "nodeAffinity"
        ):
            causes.append(fe.invalid("spec.nodeAffinity", fe.OMIT, "field is immutable"))
        return causes


def _source_of(spec: Mapping[str, Any]) -> dict[str, Any]:
    return {k: spec[k] for k in PV_SOURCES if k in spec}


def _pv_source(spec: Mapping[str, Any]) -> list[Cause]:
    named = [k for k in PV_SOURCES if spec.get(k) is not None]
    if not named:
        return [fe.required("spec", "must specify a volume type")]
    causes = [
        fe.forbidden(f"spec.{k}", "may not specify more than 1 volume type") for k in named[1:]
    ]
    kind = named[0]
    source = spec.get(kind) or {}
    if kind in ("hostPath", "local") and not (isinstance(source, dict) and source.get("path")):
        causes.append(fe.required(f"spec.{kind}.path"))
    if kind == "local" and not spec.get("nodeAffinity"):
        causes.append(fe.required("spec.nodeAffinity", "Local volume requires node affinity"))
    return causes


class PersistentVolumeClaimStrategy(Strategy):
    """core/v1 PersistentVolumeClaim: defaults (Filesystem, phase Pending), the spec rules,
    and a spec that only binding (volumeName once, a class once) and a bound claim's
    expansion may change."""

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        spec = dict(_spec(obj))
        spec.setdefault("volumeMode", "Filesystem")
        obj["spec"] = spec
        obj["status"] = {"phase": "Pending"}
        return obj

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        spec = _spec(obj)
        causes = _access_modes(
            "spec.accessModes", spec.get("accessModes"), "at least 1 access mode is required"
        )
        causes += _storage_request("spec.resources[storage]", _requests(spec).get("storage"))
        if spec.get("volumeMode") not in VOLUME_MODES:
            causes.append(fe.not_supported("spec.volumeMode", spec.get("volumeMode"), VOLUME_MODES))
        if old is None:
            return causes
        return causes + _claim_update(obj, old)


def _claim_update(obj: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    spec, old_spec = dict(_spec(obj)), dict(_spec(old))
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


def default_class(store: Store) -> str | None:
    """The default StorageClass's name: of the classes annotated as default, the newest
    (the name breaks ties), as the DefaultStorageClass admission plugin picks it."""
    best: tuple[str, str] | None = None
    for sc in store.resource(_STORAGE_SC).objects.values():
        meta = sc.get("metadata") or {}
        if (meta.get("annotations") or {}).get(DEFAULT_CLASS_ANNOTATION) != "true":
            continue
        candidate = (str(meta.get("creationTimestamp") or ""), str(meta.get("name") or ""))
        if best is None or candidate > best:
            best = candidate
    return None if best is None else best[1]


class DefaultStorageClassHook(MutatingHook):
    """The DefaultStorageClass admission plugin: a claim created without a class (and
    without the beta class annotation) gets the default class, if there is one."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def before_write(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None, req: Request
    ) -> dict[str, Any]:
        if old is not None or rt.key != ("", "persistentvolumeclaims"):
            return obj
        spec = _spec(obj)
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if spec.get("storageClassName") is not None or BETA_CLASS_ANNOTATION in annotations:
            return obj
        name = default_class(self.store)
        if name is not None:
            obj["spec"] = {**spec, "storageClassName": name}
        return obj


STRATEGIES: Final[dict[tuple[str, str], Strategy]] = {
    _STORAGE_SC: StorageClassStrategy(),
    ("", "persistentvolumes"): PersistentVolumeStrategy(),
    ("", "persistentvolumeclaims"): PersistentVolumeClaimStrategy(),
}
