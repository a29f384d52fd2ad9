"""core/v1 PersistentVolume: defaults (Retain, Filesystem, phase Pending), one volume
source, and the source and volumeMode fixed after creation."""

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
from kubesim.apiserver.registry.core.persistentvolumeclaim import (
    VOLUME_MODES,
    access_modes_causes,
    spec_of,
    storage_request_causes,
)
from kubesim.apiserver.registry.resource import Resource, always
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.apiserver.registry.strategy import Strategy
from kubesim.machinery import field as fe
from kubesim.machinery.errors import Cause

TYPE = ResourceType(
    "",
    "v1",
    "PersistentVolume",
    "persistentvolumes",
    False,
    short_names=("pv",),
    subresources=frozenset(("status",)),
)


PV_RECLAIM: Final = ("Delete", "Recycle", "Retain")
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


class PersistentVolumeStrategy(Strategy):
    """core/v1 PersistentVolume: defaults (Retain, Filesystem, phase Pending), one volume
    source, and the source and volumeMode fixed after creation."""

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        spec = dict(spec_of(obj))
        spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
        spec.setdefault("volumeMode", "Filesystem")
        obj["spec"] = spec
        obj["status"] = {"phase": "Pending"}
        return obj

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        spec = spec_of(obj)
        causes = access_modes_causes("spec.accessModes", spec.get("accessModes"), "")
        capacity = spec.get("capacity")
        if not capacity:
            causes.append(fe.required("spec.capacity"))
        elif not isinstance(capacity, dict) or set(capacity) != {"storage"}:
            causes.append(fe.not_supported("spec.capacity", capacity, ["storage"]))
        else:
            causes += storage_request_causes("spec.capacity[storage]", capacity.get("storage"))
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
        old_spec = spec_of(old)
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


def _pv_claim(o: Obj) -> str:
    ref = (o.get("spec") or {}).get("claimRef") or {}
    return f"{ref.get('namespace', '')}/{ref.get('name', '')}" if ref else ""


RESOURCE = Resource(
    TYPE,
    always(PersistentVolumeStrategy()),
    (
        ("Name", "string", 0, name),
        (
            "Capacity",
            "string",
            0,
            lambda o: str(((o.get("spec") or {}).get("capacity") or {}).get("storage") or "0"),
        ),
        (
            "Access Modes",
            "string",
            0,
            lambda o: access_modes((o.get("spec") or {}).get("accessModes")),
        ),
        (
            "Reclaim Policy",
            "string",
            0,
            lambda o: (o.get("spec") or {}).get("persistentVolumeReclaimPolicy") or "",
        ),
        ("Status", "string", 0, storage_phase),
        ("Claim", "string", 0, _pv_claim),
        ("StorageClass", "string", 0, claim_class),
        ("VolumeAttributesClass", "string", 0, vac),
        ("Reason", "string", 0, lambda o: (o.get("status") or {}).get("reason") or ""),
        ("Age", "string", 0, age),
        ("VolumeMode", "string", 1, volume_mode),
    ),
)
