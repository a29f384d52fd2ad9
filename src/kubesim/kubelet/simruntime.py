"""The runtime of simulated containers: `kubesim.programs` on the kubelet's clock.

A container's program (`Container.program`, set by the kubelet from its command) says how
long it runs, how it exits and what it prints; this runtime gives the container its id and
keeps its log (and the log of its run before a restart). There is no sandbox, nothing to
stop: the kubelet ends a simulated container when its program's time is up or it is killed.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any

from kubesim.kubelet.cri import PodKey
from kubesim.programs import program_for

__all__ = ["SimulatedRuntime"]


class SimulatedRuntime:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self._logs: dict[str, dict[str, str]] = {}  # pod uid -> container -> log text
        self._previous: dict[str, dict[str, str]] = {}  # ... of the run before it

    def bind(self, wake: Callable[[PodKey], None]) -> None:
        return None

    def claims(self, container: Mapping[str, Any]) -> bool:
        return True

    async def prepare(self, key: PodKey, run: Any, pod: Mapping[str, Any]) -> None:
        return None

    def start(
        self, key: PodKey, c: Any, source: Mapping[str, Any], pod: Mapping[str, Any], run: Any
    ) -> None:
        c.container_id = f"containerd://{self.rng.getrandbits(256):064x}"
        logs = self._logs.setdefault(run.uid, {})
        if c.name in logs:
            self._previous.setdefault(run.uid, {})[c.name] = logs[c.name]
        logs[c.name] = c.program.log

    def stop_container(self, run: Any, name: str) -> None:
        return None

    def terminate(self, run: Any, grace: float) -> bool:
        return True

    def logs(self, pod: Mapping[str, Any], container: str, previous: bool = False) -> str | None:
        """The program's output once it has started; a pod that never ran it here (restored
        from a data directory) shows what the program prints."""
        uid = str((pod.get("metadata") or {}).get("uid") or "")
        if previous:
            return self._previous.get(uid, {}).get(container)
        known = self._logs.get(uid, {})
        if container in known:
            return known[container]
        if (pod.get("status") or {}).get("phase") in (None, "Pending"):
            return ""
        spec = pod.get("spec") or {}
        for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
            if c.get("name") == container:
                return program_for(c, pod=pod).log
        return ""

    def forget(self, uid: str) -> None:
        self._logs.pop(uid, None)
        self._previous.pop(uid, None)
