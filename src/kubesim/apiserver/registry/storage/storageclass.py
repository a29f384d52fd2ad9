"""storage.k8s.io/v1 StorageClass and the DefaultStorageClass admission plugin: defaults
Delete / Immediate; provisioner, parameters, reclaimPolicy and volumeBindingMode fixed after
creation; a claim created without a class gets the default class's name."""

from __future__ import annotations

from typing import Any, Final

from kubesim.apiserver.core.hooks import MutatingHook
from kubesim.apiserver.core.request import Request
from kubesim.apiserver.core.store import Store
from kubesim.apiserver.registry.columns import Obj, age, name
from kubesim.apiserver.registry.core.persistentvolumeclaim import spec_of
from kubesim.apiserver.registry.resource import Resource, always
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.apiserver.registry.strategy import Strategy
from kubesim.machinery import field as fe
from kubesim.machinery.errors import Cause

TYPE = ResourceType(
    "storage.k8s.io", "v1", "StorageClass", "storageclasses", False, short_names=("sc",)
)


DEFAULT_CLASS_ANNOTATION: Final = "storageclass.kubernetes.io/is-default-class"
BETA_CLASS_ANNOTATION: Final = "volume.beta.kubernetes.io/storage-class"
SC_RECLAIM: Final = ("Delete", "Retain")
BINDING_MODES: Final = ("Immediate", "WaitForFirstConsumer")

_STORAGE_SC: Final = TYPE.key


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
        spec = spec_of(obj)
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if spec.get("storageClassName") is not None or BETA_CLASS_ANNOTATION in annotations:
            return obj
        name = default_class(self.store)
        if name is not None:
            obj["spec"] = {**spec, "storageClassName": name}
        return obj


def _sc_name(o: Obj) -> str:
    annotations = o["metadata"].get("annotations") or {}
    default = annotations.get("storageclass.kubernetes.io/is-default-class") == "true"
    return f"{name(o)} (default)" if default else name(o)


RESOURCE = Resource(
    TYPE,
    always(StorageClassStrategy()),
    (
        ("Name", "string", 0, _sc_name),
        ("Provisioner", "string", 0, lambda o: o.get("provisioner") or ""),
        ("ReclaimPolicy", "string", 0, lambda o: o.get("reclaimPolicy") or "Delete"),
        ("VolumeBindingMode", "string", 0, lambda o: o.get("volumeBindingMode") or "Immediate"),
        ("AllowVolumeExpansion", "string", 0, lambda o: bool(o.get("allowVolumeExpansion"))),
        ("Age", "string", 0, age),
    ),
)
