"""What the simulated kubelet knows about one pod, and the status it reports from that.

`PodRun` is one pod on its node (sandbox start, IPs, how it ends) with a `Container` per
container (waiting, running, terminated; restarts; a real process's probe verdicts).
`pod_status` renders them as a kubelet does: phase, podIP / hostIP, `containerStatuses`,
`initContainerStatuses`, and the conditions PodReadyToStartContainers / Initialized / Ready /
ContainersReady / PodScheduled (and AllContainersRestarting for a pod with a
`RestartAllContainers` rule), keeping the conditions other components own.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kubesim.clock import now_rfc3339
from kubesim.kubelet.volumes import Mount
from kubesim.programs.programs import Program

__all__ = ["Container", "PodRun", "image_id", "merge_conditions", "pod_phase", "pod_status"]

TERMINAL: Final = frozenset({"Succeeded", "Failed"})
_CANONICAL_CONDITIONS: Final = (
    "PodReadyToStartContainers",
    "Initialized",
    "Ready",
    "ContainersReady",
    "PodScheduled",
    "AllContainersRestarting",
)


@dataclass
class Container:
    """One container's life as this kubelet runs it."""

    name: str
    image: str
    init: bool
    sidecar: bool
    state: str = "waiting"  # waiting | running | terminated
    waiting_reason: str = "ContainerCreating"
    waiting_message: str = ""
    program: Program | None = None
    started_at: str = ""
    ends_at: float = math.inf
    exit_code: int = 0
    term_reason: str = ""
    term_message: str = ""
    finished_at: str = ""
    restarts: int = 0
    last_state: dict[str, Any] = field(default_factory=dict)
    retry_at: float = 0.0
    container_id: str = ""
    # A real process (`--run-image`): its probes' verdicts and how it ended, set by the runtime
    real: bool = False
    probe_started: bool = True
    probe_ready: bool = True
    exit_reason: str = ""
    exit_message: str = ""
    # A simulated container's startup probe passes at this loop time (its initialDelaySeconds)
    startup_at: float = 0.0
    # A simulated container's writes to its emptyDir mounts still to happen: (loop time,
    # absolute path, content or None = removed), and those mounts
    pending_writes: list[tuple[float, str, str | None]] = field(default_factory=list)
    mounts: list[Mount] = field(default_factory=list)

    @property
    def ready(self) -> bool:
        return (
            self.state == "running"
            and (not self.init or self.sidecar)
            and self.probe_started
            and self.probe_ready
        )

    def terminated(self) -> dict[str, Any]:
        term: dict[str, Any] = {
            "exitCode": self.exit_code,
            "reason": self.term_reason,
            "startedAt": self.started_at or self.finished_at,
            "finishedAt": self.finished_at,
        }
        if self.term_message:
            term["message"] = self.term_message
        if self.container_id:
            term["containerID"] = self.container_id
        return term

    def status(self) -> dict[str, Any]:
        if self.state == "running":
            state: dict[str, Any] = {"running": {"startedAt": self.started_at}}
        elif self.state == "terminated":
            state = {"terminated": self.terminated()}
        else:
            waiting: dict[str, Any] = {"reason": self.waiting_reason}
            if self.waiting_message:
                waiting["message"] = self.waiting_message
            state = {"waiting": waiting}
        out: dict[str, Any] = {
            "name": self.name,
            "image": self.image,
            "imageID": image_id(self.image) if self.container_id else "",
            "ready": self.ready,
            "restartCount": self.restarts,
            "started": self.state == "running" and self.probe_started,
            "state": state,
            "lastState": self.last_state,
        }
        if self.container_id:
            out["containerID"] = self.container_id
        return out


@dataclass
class PodRun:
    """One pod on its node: sandbox start, containers, and how it ends."""

    uid: str
    node: str
    start_at: float
    containers: list[Container]
    restart_policy: str
    started: bool = False
    start_time: str = ""
    pod_ip: str = ""
    host_ip: str = ""
    initialized: bool = False
    deadline_at: float | None = None
    terminate_at: float | None = None
    done: bool = False
    reason: str = ""
    message: str = ""
    dirty: bool = False  # a real container's probe verdict changed: write the status
    # RestartAllContainers (KEP-5532): some container's rule can restart the whole pod in
    # place; `restarting` while its containers are being stopped, `ever_initialized` keeps
    # the Initialized condition True through a restart, as the kubelet does
    restart_all_rule: bool = False
    restarting: bool = False
    restart_reported: bool = False
    restart_message: str = ""
    ever_initialized: bool = False
    wake_at: float = math.inf
    # The pod's emptyDir volumes as simulated containers see them (`simfiles.py`): they
    # outlive container restarts and go with the pod
    files: dict[tuple[str, str], str] = field(default_factory=dict)

    @property
    def inits(self) -> list[Container]:
        return [c for c in self.containers if c.init]

    @property
    def mains(self) -> list[Container]:
        return [c for c in self.containers if not c.init]


