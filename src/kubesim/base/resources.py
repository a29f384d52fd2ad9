"""Resource arithmetic: quantities as integer units, a pod's effective requests (init containers,
sidecars, overhead) and the capacity assumed for nodes that report none.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any, Final

from kubeutil.quantity import parse_quantity

__all__ = [
    "DEFAULT_ALLOCATABLE",
    "NONZERO_CPU_MILLI",
    "NONZERO_MEMORY",
    "add_into",
    "pod_requests",
    "resource_units",
    "units_or_zero",
]


#: Capacity assumed for a Node whose status does not report it (the simulation's documented
#: defaults; a real kubelet always reports these).
DEFAULT_ALLOCATABLE: Final[Mapping[str, str]] = {
    "cpu": "32",
    "memory": "128Gi",
    "pods": "110",
    "ephemeral-storage": "100Gi",
}

# kube-scheduler scores pods that request nothing as if they asked for this much, so that
# "best effort" pods still spread instead of piling onto one node.
NONZERO_CPU_MILLI: Final = 100


NONZERO_MEMORY: Final = 200 * 1024 * 1024

# ---------------------------------------------------------------------------------------------
# Quantities (parsed by kubeutil.quantity, shared with the placement planner)


@functools.lru_cache(maxsize=8192)
def resource_units(name: str, q: str | int | float) -> int:
    """Convert a quantity to the integer unit the scheduler accounts in.

    CPU is counted in millicores and everything else in whole units (bytes, pods, devices),
    rounding up like `Quantity.MilliValue()` / `Quantity.Value()`, so that a request never
    looks smaller than it is. Cached: a cluster uses few distinct quantity strings.
    """
    value = parse_quantity(q)
    if name == "cpu":
        return math.ceil(value * 1000)
    return math.ceil(value)


def units_or_zero(name: str, q: Any) -> int:
    """`resource_units` for data that passed no validation: the scheduler must never raise."""
    try:
        return resource_units(name, q)
    except (ValueError, TypeError, ZeroDivisionError, OverflowError):
        return 0


# ---------------------------------------------------------------------------------------------
# Pod resource requests


def _container_requests(container: Mapping[str, Any]) -> dict[str, int]:
    """A container's effective requests: limits stand in for absent requests, as the API
    server's defaulting does, so a pod that only sets `limits: {nvidia.com/gpu: 1}` still
    consumes a GPU."""
    resources = container.get("resources") or {}
    requests = resources.get("requests") or {}
    limits = resources.get("limits") or {}
    out: dict[str, int] = {}
    if isinstance(limits, Mapping):
        for name, q in limits.items():
            out[str(name)] = units_or_zero(str(name), q)
    if isinstance(requests, Mapping):
        for name, q in requests.items():
            out[str(name)] = units_or_zero(str(name), q)
    return out


def add_into(total: dict[str, int], more: Mapping[str, int]) -> None:
    for name, v in more.items():
        total[name] = total.get(name, 0) + v


def _max_into(total: dict[str, int], other: Mapping[str, int]) -> None:
    for name, v in other.items():
        if v > total.get(name, 0):
            total[name] = v


def pod_requests(pod: Mapping[str, Any]) -> dict[str, int]:
    """What a pod occupies on its node, in `resource_units` (no "pods" entry).

    Follows `resourcehelper.PodRequests`: the sum over app containers, at least the largest
    init container (plus the restartable "sidecar" init containers started before it, which
    keep running), plus `spec.overhead`.
    """
    spec = pod.get("spec") or {}
    total: dict[str, int] = {}
    for c in spec.get("containers") or ():
        if isinstance(c, Mapping):
            add_into(total, _container_requests(c))
    init_peak: dict[str, int] = {}
    sidecars: dict[str, int] = {}
    for c in spec.get("initContainers") or ():
        if not isinstance(c, Mapping):
            continue
        req = _container_requests(c)
        if c.get("restartPolicy") == "Always":
            add_into(total, req)
            add_into(sidecars, req)
            _max_into(init_peak, sidecars)
        else:
            during = dict(sidecars)
            add_into(during, req)
            _max_into(init_peak, during)
    _max_into(total, init_peak)
    overhead = spec.get("overhead") or {}
    if isinstance(overhead, Mapping):
        add_into(total, {str(k): units_or_zero(str(k), v) for k, v in overhead.items()})
    return {k: v for k, v in total.items() if v > 0}
