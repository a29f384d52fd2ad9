"""Storage object in-use protection, as kube-apiserver's StorageObjectInUseProtection admission
plugin and kube-controller-manager's pvc-protection and pv-protection controllers do it.

New claims get the finalizer `kubernetes.io/pvc-protection`, new volumes
`kubernetes.io/pv-protection` (`ProtectionHook`). A deleted claim stays (Terminating) while a
pod that is not finished still names it in its volumes; a deleted volume while it is Bound.
So a volume's directory is never removed under a running container.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

from kubesim.apiserver.core.hooks import MutatingHook
from kubesim.apiserver.core.store import ResourceKey, WatchEvent
from kubesim.base.controller import Controller
from kubesim.controllers.scheduler.volumebinding import claim_names

if TYPE_CHECKING:
    from kubesim.apiserver.core.request import Request
    from kubesim.apiserver.registry.resourcetype import ResourceType

__all__ = ["PVC_PROTECTION", "PV_PROTECTION", "ProtectionController", "ProtectionHook"]

PVC_PROTECTION: Final = "kubernetes.io/pvc-protection"
PV_PROTECTION: Final = "kubernetes.io/pv-protection"
CLAIMS: Final[ResourceKey] = ("", "persistentvolumeclaims")
VOLUMES: Final[ResourceKey] = ("", "persistentvolumes")
PODS: Final[ResourceKey] = ("", "pods")
_FINALIZER_OF: Final = {CLAIMS: PVC_PROTECTION, VOLUMES: PV_PROTECTION}
Key = tuple[str, str, str]  # ("claim", namespace, name) or ("volume", "", name)


class ProtectionHook(MutatingHook):
    """The StorageObjectInUseProtection admission plugin: the finalizer on create."""

    def before_write(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None, req: Request
    ) -> dict[str, Any]:
        finalizer = _FINALIZER_OF.get(rt.key)
        if old is not None or finalizer is None:
            return obj
        meta = obj["metadata"]
        finalizers = meta.get("finalizers")
        if not isinstance(finalizers, list):
            finalizers = []
        if finalizer not in finalizers:
            meta["finalizers"] = [*finalizers, finalizer]
        return obj


def _in_use(claim: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> bool:
    meta = claim["metadata"]
    for pod in pods:
        pmeta = pod.get("metadata") or {}
        if pmeta.get("namespace") != meta.get("namespace"):
            continue
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        if meta["name"] in claim_names(pod):
            return True
    return False


class ProtectionController(Controller[Key]):
    """Removes the protection finalizer of a deleted claim no running pod uses, and of a
    deleted volume that is not Bound."""

    name = "pvc-protection-controller"
    workers = 1

    def watched(self) -> Collection[ResourceKey]:
        return (CLAIMS, VOLUMES, PODS)

    def keys_for(self, rkey: ResourceKey, ev: WatchEvent) -> Iterable[Key]:
        meta = ev.obj["metadata"]
        if rkey == CLAIMS and meta.get("deletionTimestamp"):
            yield ("claim", str(meta.get("namespace") or ""), str(meta["name"]))
        elif rkey == VOLUMES and meta.get("deletionTimestamp"):
            yield ("volume", "", str(meta["name"]))
        elif rkey == PODS:
            for name in claim_names(ev.obj):
                yield ("claim", str(meta.get("namespace") or ""), name)

    def initial_keys(self) -> Iterable[Key]:
        for claim in list(self.core.store.resource(CLAIMS).objects.values()):
            if claim["metadata"].get("deletionTimestamp"):
                yield ("claim", claim["metadata"]["namespace"], claim["metadata"]["name"])
        for pv in list(self.core.store.resource(VOLUMES).objects.values()):
            if pv["metadata"].get("deletionTimestamp"):
                yield ("volume", "", pv["metadata"]["name"])

    async def sync(self, key: Key) -> float | None:
        kind, namespace, name = key
        store = self.core.store
        if kind == "claim":
            obj = store.get(CLAIMS, (namespace, name))
            if obj is None or not obj["metadata"].get("deletionTimestamp"):
                return None
            if _in_use(obj, store.resource(PODS).objects.values()):
                return None
            await self._release(obj, "persistentvolumeclaims", PVC_PROTECTION)
        else:
            obj = store.get(VOLUMES, ("", name))
            if obj is None or not obj["metadata"].get("deletionTimestamp"):
                return None
            if (obj.get("status") or {}).get("phase") == "Bound":
                return None
            await self._release(obj, "persistentvolumes", PV_PROTECTION)
        return None

    async def _release(self, obj: dict[str, Any], plural: str, finalizer: str) -> None:
        meta = obj["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        if finalizer not in finalizers:
            return
        finalizers.remove(finalizer)
        new = {**obj, "metadata": {**meta, "finalizers": finalizers}}
        rt = self.rt("", plural)
        await self.core.update(rt, str(meta.get("namespace") or ""), meta["name"], new, self.req())
