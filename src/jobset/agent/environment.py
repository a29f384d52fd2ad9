"""The agent's environment contract, upstream's (`cmd/in-place-restart-agent`):

| variable | required | default | meaning |
|---|---|---|---|
| `JOBSET_NAME` | yes | | the pod's JobSet (fieldRef `metadata.annotations['jobset.sigs.k8s.io/jobset-name']`) |
| `POD_NAME` | yes | | the pod (fieldRef `metadata.name`) |
| `WORKER_COMMAND` | no | | set: main-container mode, the agent runs it (`$SHELL -c`, else bash, else sh) once the barrier lifts and exits with its code |
| `STARTUP_PROBE_PATH` | no | `/barrier-is-down` | sidecar mode: the path that answers 200 once the barrier lifts |
| `STARTUP_PROBE_PORT` | no | `8081` | sidecar mode: its port |
| `IN_PLACE_RESTART_EXIT_CODE` | no | `1` | the exit code that asks the kubelet to restart the pod in place |

The namespace is read from the ServiceAccount mount
(`/var/run/secrets/kubernetes.io/serviceaccount/namespace`), as upstream does. WORKER_COMMAND
with STARTUP_PROBE_PATH or STARTUP_PROBE_PORT is an error (the two modes exclude each other).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["NAMESPACE_FILE", "AgentConfigError", "AgentEnv", "parse_env"]

NAMESPACE_FILE: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
DEFAULT_STARTUP_PROBE_PATH: Final = "/barrier-is-down"
DEFAULT_STARTUP_PROBE_PORT: Final = 8081
DEFAULT_IN_PLACE_RESTART_EXIT_CODE: Final = 1


class AgentConfigError(Exception):
    """The environment breaks the contract; the message names the variable and the rule."""


@dataclass(frozen=True)
class AgentEnv:
    namespace: str
    jobset_name: str
    pod_name: str
    worker_command: str
    startup_probe_path: str
    startup_probe_port: int
    exit_code: int

    @property
    def sidecar_mode(self) -> bool:
        return not self.worker_command


def _required(environ: Mapping[str, str], name: str) -> str:
    value = environ.get(name, "")
    if not value:
        raise AgentConfigError(f"env var {name} must be set")
    return value


def _int(environ: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = environ.get(name, "")
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise AgentConfigError(f"env var {name}={raw!r}: must be an integer") from None
    if not low <= value <= high:
        raise AgentConfigError(f"env var {name}={value}: must be between {low} and {high}")
    return value


def parse_env(environ: Mapping[str, str], namespace_file: Path = NAMESPACE_FILE) -> AgentEnv:
    try:
        namespace = namespace_file.read_text().strip()
    except OSError as exc:
        raise AgentConfigError(
            f"cannot read the namespace from {namespace_file} ({exc.strerror}): is "
            "automountServiceAccountToken false on the pod or its ServiceAccount?"
        ) from None
    if not namespace:
        raise AgentConfigError(f"{namespace_file} is empty")
    worker = environ.get("WORKER_COMMAND", "")
    if worker and (environ.get("STARTUP_PROBE_PATH") or environ.get("STARTUP_PROBE_PORT")):
        raise AgentConfigError(
            "WORKER_COMMAND cannot be set with STARTUP_PROBE_PATH or STARTUP_PROBE_PORT "
            "(main-container mode has no startup probe)"
        )
    path = environ.get("STARTUP_PROBE_PATH", "") or DEFAULT_STARTUP_PROBE_PATH
    if not path.startswith("/"):
        raise AgentConfigError(f"env var STARTUP_PROBE_PATH={path!r}: must start with /")
    return AgentEnv(
        namespace=namespace,
        jobset_name=_required(environ, "JOBSET_NAME"),
        pod_name=_required(environ, "POD_NAME"),
        worker_command=worker,
        startup_probe_path=path,
        startup_probe_port=_int(
            environ, "STARTUP_PROBE_PORT", DEFAULT_STARTUP_PROBE_PORT, 1, 65535
        ),
        exit_code=_int(
            environ, "IN_PLACE_RESTART_EXIT_CODE", DEFAULT_IN_PLACE_RESTART_EXIT_CODE, 0, 255
        ),
    )
