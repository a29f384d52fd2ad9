"""kube-scheduler's VolumeBinding plugin for the simulated scheduler: a pod's
PersistentVolumeClaims decide where, and whether yet, it may run.

- PreFilter (`pod_volumes`): a claim that does not exist rejects the pod with
  `persistentvolumeclaim "x" not found`, one being deleted with `persistentvolumeclaim "x" is
  being deleted`, and an unbound claim of an `Immediate` class (or of no class) with `pod has
  unbound immediate PersistentVolumeClaims`; all of them before any node is looked at, as
  upstream's PreFilter does.
- Filter (`PodVolumes.reason`): a bound claim's volume must admit the node (`node(s) had
  volume node affinity conflict`); an unbound `WaitForFirstConsumer` claim needs an Available
  volume the node can reach or a class that provisions (`node(s) didn't find available
  persistent volumes to bind`); a claim the scheduler already placed
  (`volume.kubernetes.io/selected-node`) keeps its node.
- PreBind (`PodVolumes.pending` and `bind_writes`): for the chosen node, a matching static
  volume gets the claim in its `claimRef`, otherwise the claim gets the selected-node
  annotation for its provisioner; the pod is bound only once all its claims are (the loop
  waits for claim and volume changes, as upstream's PreBind waits for the binding).

Pure but for reading the store it is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from kubesim.controllers.pvmatch import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    NO_PROVISIONER,
    claim_class,
    find_volume,
    node_allows,
)

if TYPE_CHECKING:
    from kubesim.apiserver.core.store import Store

__all__ = [
    "MSG_BIND_CONFLICT",
    "MSG_NODE_CONFLICT",
    "PodVolumes",
    "Unbound",
    "claim_names",
    "pod_volumes",
]

MSG_NODE_CONFLICT: Final = "node(s) had volume node affinity conflict"
MSG_BIND_CONFLICT: Final = "node(s) didn't find available persistent volumes to bind"
MSG_UNBOUND_IMMEDIATE: Final = "pod has unbound immediate PersistentVolumeClaims"
_CLAIMS: Final = ("", "persistentvolumeclaims")
_VOLUMES: Final = ("", "persistentvolumes")
_CLASSES: Final = ("storage.k8s.io", "storageclasses")


def claim_names(pod: Mapping[str, Any]) -> list[str]:
    """The claims the pod's volumes name, in order."""
    out = []
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        source = volume.get("persistentVolumeClaim") if isinstance(volume, Mapping) else None
        if isinstance(source, Mapping) and source.get("claimName"):
            out.append(str(source["claimName"]))
    return out


@dataclass
class Unbound:
    """An unbound WaitForFirstConsumer claim and what may serve it."""

    claim: dict[str, Any]
    provisions: bool  # its class has a provisioner
    selected: str  # the node the scheduler picked for it before, if any


@dataclass
class PodVolumes:
    """What the pod's claims ask of a node. `rejected` is the PreFilter message, if any."""

    rejected: str = ""
    bound: list[dict[str, Any]] = field(default_factory=list)  # volumes of bound claims
    unbound: list[Unbound] = field(default_factory=list)
    volumes: list[dict[str, Any]] = field(default_factory=list)  # candidates for `unbound`

    @property
    def pending(self) -> bool:
        """Whether binding the pod must wait for claims to be bound first."""
        return bool(self.unbound)

    @property
    def claims(self) -> int:
        return len(self.bound) + len(self.unbound)

    def reason(self, node: Mapping[str, Any]) -> str | None:
        """The Filter: why the node cannot serve the pod's claims, or None."""
        for pv in self.bound:
            if not node_allows(pv, node):
                return MSG_NODE_CONFLICT
        name = str((node.get("metadata") or {}).get("name") or "")
        for item in self.unbound:
            if item.selected:
                if item.selected != name:
                    return MSG_BIND_CONFLICT
                continue
            if find_volume(item.claim, self.volumes, node) is None and not item.provisions:
                return MSG_BIND_CONFLICT
        return None

    def bind_writes(
        self, node: Mapping[str, Any]
    ) -> list[tuple[str, dict[str, Any], dict[str, str], dict[str, Any] | None]]:
        """PreBind for the chosen node: (kind, object, annotations to add, claimRef to set)
        per claim still to place: a static volume pre-bound to the claim, or the claim
        annotated with the node for its provisioner."""
        name = str((node.get("metadata") or {}).get("name") or "")
        out: list[tuple[str, dict[str, Any], dict[str, str], dict[str, Any] | None]] = []
        taken: set[str] = set()
        for item in self.unbound:
            if item.selected:
                continue
            free = [v for v in self.volumes if v["metadata"]["name"] not in taken]
            pv = find_volume(item.claim, free, node)
            if pv is not None:
                taken.add(pv["metadata"]["name"])
                meta = item.claim["metadata"]
                ref = {
                    "kind": "PersistentVolumeClaim",
                    "namespace": meta["namespace"],
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "apiVersion": "v1",
                    "resourceVersion": meta.get("resourceVersion"),
                }
                out.append(("volume", dict(pv), {ANN_BOUND_BY_CONTROLLER: "yes"}, ref))
            else:
                out.append(("claim", item.claim, {ANN_SELECTED_NODE: name}, None))
        return out


def pod_volumes(pod: Mapping[str, Any], store: Store) -> PodVolumes | None:
    """The PreFilter over the pod's claims; None for a pod that mounts none."""
    names = claim_names(pod)
    if not names:
        return None
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    out = PodVolumes()
    immediate_unbound = False
    for name in names:
        claim = store.get(_CLAIMS, (namespace, name))
        if claim is None:
            out.rejected = f'persistentvolumeclaim "{name}" not found'
            return out
        if claim["metadata"].get("deletionTimestamp"):
            out.rejected = f'persistentvolumeclaim "{name}" is being deleted'
            return out
        volume_name = (claim.get("spec") or {}).get("volumeName")
        if volume_name and (claim.get("status") or {}).get("phase") == "Bound":
            pv = store.get(_VOLUMES, ("", str(volume_name)))
            if pv is None:
                out.rejected = f'persistentvolume "{volume_name}" not found'
                return out
            out.bound.append(pv)
            continue
        sc = store.get(_CLASSES, ("", claim_class(claim))) if claim_class(claim) else None
        if sc is None or sc.get("volumeBindingMode") != "WaitForFirstConsumer" or volume_name:
            immediate_unbound = True
            continue
        selected = str(((claim["metadata"].get("annotations") or {}).get(ANN_SELECTED_NODE)) or "")
        provisions = str(sc.get("provisioner") or "") not in ("", NO_PROVISIONER)
        out.unbound.append(Unbound(claim, provisions, selected))
    if immediate_unbound:
        out.rejected = MSG_UNBOUND_IMMEDIATE
        return out
    if out.unbound:
        out.volumes = [
            pv
            for pv in store.resource(_VOLUMES).objects.values()
            if (pv.get("status") or {}).get("phase") == "Available"
        ]
    return out
