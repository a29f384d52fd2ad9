"""Where a simulated pod is reached: no process listens on a simulated pod's IP, so the host
stands in for it (a controller on the host serving what the pod would serve). Shared by the
Endpoints controller, the kubelet's runtime and the cluster's Service resolver."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["SIMULATED_POD_HOST", "simulated_pod_host"]

SIMULATED_POD_HOST: Final = "127.0.0.1"


def simulated_pod_host(pod: Mapping[str, Any], ip: str) -> str:
    """The host to dial for `pod` at `ip` when the pod has no real network: the host itself."""
    return SIMULATED_POD_HOST
