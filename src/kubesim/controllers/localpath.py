"""A dynamic provisioner in the manner of rancher's local-path-provisioner (kind's `standard`
class, provisioner `rancher.io/local-path`): one host directory per volume.

It provisions the claims the PV controller hands to it (annotation `volume.kubernetes.io/
storage-provisioner: rancher.io/local-path`): a directory `<root>/pvc-<uid>_<ns>_<name>` and a
PersistentVolume `pvc-<claim uid>` pre-bound to the claim (`claimRef`), with a `hostPath`
source, the claim's access modes and request, the class's reclaim policy, and, for a claim
the scheduler placed (`volume.kubernetes.io/selected-node`, WaitForFirstConsumer), node
affinity to that node's `kubernetes.io/hostname`. Claims of an `Immediate` class, and claims
asking for ReadWriteMany or ReadOnlyMany, get a volume without node affinity: every
simulated node is this one host, so the directory is reachable from all of them (as
local-path-provisioner's shared-filesystem mode). Events `Provisioning` and
`ProvisioningSucceeded` on the claim.

When such a volume is Released with reclaim policy Delete, its directory and the volume are
deleted; with Retain the PV controller keeps it Released and the data stays.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import structlog

from kubesim.apiserver.core.apicore import ApiCore
from kubesim.apiserver.core.store import ResourceKey, WatchEvent
from kubesim.base.controller import Controller
from kubesim.base.events import NO_EVENTS, EventSink
from kubesim.controllers.pvmatch import (
    ANN_PROVISIONED_BY,
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
    claim_class,
)
from kubesim.machinery.errors import ApiError

__all__ = ["PROVISIONER", "LocalPathProvisioner", "standard_class", "volume_directory"]

log = structlog.get_logger("sim.local-path")

PROVISIONER: Final = "rancher.io/local-path"
CLAIMS: Final[ResourceKey] = ("", "persistentvolumeclaims")
VOLUMES: Final[ResourceKey] = ("", "persistentvolumes")
CLASSES: Final[ResourceKey] = ("storage.k8s.io", "storageclasses")
_SHARED_MODES: Final = frozenset({"ReadWriteMany", "ReadOnlyMany"})
Key = tuple[str, str, str]  # ("claim", namespace, name) or ("volume", "", name)


def standard_class() -> dict[str, Any]:
    """The default class `jobset sim` / `jobset dev` install, as kind's `standard`."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": "standard",
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
        },
        "provisioner": PROVISIONER,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "WaitForFirstConsumer",
    }


def volume_directory(root: Path, claim: Mapping[str, Any]) -> Path:
    meta = claim["metadata"]
    return root / f"pvc-{meta['uid']}_{meta['namespace']}_{meta['name']}"


