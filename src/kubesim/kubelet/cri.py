"""What the simulated kubelet asks of a container runtime, shaped after CRI.

The kubelet (`kubelet.py`) keeps every pod's state machine and talks to runtimes only
through `ContainerRuntime`, in CRI's order: `prepare` is RunPodSandbox (network namespace,
the pod's `/etc` files, volumes), `start` is CreateContainer + StartContainer (raising
`NOT_YET` errors while the container cannot be configured), `stop_container` and
`terminate` are StopContainer, `forget` is RemovePodSandbox, `logs` is the container's log.
A runtime reports a container's exit into its state (`Container.program`, `exit_reason`)
and wakes the pod's sync. Exec, attach and port-forward are the runtime's streams
(`podexec.py`).

Two runtimes implement it: `SimulatedRuntime` (`simruntime.py`), whose containers are
`kubesim.programs` run on the kubelet's clock, and `ProcessRuntime` (`processes.py`), whose
containers run under runc. `Runtimes` picks the one that claims a container's image.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

from kubesim.kubelet.envvars import ConfigError
from kubesim.kubelet.volumes import MountError

__all__ = ["NOT_YET", "ContainerRuntime", "CreateError", "PodKey", "Runtimes"]

PodKey = tuple[str, str]


class CreateError(Exception):
    """The runtime refused to create the container; `reason` is its waiting reason
    (`CreateContainerError`, as containerd's refusals are reported)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


# What `start` raises for a container that cannot be created yet (the kubelet retries):
# CreateContainerConfigError, CreateContainerError, or ContainerCreating while a volume is
# not ready.
NOT_YET: Final = (ConfigError, MountError, CreateError)


class ContainerRuntime(Protocol):
    def bind(self, wake: Callable[[PodKey], None]) -> None:
        """Called once the kubelet runs: how to wake a pod's sync."""

    def claims(self, container: Mapping[str, Any]) -> bool:
        """Whether this runtime runs `container` (by its image)."""

    async def prepare(self, key: PodKey, run: Any, pod: Mapping[str, Any]) -> None:
        """RunPodSandbox (once per pod run); sets the run's pod IP when it has one."""

    def start(
        self, key: PodKey, c: Any, source: Mapping[str, Any], pod: Mapping[str, Any], run: Any
    ) -> None:
        """CreateContainer and StartContainer of container `c` (spec `source`)."""

    def stop_container(self, run: Any, name: str) -> None:
        """StopContainer without a grace period; the exit is reported later."""

    def terminate(self, run: Any, grace: float) -> bool:
        """StopContainer of every container of the pod with `grace`; True when none runs."""

    def logs(self, pod: Mapping[str, Any], container: str, previous: bool = False) -> str | None:
        """The container's log (of its run before a restart with `previous`; None: none)."""

    def forget(self, uid: str) -> None:
        """RemovePodSandbox: the pod object is gone."""


class Runtimes:
    """The runtimes of one kubelet: a real one (runc) for the images it claims, when there is
    one, and the simulated one for every other container."""

    def __init__(self, simulated: ContainerRuntime, real: ContainerRuntime | None) -> None:
        self.simulated = simulated
        self.real = real

    def all(self) -> list[ContainerRuntime]:
        return [self.simulated] if self.real is None else [self.simulated, self.real]

    def for_container(self, container: Mapping[str, Any]) -> ContainerRuntime:
        if self.real is not None and self.real.claims(container):
            return self.real
        return self.simulated

    def for_pod(self, pod: Mapping[str, Any]) -> list[ContainerRuntime]:
        """The runtimes that run some container of `pod`."""
        spec = pod.get("spec") or {}
        every = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
        found: list[ContainerRuntime] = []
        for c in every:
            runtime = self.for_container(c)
            if runtime not in found:
                found.append(runtime)
        return found
