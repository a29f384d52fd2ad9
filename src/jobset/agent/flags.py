"""The flags of `jobset in-place-restart-agent` (the rest is its environment,
`environment.py`), shared by `jobset.cli`'s parser and the agent's own fast start."""

from __future__ import annotations

import argparse

__all__ = ["AGENT_DESCRIPTION", "add_agent_flags"]

AGENT_DESCRIPTION = (
    "The in-pod agent of the InPlaceRestart strategy (upstream's in-place-restart-agent): "
    "writes its pod's in-place restart attempt, watches its JobSet, holds the worker behind "
    "a barrier and exits to restart the pod in place. Configured by upstream's environment: "
    "JOBSET_NAME, POD_NAME (required), WORKER_COMMAND (main-container mode), "
    "STARTUP_PROBE_PATH / STARTUP_PROBE_PORT (sidecar mode; /barrier-is-down, 8081), "
    "IN_PLACE_RESTART_EXIT_CODE (1). Uses the pod's ServiceAccount (in-cluster config) "
    "unless --kubeconfig or $KUBECONFIG."
)


def add_agent_flags(p: argparse.ArgumentParser) -> None:
    p.description = AGENT_DESCRIPTION
    p.add_argument("--kubeconfig", default=None, help="outside a cluster: this kubeconfig")
    p.add_argument("--log-format", choices=("json", "console"), default="json")
    p.add_argument("--log-level", default="INFO")