def volume_for(
    claim: Mapping[str, Any], sc: Mapping[str, Any], path: Path, node: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The PersistentVolume provisioned for `claim` (pure)."""
    meta, spec = claim["metadata"], claim.get("spec") or {}
    modes = list(spec.get("accessModes") or [])
    pv_spec: dict[str, Any] = {
        "accessModes": modes,
        "capacity": {"storage": ((spec.get("resources") or {}).get("requests") or {})["storage"]},
        "claimRef": {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "namespace": meta["namespace"],
            "name": meta["name"],
            "uid": meta["uid"],
            "resourceVersion": meta.get("resourceVersion"),
        },
        "hostPath": {"path": str(path), "type": "DirectoryOrCreate"},
        "persistentVolumeReclaimPolicy": sc.get("reclaimPolicy") or "Delete",
        "storageClassName": claim_class(claim),
        "volumeMode": spec.get("volumeMode") or "Filesystem",
    }
    if node is not None and not _SHARED_MODES & set(modes):
        labels = (node.get("metadata") or {}).get("labels") or {}
        hostname = labels.get("kubernetes.io/hostname") or node["metadata"]["name"]
        pv_spec["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "kubernetes.io/hostname",
                                "operator": "In",
                                "values": [hostname],
                            }
                        ]
                    }
                ]
            }
        }
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": f"pvc-{meta['uid']}",
            "annotations": {ANN_PROVISIONED_BY: PROVISIONER},
        },
        "spec": pv_spec,
    }


class LocalPathProvisioner(Controller[Key]):
    name = "local-path-provisioner"
    workers = 1

    def __init__(self, core: ApiCore, root: Path, events: EventSink | None = None) -> None:
        super().__init__(core)
        self.root = root
        self.recorder = NO_EVENTS if events is None else events.recorder(PROVISIONER)
        self.volumes_rt = self.rt("", "persistentvolumes")

    def watched(self) -> Collection[ResourceKey]:
        return (CLAIMS, VOLUMES)

    def keys_for(self, rkey: ResourceKey, ev: WatchEvent) -> Iterable[Key]:
        meta = ev.obj["metadata"]
        if rkey == CLAIMS:
            yield ("claim", str(meta.get("namespace") or ""), str(meta["name"]))
        elif rkey == VOLUMES:
            yield ("volume", "", str(meta["name"]))

    def initial_keys(self) -> Iterable[Key]:
        for claim in list(self.core.store.resource(CLAIMS).objects.values()):
            yield ("claim", str(claim["metadata"]["namespace"]), str(claim["metadata"]["name"]))
        for pv in list(self.core.store.resource(VOLUMES).objects.values()):
            yield ("volume", "", str(pv["metadata"]["name"]))

    async def sync(self, key: Key) -> float | None:
        kind, namespace, name = key
        if kind == "claim":
            claim = self.core.store.get(CLAIMS, (namespace, name))
            if claim is not None:
                await self._provision(claim)
        else:
            pv = self.core.store.get(VOLUMES, ("", name))
            if pv is not None:
                await self._maybe_delete(pv)
        return None

    async def _provision(self, claim: dict[str, Any]) -> None:
        meta, spec = claim["metadata"], claim.get("spec") or {}
        annotations = meta.get("annotations") or {}
        if meta.get("deletionTimestamp") or spec.get("volumeName"):
            return
        if annotations.get(ANN_STORAGE_PROVISIONER) != PROVISIONER:
            return
        sc = self.core.store.get(CLASSES, ("", claim_class(claim)))
        if sc is None or sc.get("provisioner") != PROVISIONER:
            return
        selected = annotations.get(ANN_SELECTED_NODE)
        if sc.get("volumeBindingMode") == "WaitForFirstConsumer" and not selected:
            return
        if self.core.store.get(VOLUMES, ("", f"pvc-{meta['uid']}")) is not None:
            return
        node = self.core.store.get(("", "nodes"), ("", selected)) if selected else None
        self.recorder.event(
            claim,
            "Normal",
            "Provisioning",
            f'External provisioner is provisioning volume for claim "{meta["namespace"]}/'
            f'{meta["name"]}"',
        )
        path = volume_directory(self.root, claim)
        await asyncio.to_thread(_make_directory, path)
        pv = volume_for(claim, sc, path, node)
        try:
            await self.core.create(self.volumes_rt, "", pv, self.req())
        except ApiError as err:
            if err.code != 409:
                raise
            return
        log.info("volume provisioned", claim=f"{meta['namespace']}/{meta['name']}", path=str(path))
        self.recorder.event(
            claim,
            "Normal",
            "ProvisioningSucceeded",
            f"Successfully provisioned volume {pv['metadata']['name']}",
        )

    async def _maybe_delete(self, pv: dict[str, Any]) -> None:
        meta, spec = pv["metadata"], pv.get("spec") or {}
        if (meta.get("annotations") or {}).get(ANN_PROVISIONED_BY) != PROVISIONER:
            return
        if (pv.get("status") or {}).get("phase") != "Released":
            return
        if spec.get("persistentVolumeReclaimPolicy") != "Delete":
            return
        path = Path(str((spec.get("hostPath") or {}).get("path") or ""))
        if path.parent == self.root:  # never remove anything outside the volumes' root
            await asyncio.to_thread(shutil.rmtree, path, True)
        try:
            await self.core.delete(self.volumes_rt, "", meta["name"], None, self.req())
        except ApiError as err:
            if err.code != 404:
                raise
        log.info("volume deleted", volume=meta["name"], path=str(path))


def _make_directory(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o777)  # as local-path-provisioner's setup script: any container uid writes
