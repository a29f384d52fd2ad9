"""Node taints as the kubelet's node-lifecycle duties read them (the taint manager's view).

A node whose Ready condition is False or Unknown counts as tainted `not-ready` /
`unreachable` (NoExecute), as the node lifecycle controller would taint it; a pod stays on a
NoExecute-tainted node only as long as its matching tolerations allow.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

__all__ = [
    "NOT_READY_TAINT",
    "UNREACHABLE_TAINT",
    "no_execute_taints",
    "node_ready",
    "tolerations_for",
]

NOT_READY_TAINT: Final = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT: Final = "node.kubernetes.io/unreachable"


def node_ready(node: Mapping[str, Any]) -> bool:
    for c in (node.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready":
            return bool(c.get("status") == "True")
    return True  # a Node that reports no Ready condition counts as Ready in the simulation


def no_execute_taints(node: Mapping[str, Any]) -> list[tuple[str, str]]:
    """NoExecute taints, including the ones the node lifecycle controller puts on a node
    whose Ready condition is False (not-ready) or Unknown (unreachable)."""
    out: list[tuple[str, str]] = []
    for t in (node.get("spec") or {}).get("taints") or ():
        if t.get("effect") == "NoExecute":
            out.append((str(t.get("key") or ""), str(t.get("value") or "")))
    for c in (node.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready" and c.get("status") != "True":
            key = NOT_READY_TAINT if c.get("status") == "False" else UNREACHABLE_TAINT
            if not any(k == key for k, _ in out):
                out.append((key, ""))
    return out


def tolerations_for(
    tolerations: Sequence[Mapping[str, Any]], key: str, value: str
) -> list[Mapping[str, Any]]:
    out = []
    for t in tolerations:
        if t.get("effect") not in (None, "", "NoExecute"):
            continue
        t_key = t.get("key") or ""
        op = t.get("operator") or "Equal"
        if t_key and t_key != key:
            continue
        if not t_key and op != "Exists":
            continue
        if op == "Exists" or (t.get("value") or "") == value:
            out.append(t)
    return out
