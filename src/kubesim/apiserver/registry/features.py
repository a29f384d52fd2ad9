"""The Kubernetes feature gates of the simulated API server (`jobset sim --kube-feature-gates`).

Only the gates modelled here are accepted, all off by default as in Kubernetes. The registry
modules read them when the API server is built: a gate can serve a type
(`scheduling/workload.py`) or change a type's strategy (`batch/job.py`, `core/pod.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

__all__ = [
    "GANG_SCHEDULING",
    "GENERIC_WORKLOAD",
    "KUBE_FEATURE_GATES",
    "MUTABLE_POD_RESOURCES_FOR_SUSPENDED_JOBS",
    "TOPOLOGY_AWARE",
    "WORKLOAD_AWARE_PREEMPTION",
    "FeatureGates",
    "check_gates",
]

MUTABLE_POD_RESOURCES_FOR_SUSPENDED_JOBS: Final = "MutablePodResourcesForSuspendedJobs"
# Workload-Aware Scheduling (scheduling/, controllers/scheduler/gang.py)
GENERIC_WORKLOAD: Final = "GenericWorkload"
GANG_SCHEDULING: Final = "GangScheduling"
TOPOLOGY_AWARE: Final = "TopologyAwareWorkloadScheduling"
WORKLOAD_AWARE_PREEMPTION: Final = "WorkloadAwarePreemption"

KUBE_FEATURE_GATES: Final[Mapping[str, bool]] = {
    MUTABLE_POD_RESOURCES_FOR_SUSPENDED_JOBS: False,
    GENERIC_WORKLOAD: False,
    GANG_SCHEDULING: False,
    TOPOLOGY_AWARE: False,
    WORKLOAD_AWARE_PREEMPTION: False,
}


def check_gates(gates: Mapping[str, bool]) -> None:
    """Refuse a gate that is not modelled, naming it and the ones that are."""
    unknown = sorted(set(gates) - set(KUBE_FEATURE_GATES))
    if unknown:
        raise ValueError(
            f"unrecognized Kubernetes feature gate {unknown[0]} "
            f"(modelled: {', '.join(sorted(KUBE_FEATURE_GATES))})"
        )


class FeatureGates:
    """Which of the gates are on; everything off by default, as in Kubernetes 1.36."""

    def __init__(self, gates: Mapping[str, bool]) -> None:
        self._on = {name for name, on in gates.items() if on}
        self.generic = bool(gates.get(GENERIC_WORKLOAD))
        self.gang = bool(gates.get(GANG_SCHEDULING))
        self.topology = bool(gates.get(TOPOLOGY_AWARE))
        self.preemption = bool(gates.get(WORKLOAD_AWARE_PREEMPTION))
        self.mutable_pod_resources = bool(gates.get(MUTABLE_POD_RESOURCES_FOR_SUSPENDED_JOBS))

    def enabled(self, name: str) -> bool:
        return name in self._on