def image_id(image: str) -> str:
    digest = hashlib.sha256(image.encode()).hexdigest()
    name = image.rsplit("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        name = name[: len(name) - len(last)] + last.split(":", 1)[0]
    if "/" not in name:
        name = f"docker.io/library/{name}"
    return f"{name}@sha256:{digest}"


def pod_phase(run: PodRun) -> str:
    """The pod's phase from its run: Pending, Running, then Succeeded or Failed."""
    if run.done:
        if run.reason:
            return "Failed"
        mains = run.mains
        if not run.initialized or any(c.state != "terminated" or c.exit_code != 0 for c in mains):
            return "Failed"
        return "Succeeded"
    # As the kubelet's getPhase: a main container that never started (waiting, with no
    # earlier run) keeps the pod Pending.
    if run.started and run.initialized and not any(_never_ran(c) for c in run.mains):
        return "Running"
    return "Pending"


def _never_ran(c: Container) -> bool:
    return c.state == "waiting" and not c.last_state


def pod_status(run: PodRun, pod: Mapping[str, Any]) -> dict[str, Any]:
    """The status a kubelet reports for the pod of `run`: phase, IPs, container statuses,
    and the kubelet-owned conditions."""
    now = now_rfc3339()
    old = pod.get("status") or {}
    status = dict(old)
    phase = pod_phase(run)
    status["phase"] = phase
    if run.reason:
        status["reason"] = run.reason
        status["message"] = run.message
    if run.started:
        status["startTime"] = run.start_time
        status["hostIP"] = run.host_ip
        status["hostIPs"] = [{"ip": run.host_ip}]
        status["podIP"] = run.pod_ip
        status["podIPs"] = [{"ip": run.pod_ip}]
    for c in run.mains:
        if c.state == "waiting" and c.waiting_reason == "PodInitializing" and run.initialized:
            c.waiting_reason = "ContainerCreating"
    status["containerStatuses"] = [c.status() for c in run.mains]
    if run.inits:
        status["initContainerStatuses"] = [c.status() for c in run.inits]
    wanted: dict[str, tuple[str, str, str]] = {"PodScheduled": ("True", "", "")}
    if run.started:
        wanted["PodReadyToStartContainers"] = ("True", "", "")
    if run.initialized or run.ever_initialized or (phase in TERMINAL and not run.inits):
        wanted["Initialized"] = ("True", "", "")
    else:
        pending = [c.name for c in run.inits if not (c.state == "terminated" and c.exit_code == 0)]
        if pending:
            wanted["Initialized"] = (
                "False",
                "ContainersNotInitialized",
                f"containers with incomplete status: [{' '.join(pending)}]",
            )
        else:
            wanted["Initialized"] = ("True", "", "")
    if phase in TERMINAL:
        ready = ("False", "PodCompleted", "")
    else:
        unready = [c.name for c in run.mains if not c.ready]
        unready += [c.name for c in run.inits if c.sidecar and not c.ready]
        if unready:
            ready = (
                "False",
                "ContainersNotReady",
                f"containers with unready status: [{' '.join(unready)}]",
            )
        else:
            ready = ("True", "", "")
    wanted["Ready"] = ready
    wanted["ContainersReady"] = ready
    if run.restart_all_rule:
        wanted["AllContainersRestarting"] = (
            ("True", "", run.restart_message) if run.restarting else ("False", "", "")
        )
    status["conditions"] = merge_conditions(old.get("conditions") or [], wanted, now)
    return status


def merge_conditions(
    existing: Sequence[Mapping[str, Any]], wanted: dict[str, tuple[str, str, str]], now: str
) -> list[dict[str, Any]]:
    """Set the kubelet-owned conditions, keeping lastTransitionTime when a condition's status
    does not change and leaving conditions owned by others (DisruptionTarget, ...) alone."""
    by_type = {c.get("type"): c for c in existing}
    out: list[dict[str, Any]] = []
    for ctype in _CANONICAL_CONDITIONS:
        if ctype not in wanted:
            if ctype in by_type:
                out.append(dict(by_type[ctype]))
            continue
        status, reason, message = wanted[ctype]
        old = by_type.get(ctype)
        cond: dict[str, Any] = {
            "type": ctype,
            "status": status,
            "lastProbeTime": None,
            "lastTransitionTime": (
                old.get("lastTransitionTime")
                if old is not None and old.get("status") == status
                else now
            ),
        }
        if reason:
            cond["reason"] = reason
        if message:
            cond["message"] = message
        out.append(cond)
    out.extend(dict(c) for c in existing if c.get("type") not in _CANONICAL_CONDITIONS)
    return out
