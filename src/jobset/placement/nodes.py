"""What a pod template asks of a node, decided from Node objects alone (pure functions).

The planned strategy picks a domain for a whole Job before any pod exists, so it must
predict what the scheduler will accept: a node is *eligible* for the Job's pods when it is
Ready and schedulable, every NoSchedule/NoExecute taint is tolerated, and the template's
own nodeSelector and required node affinity match it. A domain *fits* the Job when its
eligible nodes can hold the Job's parallel pods by allocatable resources (each node holds
as many pods as its tightest resource allows, `pods` included).

This is deliberately the scheduler's filter subset that does not depend on other pods:
exclusive domains are not shared with other JobSet Jobs, so their pods need not be
counted. Pods of other workloads are not seen (the controller does not cache all pods); a
domain they fill makes the Job's pods wait, exactly as with a user-chosen nodeSelector.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from functools import lru_cache
from typing import Any, Final

from kubeutil.quantity import parse_quantity

__all__ = [
    "node_is_eligible",
    "pod_requests",
    "pods_that_fit",
    "quantity",
    "tolerates",
]

# What a node offers when its status does not say (the simulated cluster's defaults too).
_DEFAULT_PODS: Final = 110

# A cluster uses few distinct quantity strings; the planner asks about the same ones for
# every domain it considers.
_parse = lru_cache(maxsize=4096)(parse_quantity)


def quantity(q: Any) -> Fraction:
    """A Kubernetes quantity ("500m", "8Gi", 4) as an exact number; 0 when unreadable."""
    if isinstance(q, bool):
        return Fraction(0)
    if isinstance(q, int | float):
        return Fraction(q)
    try:
        return Fraction(_parse(str(q).strip()))
    except (ValueError, ZeroDivisionError):
        return Fraction(0)


def pod_requests(pod_spec: Mapping[str, Any]) -> dict[str, Fraction]:
    """Effective requests of one pod: the sum over containers (requests, else limits),
    at least the largest init container's, plus the pod overhead."""

    def of(container: Mapping[str, Any]) -> dict[str, Fraction]:
        resources = container.get("resources") or {}
        asked = dict(resources.get("limits") or {})
        asked.update(resources.get("requests") or {})
        return {k: quantity(v) for k, v in asked.items()}

    total: dict[str, Fraction] = {}
    for container in pod_spec.get("containers") or []:
        for k, v in of(container).items():
            total[k] = total.get(k, Fraction(0)) + v
    for container in pod_spec.get("initContainers") or []:
        for k, v in of(container).items():
            total[k] = max(total.get(k, Fraction(0)), v)
    for k, v in (pod_spec.get("overhead") or {}).items():
        total[k] = total.get(k, Fraction(0)) + quantity(v)
    return {k: v for k, v in total.items() if v > 0}


def pods_that_fit(node: Mapping[str, Any], requests: Mapping[str, Fraction]) -> int:
    """How many pods with these requests the node's allocatable resources hold."""
    status = node.get("status") or {}
    allocatable = status.get("allocatable") or status.get("capacity") or {}
    count = int(quantity(allocatable["pods"])) if "pods" in allocatable else _DEFAULT_PODS
    for name, need in requests.items():
        if name not in allocatable:
            # cpu/memory/storage have simulated defaults; an absent extended resource is 0.
            if "/" in name:
                return 0
            continue
        count = min(count, int(quantity(allocatable[name]) / need))
    return max(count, 0)


def _ready(node: Mapping[str, Any]) -> bool:
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return True  # no Ready condition reported: Ready, as the simulated cluster treats it


def tolerates(tolerations: Iterable[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    """v1.Toleration.ToleratesTaint."""
    for tol in tolerations:
        effect = tol.get("effect") or ""
        if effect and effect != taint.get("effect"):
            continue
        key = tol.get("key") or ""
        operator = tol.get("operator") or "Equal"
        if not key:
            if operator == "Exists":
                return True
            continue
        if key != taint.get("key"):
            continue
        if operator == "Exists" or (tol.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def _expression_matches(expr: Mapping[str, Any], value: str | None) -> bool:
    op = expr.get("operator")
    values = [str(v) for v in expr.get("values") or []]
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt") and value is not None and len(values) == 1:
        try:
            a, b = int(value), int(values[0])
        except ValueError:
            return False
        return a > b if op == "Gt" else a < b
    return False


def _node_affinity_matches(affinity: Any, labels: Mapping[str, str], name: str) -> bool:
    if not isinstance(affinity, dict):
        return True
    required = (affinity.get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if not isinstance(required, dict):
        return True
    terms = required.get("nodeSelectorTerms") or []
    for term in terms:
        exprs = term.get("matchExpressions") or []
        fields = term.get("matchFields") or []
        if not exprs and not fields:
            continue  # an empty term matches nothing
        if all(_expression_matches(e, labels.get(str(e.get("key")))) for e in exprs) and all(
            _expression_matches(f, name if f.get("key") == "metadata.name" else None)
            for f in fields
        ):
            return True
    return not terms


def node_is_eligible(node: Mapping[str, Any], pod_spec: Mapping[str, Any]) -> bool:
    """Could the scheduler bind a pod of this template to this node, ignoring other pods?"""
    meta = node.get("metadata") or {}
    labels: Mapping[str, str] = meta.get("labels") or {}
    if not _ready(node) or (node.get("spec") or {}).get("unschedulable"):
        return False
    tolerations = pod_spec.get("tolerations") or []
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tolerations, taint):
            return False
    for key, value in (pod_spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    return _node_affinity_matches(pod_spec.get("affinity"), labels, str(meta.get("name") or ""))
