"""The PersistentVolume controller of kube-controller-manager (`persistentvolume-binder`):
binds claims to volumes, keeps their phases, and reclaims volumes whose claim is gone.

- A claim without `volumeName` is bound to the volume `pvmatch.find_volume` picks; with none,
  a claim of a class with a provisioner is handed to it (`volume.kubernetes.io/storage-
  provisioner` annotations, event `ExternalProvisioning`), once the scheduler has picked a
  node (`volume.kubernetes.io/selected-node`) for a `WaitForFirstConsumer` class (until then
  event `WaitForFirstConsumer`).
- Binding writes the volume's `claimRef` (annotation `pv.kubernetes.io/bound-by-controller`
  when the controller chose it), then the claim's `volumeName` with
  `pv.kubernetes.io/bind-completed` (and bound-by-controller when the controller chose the
  volume), then the phases: volume Bound; claim Bound with the volume's capacity and access
  modes.
- Phases: a volume without a claim is Available; bound, Bound; whose claim is gone, Released,
  then per `persistentVolumeReclaimPolicy`: Retain keeps it Released with its data; Delete
  leaves a provisioned volume to its provisioner (which removes data and volume) and fails a
  hand-made one (no deleter plugin here); Recycle fails (deprecated, not modelled). A claim
  whose bound volume disappeared is Lost (event `ClaimLost`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any, Final

import structlog

from kubesim.apiserver.core.apicore import ApiCore
from kubesim.apiserver.core.store import DELETED, ResourceKey, WatchEvent
from kubesim.base.controller import Controller
from kubesim.base.events import NO_EVENTS, WARNING, EventSink
from kubesim.clock import now_rfc3339
from kubesim.controllers.pvmatch import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_PROVISIONED_BY,
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
    ANN_STORAGE_PROVISIONER_BETA,
    bound_to,
    claim_class,
    find_volume,
)

__all__ = ["PersistentVolumeController"]

log = structlog.get_logger("sim.pv")

CLAIMS: Final[ResourceKey] = ("", "persistentvolumeclaims")
VOLUMES: Final[ResourceKey] = ("", "persistentvolumes")
CLASSES: Final[ResourceKey] = ("storage.k8s.io", "storageclasses")
# ("claim", namespace, name) or ("volume", "", name)
Key = tuple[str, str, str]


def _ann(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("annotations") or {})


def _with_ann(obj: Mapping[str, Any], extra: Mapping[str, str]) -> dict[str, Any]:
    meta = dict(obj["metadata"])
    meta["annotations"] = {**_ann(obj), **extra}
    return {**obj, "metadata": meta}


def _phase(obj: Mapping[str, Any]) -> str:
    return str((obj.get("status") or {}).get("phase") or "")


class PersistentVolumeController(Controller[Key]):
    name = "persistentvolume-binder-controller"

    def __init__(self, core: ApiCore, events: EventSink | None = None) -> None:
        super().__init__(core)
        self.recorder = (
            NO_EVENTS if events is None else events.recorder("persistentvolume-controller")
        )
        self.claims_rt = self.rt("", "persistentvolumeclaims")
        self.volumes_rt = self.rt("", "persistentvolumes")
        self._said: dict[tuple[str, str], str] = {}  # claim -> last waiting event reason

    # ------------------------------------------------------------------ keys

    def watched(self) -> Collection[ResourceKey]:
        return (CLAIMS, VOLUMES, CLASSES)

    def keys_for(self, rkey: ResourceKey, ev: WatchEvent) -> Iterable[Key]:
        meta = ev.obj["metadata"]
        if rkey == CLAIMS:
            yield ("claim", str(meta.get("namespace") or ""), str(meta["name"]))
            name = (ev.obj.get("spec") or {}).get("volumeName")
            if name:
                yield ("volume", "", str(name))
            if ev.type == DELETED:
                yield from self._volumes_of(meta)
        elif rkey == VOLUMES:
            yield ("volume", "", str(meta["name"]))
            ref = (ev.obj.get("spec") or {}).get("claimRef") or {}
            if ref.get("name"):
                yield ("claim", str(ref.get("namespace") or ""), str(ref["name"]))
        elif rkey == CLASSES:
            for claim in self.core.store.resource(CLAIMS).objects.values():
                if not (claim.get("spec") or {}).get("volumeName"):
                    cmeta = claim["metadata"]
                    yield ("claim", str(cmeta.get("namespace") or ""), str(cmeta["name"]))

    def _volumes_of(self, claim_meta: Mapping[str, Any]) -> Iterable[Key]:
        for pv in self.core.store.resource(VOLUMES).objects.values():
            ref = (pv.get("spec") or {}).get("claimRef") or {}
            if ref.get("uid") == claim_meta.get("uid"):
                yield ("volume", "", str(pv["metadata"]["name"]))

    def initial_keys(self) -> Iterable[Key]:
        for claim in list(self.core.store.resource(CLAIMS).objects.values()):
            meta = claim["metadata"]
            yield ("claim", str(meta.get("namespace") or ""), str(meta["name"]))
        for pv in list(self.core.store.resource(VOLUMES).objects.values()):
            yield ("volume", "", str(pv["metadata"]["name"]))

    async def sync(self, key: Key) -> float | None:
        kind, namespace, name = key
        if kind == "claim":
            claim = self.core.store.get(CLAIMS, (namespace, name))
            if claim is None:
                self._said.pop((namespace, name), None)
            else:
                await self._sync_claim(claim)
        else:
            pv = self.core.store.get(VOLUMES, ("", name))
            if pv is not None:
                await self._sync_volume(pv)
        return None

    # ------------------------------------------------------------------ claims

    async def _sync_claim(self, claim: dict[str, Any]) -> None:
        if claim["metadata"].get("deletionTimestamp"):
            return
        name = (claim.get("spec") or {}).get("volumeName")
        if not name:
            await self._sync_unbound(claim)
            return
        pv = self.core.store.get(VOLUMES, ("", str(name)))
        if pv is None:
            if _phase(claim) == "Bound":
                await self._claim_status(claim, "Lost", None)
                self.recorder.event(
                    claim,
                    WARNING,
                    "ClaimLost",
                    "Bound claim has lost reference to PersistentVolume. Data on the volume is "
                    "lost!",
                )
            else:
                self._wait(claim, WARNING, "FailedBinding", f'volume "{name}" not found')
            return
        ref = (pv.get("spec") or {}).get("claimRef") or {}
        if not ref.get("name"):
            await self._bind(pv, claim)
        elif bound_to(pv, claim):
            await self._bind(pv, claim)
        elif _phase(claim) == "Bound":
            await self._claim_status(claim, "Lost", None)
        else:
            self._wait(
                claim,
                WARNING,
                "FailedBinding",
                f'volume "{name}" already bound to a different claim.',
            )

    async def _sync_unbound(self, claim: dict[str, Any]) -> None:
        volumes = list(self.core.store.resource(VOLUMES).objects.values())
        pv = find_volume(claim, volumes)
        class_name = claim_class(claim)
        sc = self.core.store.get(CLASSES, ("", class_name)) if class_name else None
        waits = sc is not None and sc.get("volumeBindingMode") == "WaitForFirstConsumer"
        selected = _ann(claim).get(ANN_SELECTED_NODE)
        # A volume the claim names, or one pre-bound to it, binds at once; other matches of a
        # WaitForFirstConsumer class wait for the scheduler, which judges their node affinity.
        prebound = pv is not None and (pv.get("spec") or {}).get("claimRef")
        if pv is not None and (prebound or not waits):
            await self._bind(dict(pv), claim)
            return
        if not class_name:
            self._wait(
                claim,
                "Normal",
                "FailedBinding",
                "no persistent volumes available for this claim and no storage class is set",
            )
            return
        if sc is None:
            self._wait(
                claim,
                WARNING,
                "ProvisioningFailed",
                f'storageclass.storage.k8s.io "{class_name}" not found',
            )
            return
        if waits and not selected:
            self._wait(
                claim,
                "Normal",
                "WaitForFirstConsumer",
                "waiting for first consumer to be created before binding",
            )
            return
        # Every class's claim goes to its provisioner, `kubernetes.io/no-provisioner` too: the
        # event then says an administrator is to create the volume, as upstream's does.
        provisioner = str(sc.get("provisioner") or "")
        ann = _ann(claim)
        if ann.get(ANN_STORAGE_PROVISIONER) != provisioner:
            claim = await self.core.update(
                self.claims_rt,
                claim["metadata"]["namespace"],
                claim["metadata"]["name"],
                _with_ann(
                    claim,
                    {
                        ANN_STORAGE_PROVISIONER: provisioner,
                        ANN_STORAGE_PROVISIONER_BETA: provisioner,
                    },
                ),
                self.req(),
            )
        self._wait(
            claim,
            "Normal",
            "ExternalProvisioning",
            f"Waiting for a volume to be created either by the external provisioner "
            f"'{provisioner}' or manually by the system administrator. If volume creation is "
            f"delayed, please verify that the provisioner is running and correctly registered.",
        )

    def _wait(self, claim: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        """Record why the claim waits, once per reason (the controller re-syncs often)."""
        meta = claim["metadata"]
        key = (str(meta.get("namespace") or ""), str(meta["name"]))
        if self._said.get(key) != reason:
            self._said[key] = reason
            self.recorder.event(claim, type_, reason, message)

    async def _bind(self, pv: dict[str, Any], claim: dict[str, Any]) -> None:
        meta = claim["metadata"]
        ns, name = str(meta["namespace"]), str(meta["name"])
        pv_name = str(pv["metadata"]["name"])
        ref = (pv.get("spec") or {}).get("claimRef") or {}
        if ref.get("uid") != meta.get("uid") or not bound_to(pv, claim):
            claim_ref = {
                "kind": "PersistentVolumeClaim",
                "namespace": ns,
                "name": name,
                "uid": meta.get("uid"),
                "apiVersion": "v1",
                "resourceVersion": meta.get("resourceVersion"),
            }
            new_pv = {**pv, "spec": {**(pv.get("spec") or {}), "claimRef": claim_ref}}
            if not ref.get("name"):
                new_pv = _with_ann(new_pv, {ANN_BOUND_BY_CONTROLLER: "yes"})
            pv = await self.core.update(self.volumes_rt, "", pv_name, new_pv, self.req())
        if _phase(pv) != "Bound":
            pv = await self.core.update(
                self.volumes_rt,
                "",
                pv_name,
                {**pv, "status": {**(pv.get("status") or {}), "phase": "Bound"}},
                self.req(),
                subresource="status",
            )
        spec = claim.get("spec") or {}
        if spec.get("volumeName") != pv_name or _ann(claim).get(ANN_BIND_COMPLETED) != "yes":
            extra = {ANN_BIND_COMPLETED: "yes"}
            if not spec.get("volumeName"):
                extra[ANN_BOUND_BY_CONTROLLER] = "yes"
            new_claim = _with_ann(claim, extra)
            new_claim["spec"] = {**spec, "volumeName": pv_name}
            claim = await self.core.update(self.claims_rt, ns, name, new_claim, self.req())
        await self._claim_status(claim, "Bound", pv)
        self._said.pop((ns, name), None)

    async def _claim_status(
        self, claim: dict[str, Any], phase: str, pv: Mapping[str, Any] | None
    ) -> None:
        status = dict(claim.get("status") or {})
        status["phase"] = phase
        if pv is not None:
            pv_spec = pv.get("spec") or {}
            status["accessModes"] = list(pv_spec.get("accessModes") or [])
            status["capacity"] = dict(pv_spec.get("capacity") or {})
        if status == (claim.get("status") or {}):
            return
        meta = claim["metadata"]
        await self.core.update(
            self.claims_rt,
            meta["namespace"],
            meta["name"],
            {**claim, "status": status},
            self.req(),
            subresource="status",
        )

    # ------------------------------------------------------------------ volumes

    async def _sync_volume(self, pv: dict[str, Any]) -> None:
        if pv["metadata"].get("deletionTimestamp"):
            return
        ref = (pv.get("spec") or {}).get("claimRef") or {}
        if not ref.get("name"):
            await self._volume_phase(pv, "Available")
            return
        claim = self.core.store.get(CLAIMS, (str(ref.get("namespace") or ""), str(ref["name"])))
        if claim is not None and ref.get("uid") in (None, "", claim["metadata"].get("uid")):
            if (claim.get("spec") or {}).get("volumeName") == pv["metadata"]["name"]:
                await self._volume_phase(pv, "Bound")
            else:
                self.enqueue(("claim", str(ref.get("namespace") or ""), str(ref["name"])))
                await self._volume_phase(pv, "Available")
            return
        if not ref.get("uid"):
            await self._volume_phase(pv, "Available")  # pre-bound to a claim not made yet
            return
        await self._reclaim(pv)

    async def _reclaim(self, pv: dict[str, Any]) -> None:
        """The claim is gone: Released, then what the reclaim policy says."""
        if _phase(pv) not in ("Released", "Failed"):
            pv = await self._volume_phase(pv, "Released")
        policy = (pv.get("spec") or {}).get("persistentVolumeReclaimPolicy") or "Retain"
        if policy == "Retain" or _phase(pv) == "Failed":
            return
        if policy == "Delete" and _ann(pv).get(ANN_PROVISIONED_BY):
            return  # its provisioner deletes the data and the volume
        name = pv["metadata"]["name"]
        message = (
            f'error getting deleter volume plugin for volume "{name}": no deletable volume '
            f"plugin matched"
            if policy == "Delete"
            else f'no volume plugin matched name: kubernetes.io/{policy.lower()} for "{name}"'
        )
        reason = "VolumeFailedDelete" if policy == "Delete" else "VolumeFailedRecycle"
        await self._volume_phase(pv, "Failed", message)
        self.recorder.event(pv, WARNING, reason, message)

    async def _volume_phase(
        self, pv: dict[str, Any], phase: str, message: str = ""
    ) -> dict[str, Any]:
        status = dict(pv.get("status") or {})
        if status.get("phase") == phase and status.get("message", "") == message:
            return pv
        if status.get("phase") != phase:
            status["lastPhaseTransitionTime"] = now_rfc3339()
        status["phase"] = phase
        status.pop("message", None)
        if message:
            status["message"] = message
        return await self.core.update(
            self.volumes_rt,
            "",
            pv["metadata"]["name"],
            {**pv, "status": status},
            self.req(),
            subresource="status",
        )
