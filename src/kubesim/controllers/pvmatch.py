"""Which PersistentVolume may serve which claim, shared by the PV controller and the
scheduler's VolumeBinding filter, so that both judge a claim the same way.

Pure: the functions read the objects they are given. The rules are the PV controller's
(`pkg/controller/volume/persistentvolume/index.go`, `volume/util.FindMatchingVolume`): a
volume pre-bound to the claim (its `claimRef`) or named by the claim (`volumeName`) wins;
otherwise the smallest Available volume of the claim's class whose access modes include
the claim's, whose capacity is at least the request, whose volumeMode is the claim's and
whose labels match the claim's selector; a volume whose node affinity excludes the node (when
one is given) is skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from kubesim.apiserver.registry.core.persistentvolumeclaim import storage_bytes
from kubesim.controllers.scheduler.affinity import node_term_matches
from kubesim.machinery.selectors.labels import LabelSelector

__all__ = [
    "ANN_BIND_COMPLETED",
    "ANN_BOUND_BY_CONTROLLER",
    "ANN_PROVISIONED_BY",
    "ANN_SELECTED_NODE",
    "ANN_STORAGE_PROVISIONER",
    "ANN_STORAGE_PROVISIONER_BETA",
    "NO_PROVISIONER",
    "bound_to",
    "claim_class",
    "claim_request",
    "find_volume",
    "node_allows",
    "volume_class",
]

ANN_BIND_COMPLETED: Final = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER: Final = "pv.kubernetes.io/bound-by-controller"
ANN_PROVISIONED_BY: Final = "pv.kubernetes.io/provisioned-by"
ANN_SELECTED_NODE: Final = "volume.kubernetes.io/selected-node"
ANN_STORAGE_PROVISIONER: Final = "volume.kubernetes.io/storage-provisioner"
ANN_STORAGE_PROVISIONER_BETA: Final = "volume.beta.kubernetes.io/storage-provisioner"
# The provisioner name of classes whose volumes an administrator creates by hand.
NO_PROVISIONER: Final = "kubernetes.io/no-provisioner"
_BETA_CLASS: Final = "volume.beta.kubernetes.io/storage-class"


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def claim_class(claim: Mapping[str, Any]) -> str:
    """The claim's class: the beta annotation, else `spec.storageClassName` ("" for none)."""
    beta = _annotations(claim).get(_BETA_CLASS)
    if beta is not None:
        return str(beta)
    return str((claim.get("spec") or {}).get("storageClassName") or "")


def volume_class(pv: Mapping[str, Any]) -> str:
    beta = _annotations(pv).get(_BETA_CLASS)
    if beta is not None:
        return str(beta)
    return str((pv.get("spec") or {}).get("storageClassName") or "")


def claim_request(claim: Mapping[str, Any]) -> int:
    requests = ((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}
    return storage_bytes(requests.get("storage")) or 0


def node_allows(pv: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """Whether the volume's required node affinity admits the node (no affinity: any)."""
    required = (((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required")) or {}
    terms = required.get("nodeSelectorTerms")
    if not terms:
        return True
    meta = node.get("metadata") or {}
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    return any(node_term_matches(t, labels, str(meta.get("name") or "")) for t in terms)


def bound_to(pv: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    """Whether the volume's `claimRef` is this claim: its name and namespace, and its UID
    when the reference has one (kube-controller-manager's IsVolumeBoundToClaim). A claim of
    the same name in another namespace is another claim."""
    ref = (pv.get("spec") or {}).get("claimRef") or {}
    meta = claim.get("metadata") or {}
    if ref.get("name") != meta.get("name") or ref.get("namespace") != meta.get("namespace"):
        return False
    return not ref.get("uid") or ref.get("uid") == meta.get("uid")


def _fits(pv: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    spec, cspec = pv.get("spec") or {}, claim.get("spec") or {}
    if volume_class(pv) != claim_class(claim):
        return False
    if (spec.get("volumeMode") or "Filesystem") != (cspec.get("volumeMode") or "Filesystem"):
        return False
    if not set(cspec.get("accessModes") or ()) <= set(spec.get("accessModes") or ()):
        return False
    if (storage_bytes((spec.get("capacity") or {}).get("storage")) or 0) < claim_request(claim):
        return False
    selector = cspec.get("selector")
    if selector:
        labels = (pv.get("metadata") or {}).get("labels") or {}
        if not LabelSelector.from_label_selector(selector).matches(labels):
            return False
    return True


def find_volume(
    claim: Mapping[str, Any],
    volumes: Iterable[Mapping[str, Any]],
    node: Mapping[str, Any] | None = None,
) -> Mapping[str, Any] | None:
    """The volume to bind `claim` to, or None. With `node`, only volumes it can reach."""
    name = (claim.get("spec") or {}).get("volumeName")
    best: Mapping[str, Any] | None = None
    best_size = 0
    for pv in volumes:
        if (pv.get("metadata") or {}).get("deletionTimestamp"):
            continue
        if node is not None and not node_allows(pv, node):
            continue
        claimed = bool((pv.get("spec") or {}).get("claimRef"))
        if name:
            if (pv.get("metadata") or {}).get("name") == name:
                return pv if not claimed or bound_to(pv, claim) else None
            continue
        if claimed:
            if bound_to(pv, claim) and _fits(pv, claim):
                return pv  # pre-bound to this claim
            continue
        if (pv.get("status") or {}).get("phase") not in (None, "", "Available", "Pending"):
            continue
        if not _fits(pv, claim):
            continue
        size = storage_bytes(((pv.get("spec") or {}).get("capacity") or {}).get("storage")) or 0
        if best is None or size < best_size:
            best, best_size = pv, size
    return best
