"""The simulated kubelets of every node, plus the node-lifecycle duties around them.

No container runs: what a container "does" comes from `programs.program_for` (its command,
e.g. `sleep 100s` or `exit 1`), and its durations are multiplied by `--time-scale`. What a
client sees is what a real kubelet reports, because the JobSet controller, the Job
controller and users (`kubectl get pods`, `kubectl logs`) read exactly that:

- A bound pod goes Pending → Running after a short start-up, with podIP / hostIP,
  startTime, `containerStatuses` (containerID, started, ready, restartCount, state) and the
  conditions PodReadyToStartContainers / Initialized / Ready / ContainersReady / PodScheduled.
  Init containers run one after the other first.
- When a container's program ends: `Completed` (exit 0) or `Error`; the pod ends Succeeded
  or Failed. With `restartPolicy: OnFailure` (or Always) the container restarts in place:
  restartCount + 1, lastState.terminated, `CrashLoopBackOff` for 10 s doubling to 5 min.
  A container's own `restartPolicy` and `restartPolicyRules` decide first
  (`restartrules.py`): a rule with `action: RestartAllContainers` stops every container at
  once and starts the pod again in place (init containers first; same UID, IP and
  volumes; restartCount + 1 each; condition AllContainersRestarting while stopping).
  `spec.activeDeadlineSeconds` fails the pod with reason `DeadlineExceeded`. A main
  container of a `restartPolicy: Always` pod whose command gives no duration (a server, as
  Deployments run) runs until the pod is deleted.
- Sidecars (init containers with `restartPolicy: Always`) keep running beside the main
  containers and restart whenever they end; the next container starts only once a
  sidecar has started, i.e. passed its startupProbe (for a simulated container the probe
  passes after its initialDelaySeconds; a real process's probe really runs).
- Graceful deletion: a pod being deleted is stopped (exit 137) and reported terminal after
  min(grace period * time-scale, 0.2 s); the API server then removes it once its finalizers
  are gone.
- Node failure: a node whose Ready condition turns False / Unknown (or that gets a NoExecute
  taint) freezes its pods; after each pod's `tolerationSeconds` (300 s by default, scaled)
  they fail with `DisruptionTarget` (reason `DeletionByTaintManager`), as the taint manager
  would evict them. Pods bound to a node that no longer exists fail with `DisruptionTarget`
  (`DeletionByPodGC`) and are deleted, and unscheduled pods being deleted are marked Failed,
  as the pod garbage collector does.

Events as `kubelet` (source host: the node; `base/events.py` correlates them), on a
container's `spec.containers{NAME}`: Pulling / Pulled ("Container image "IMG" already present
on machine" unless `imagePullPolicy: Always`), Created "Created container: NAME", Started
"Started container NAME" each time a container starts, Failed "Error: ..." when a real one
cannot be created, BackOff "Back-off restarting failed container NAME in pod POD_NS(UID)" on
a crash, Killing "Stopping container NAME" on deletion; DeadlineExceeded on the pod. For a
reference of a loaded image's repository that is not loaded, the image pull's failures and
back-off as on kind (`imagepull.py`).

The kubelet talks to container runtimes through `cri.py` only: simulated programs
(`simruntime.py`) for most containers, and runc (`processes.py`) for images mapped with
`--run-image`: this machine still drives them, the runtime starts them, reports their exits
and probe verdicts, and stops them on deletion.

Simplified: evicted pods are marked Failed rather than left Terminating (a real cluster
cannot confirm their end while the node is down); for simulated containers readiness and
liveness probes and images are not modelled, their only volumes are emptyDir files
(`simfiles.py`: what a program writes there survives its restarts and goes with the pod),
and `kubectl logs` shows a container's whole output as soon as it has started.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import math
import random
import socket
import time
from collections.abc import Mapping
from typing import Any, Final

import structlog

from kubesim.apiserver.core.apicore import ApiCore
from kubesim.apiserver.core.request import Request, component_request
from kubesim.apiserver.core.store import DELETED, ResourceKey, WatchEvent
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.base.events import NO_EVENTS, WARNING, EventSink
from kubesim.base.workqueue import WorkQueue
from kubesim.clock import now_rfc3339, parse_rfc3339
from kubesim.kubelet import simfiles
from kubesim.kubelet.cri import NOT_YET, ContainerRuntime, CreateError, Runtimes
from kubesim.kubelet.imagepull import ImagePuller
from kubesim.kubelet.podstate import TERMINAL, Container, PodRun, pod_status
from kubesim.kubelet.restartrules import RESTART, RESTART_ALL, exit_action, has_restart_all_rule
from kubesim.kubelet.simruntime import SimulatedRuntime
from kubesim.kubelet.taints import no_execute_taints, node_ready, tolerations_for
from kubesim.machinery.errors import ApiError
from kubesim.programs.programs import program_for
from kubeutil.aio import cancel_and_wait

__all__ = ["Kubelet"]

log = structlog.get_logger("sim.kubelet")

STARTUP_DELAY: Final = 1.0  # seconds from binding to Running, before --time-scale
MAX_TERMINATION_DELAY: Final = 0.2  # wall seconds a deleted pod takes to stop, at most
CRASH_BACKOFF: Final = 10.0  # kubelet's container restart back-off, doubling ...
MAX_CRASH_BACKOFF: Final = 300.0  # ... up to five minutes
DEFAULT_DURATION: Final = 5.0  # seconds an opaque command of a Job's pod runs
KILLED_EXIT_CODE: Final = 137  # SIGKILL, what a stopped `sleep` reports
WORKERS: Final = 4
CONFIG_RETRY: Final = 1.0  # wall seconds before a real container that could not start retries
POD_GC_QUARANTINE: Final = 40.0  # pod GC waits this long for a vanished node to come back

_PODS: Final[ResourceKey] = ("", "pods")
_NODES: Final[ResourceKey] = ("", "nodes")
_POD_NET: Final = int(ipaddress.IPv4Address("10.64.0.0"))
_NODE_NET: Final = int(ipaddress.IPv4Address("172.18.0.0"))

PodKey = tuple[str, str]


def _not_yet(exc: Exception) -> tuple[str, str]:
    """The waiting reason of a real container that cannot start yet."""
    from kubesim.kubelet.envvars import ConfigError

    if isinstance(exc, ConfigError):
        return "CreateContainerConfigError", str(exc)
    if isinstance(exc, CreateError):
        return exc.reason, str(exc)
    return "ContainerCreating", str(exc)


def _named(pod: Mapping[str, Any], name: str) -> list[Mapping[str, Any]]:
    spec = pod.get("spec") or {}
    every = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    return [c for c in every if c.get("name") == name]


def _default_duration(pod: Mapping[str, Any], c: Container) -> float:
    """How long a container whose command says nothing runs: a while (DEFAULT_DURATION) for
    the run-to-completion pods of Jobs, for ever for a main container of a pod that restarts
    Always (a Deployment's server)."""
    always = ((pod.get("spec") or {}).get("restartPolicy") or "Always") == "Always"
    return math.inf if always and not c.init else DEFAULT_DURATION


def _source(pod: Mapping[str, Any], c: Container) -> Mapping[str, Any]:
    """The spec of container `c` in `pod`."""
    spec = pod.get("spec") or {}
    return next(
        (
            x
            for x in (spec.get("initContainers") if c.init else spec.get("containers")) or []
            if x.get("name") == c.name
        ),
        {},
    )


def _dotted(address: int) -> str:
    """An IPv4 address as text (what `str(IPv4Address(n))` gives, without the object)."""
    return socket.inet_ntoa(address.to_bytes(4, "big"))


def _backoff(restarts: int) -> float:
    return float(min(CRASH_BACKOFF * 2.0 ** min(max(restarts - 1, 0), 32), MAX_CRASH_BACKOFF))


class Kubelet:
    """All simulated kubelets in one component: pods are keyed by namespace/name and
    advanced by timers, a few workers and no task per pod."""

    def __init__(
        self,
        core: ApiCore,
        time_scale: float = 1.0,
        rng: random.Random | None = None,
        runtime: ContainerRuntime | None = None,
        events: EventSink | None = None,
        puller: ImagePuller | None = None,
    ) -> None:
        self.core = core
        self.rng = rng or random.Random(0)
        # Every container goes to the runtime that claims its image: runc for the images of
        # `--run-image`, the simulated programs for the rest (`cri.py`).
        self.runtimes = Runtimes(SimulatedRuntime(self.rng), runtime)
        self.recorder = NO_EVENTS if events is None else events.recorder("kubelet")
        self.time_scale = max(float(time_scale), 0.0)
        # imagePullPolicy for the repositories of loaded images (imagepull.py); None: no store
        self.puller = puller
        pods_rt = core.registry.get("", "v1", "pods")
        assert pods_rt is not None
        self._pods_rt: ResourceType = pods_rt
        self._queue: WorkQueue[PodKey] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._runs: dict[PodKey, PodRun] = {}
        self._by_node: dict[str, set[PodKey]] = {}
        self._taint_since: dict[tuple[str, str], float] = {}  # (node, taint key) -> loop time
        self._node_ids: dict[str, int] = {}
        self._ip_counter: dict[str, int] = {}
        self._missing_since: dict[PodKey, float] = {}
        # node name -> (the stored Node, its NoExecute taints): stored objects are replaced,
        # never edited, so the taints hold for as long as the Node is the same object.
        self._node_taints: dict[str, tuple[Mapping[str, Any], list[tuple[str, str]]]] = {}
        self._stopping: set[str] = set()  # uids of pods whose Killing events are recorded
        self.status_writes = 0

    # ------------------------------------------------------------------ lifecycle

    def _req(self) -> Request:
        return component_request("kubelet")

    def start(self) -> None:
        self._queue = WorkQueue()
        self.core.store.listeners.append(self._on_event)
        loop_now = asyncio.get_running_loop().time()
        for node in self.core.store.resource(_NODES).objects.values():
            name = node["metadata"]["name"]
            for key, _value in no_execute_taints(node):
                self._taint_since.setdefault((name, key), loop_now)
        for pod in list(self.core.store.resource(_PODS).objects.values()):
            self._track(pod)
        self._tasks = [
            asyncio.create_task(self._worker(), name=f"sim-kubelet-{i}") for i in range(WORKERS)
        ]
        for runtime in self.runtimes.all():
            runtime.bind(self._queue.add)

    async def stop(self) -> None:
        with contextlib.suppress(ValueError):
            self.core.store.listeners.remove(self._on_event)
        await cancel_and_wait(*self._tasks)
        self._tasks = []
        if self._queue is not None:
            self._queue.close()

    # ------------------------------------------------------------------ logs

    def logs(self, pod: dict[str, Any], container: str, previous: bool = False) -> str | None:
        """What `kubectl logs` shows: the container's output once it has started; with
        `previous`, the output of its run before a restart (None: there was none). A real
        container's log is never a simulated program's output."""
        named = _named(pod, container)
        runtime = self.runtimes.for_container(named[0] if named else {})
        return runtime.logs(pod, container, previous)

    # ------------------------------------------------------------------ events

    def _on_event(self, rkey: ResourceKey, ev: WatchEvent) -> None:
        """Store listener: index and enqueue only; workers do the rest."""
        try:
            if rkey == _PODS:
                if ev.type == DELETED:
                    self._forget(ev.obj)
                else:
                    self._track(ev.obj)
            elif rkey == _NODES:
                self._on_node(ev)
        except Exception:  # never break the write that triggered the event
            log.exception("kubelet event handling failed")

    def _track(self, pod: Mapping[str, Any]) -> None:
        queue = self._queue
        if queue is None:
            return
        meta = pod["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            self._by_node.setdefault(node, set()).add(key)
        terminal = (pod.get("status") or {}).get("phase") in TERMINAL
        if terminal and key not in self._runs:
            return
        if node or meta.get("deletionTimestamp"):
            queue.add(key)

    def _forget(self, pod: Mapping[str, Any]) -> None:
        meta = pod["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        run = self._runs.get(key)
        if run is not None and run.uid == meta.get("uid"):
            del self._runs[key]
        for runtime in self.runtimes.all():
            runtime.forget(str(meta.get("uid") or ""))
        self._stopping.discard(str(meta.get("uid") or ""))
        if self.puller is not None:
            self.puller.forget(str(meta.get("uid") or ""))
        self._missing_since.pop(key, None)
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            keys = self._by_node.get(node)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._by_node[node]
        if self._queue is not None:
            self._queue.timers.cancel(key)

    def _on_node(self, ev: WatchEvent) -> None:
        name = ev.obj["metadata"]["name"]
        loop_now = asyncio.get_running_loop().time()
        before = no_execute_taints(ev.old) if ev.old is not None else []
        now = [] if ev.type == DELETED else no_execute_taints(ev.obj)
        keys_now = {k for k, _ in now}
        for k in keys_now:
            self._taint_since.setdefault((name, k), loop_now)
        for k, _ in before:
            if k not in keys_now:
                self._taint_since.pop((name, k), None)
        changed = (
            ev.type != "MODIFIED"
            or before != now
            or (ev.old is not None and node_ready(ev.old) != node_ready(ev.obj))
        )
        if ev.type == DELETED:
            self._node_ids.pop(name, None)
            self._node_taints.pop(name, None)
        if changed and self._queue is not None:
            for key in list(self._by_node.get(name, ())):
                self._queue.add(key)

    # ------------------------------------------------------------------ workers

    async def _worker(self) -> None:
        queue = self._queue
        assert queue is not None
        while True:
            key = await queue.get()
            try:
                await self._reconcile(key)
                queue.forget(key)
            except ApiError as err:
                if err.code == 409:
                    queue.add(key)
                else:
                    log.warning("kubelet sync failed", pod=f"{key[0]}/{key[1]}", error=str(err))
                    queue.add_rate_limited(key)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("kubelet sync crashed", pod=f"{key[0]}/{key[1]}")
                queue.add_rate_limited(key)
            finally:
                queue.done(key)

    def _wake(self, key: PodKey, at: float, now: float) -> None:
        if self._queue is not None and not math.isinf(at):
            self._queue.timers.schedule(key, at - now, earliest=False)

    # ------------------------------------------------------------------ reconcile

    async def _reconcile(self, key: PodKey) -> None:
        pod = self.core.store.get(_PODS, key)
        if pod is None:
            self._runs.pop(key, None)
            return
        meta = pod["metadata"]
        spec = pod.get("spec") or {}
        uid = str(meta.get("uid") or "")
        run = self._runs.get(key)
        if run is not None and run.uid != uid:
            del self._runs[key]
            run = None
        if (pod.get("status") or {}).get("phase") in TERMINAL:
            self._runs.pop(key, None)
            return
        loop_now = asyncio.get_running_loop().time()
        node_name = spec.get("nodeName")
        if not node_name:
            if meta.get("deletionTimestamp"):
                # Pod GC: an unscheduled pod being deleted will never run.
                await self._fail(key, uid, "", "", None)
            return
        node = self.core.store.get(_NODES, ("", node_name))
        if node is None:
            # Pod GC: the pod's node is gone (after the GC's quarantine, in case it returns).
            since = self._missing_since.setdefault(key, loop_now)
            gc_at = since + POD_GC_QUARANTINE * self.time_scale
            if loop_now < gc_at:
                self._wake(key, gc_at, loop_now)
                return
            condition = ("DeletionByPodGC", "PodGC: node no longer exists")
            if await self._fail(key, uid, "", "", condition):
                with contextlib.suppress(ApiError):
                    await self.core.delete(
                        self._pods_rt, key[0], key[1], {"gracePeriodSeconds": 0}, self._req()
                    )
            return
        self._missing_since.pop(key, None)
        if run is None:
            run = self._new_run(pod, node, loop_now)
            self._runs[key] = run
        if meta.get("deletionTimestamp"):
            await self._terminate_gracefully(key, pod, run, loop_now)
            return
        wake_at = math.inf
        taints = self._taints_of(node_name, node)
        if taints:
            wait = self._eviction_wait(node_name, spec, taints, loop_now)
            if wait is not None and wait <= 0:
                condition = (
                    "DeletionByTaintManager",
                    "Taint manager: deleting due to NoExecute taint",
                )
                await self._fail(key, uid, "", "", condition)
                return
            if wait is not None:
                wake_at = loop_now + wait
        if node_ready(node):
            if run.started or loop_now >= run.start_at:
                for runtime in self.runtimes.for_pod(pod):
                    await runtime.prepare(key, run, pod)  # RunPodSandbox
            if self._advance(run, pod, loop_now) or run.dirty:
                run.dirty = False
                await self._write(key, run)
                if run.done:
                    self._runs.pop(key, None)
                    return
            wake_at = min(wake_at, self._next_wake(run))
        # else the kubelet is down: nothing it runs makes progress or is reported
        if math.isinf(wake_at):
            if self._queue is not None:
                self._queue.timers.cancel(key)
        else:
            self._wake(key, wake_at, loop_now)

    def _taints_of(self, name: str, node: Mapping[str, Any]) -> list[tuple[str, str]]:
        cached = self._node_taints.get(name)
        if cached is not None and cached[0] is node:
            return cached[1]
        taints = no_execute_taints(node)
        self._node_taints[name] = (node, taints)
        return taints

    def _new_run(self, pod: Mapping[str, Any], node: Mapping[str, Any], now: float) -> PodRun:
        spec = pod.get("spec") or {}
        containers = [
            Container(
                name=str(c.get("name") or ""),
                image=str(c.get("image") or ""),
                init=True,
                sidecar=c.get("restartPolicy") == "Always",
                waiting_reason="PodInitializing",
            )
            for c in spec.get("initContainers") or []
        ]
        containers += [
            Container(
                name=str(c.get("name") or ""),
                image=str(c.get("image") or ""),
                init=False,
                sidecar=False,
                waiting_reason="PodInitializing"
                if spec.get("initContainers")
                else "ContainerCreating",
            )
            for c in spec.get("containers") or []
        ]
        delay = STARTUP_DELAY * self.time_scale * self.rng.uniform(0.75, 1.25)
        run = PodRun(
            uid=str(pod["metadata"].get("uid") or ""),
            node=str(node["metadata"]["name"]),
            start_at=now + delay,
            containers=containers,
            restart_policy=str(spec.get("restartPolicy") or "Always"),
            restart_all_rule=has_restart_all_rule(spec),
        )
        status = pod.get("status") or {}
        if status.get("phase") == "Running":
            self._adopt(run, pod, now)
        return run

    def _adopt(self, run: PodRun, pod: Mapping[str, Any], now: float) -> None:
        """Take over a pod that was already running (the simulator restarted from its data
        directory): containers go on from what the status says."""
        status = pod.get("status") or {}
        run.started = True
        run.start_time = str(status.get("startTime") or now_rfc3339())
        run.pod_ip = str(status.get("podIP") or "")
        run.host_ip = str(status.get("hostIP") or "")
        run.initialized = True
        spec = pod.get("spec") or {}
        by_name = {c.get("name"): c for c in spec.get("containers") or []}
        by_name.update({c.get("name"): c for c in spec.get("initContainers") or []})
        statuses = {
            cs.get("name"): cs
            for cs in [
                *(status.get("initContainerStatuses") or []),
                *(status.get("containerStatuses") or []),
            ]
        }
        wall = time.time()
        for c in run.containers:
            cs = statuses.get(c.name) or {}
            c.restarts = int(cs.get("restartCount") or 0)
            c.container_id = str(cs.get("containerID") or "")
            state = cs.get("state") or {}
            runtime = self.runtimes.for_container(by_name.get(c.name) or {})
            if "running" in state and runtime is not self.runtimes.simulated:
                state = {}  # its process ended with the previous simulator: start again
            if "running" in state:
                c.state = "running"
                c.started_at = str(state["running"].get("startedAt") or run.start_time)
                c.program = program_for(
                    by_name.get(c.name) or {}, _default_duration(pod, c), pod=pod
                )
                try:
                    began = parse_rfc3339(c.started_at)
                except ValueError:
                    began = wall
                duration = c.program.duration
                c.ends_at = (
                    now + max(began + duration * self.time_scale - wall, 0.0)
                    if math.isfinite(duration)
                    else math.inf
                )
            elif "terminated" in state:
                term = state["terminated"]
                c.state = "terminated"
                c.exit_code = int(term.get("exitCode") or 0)
                c.term_reason = str(term.get("reason") or "")
                c.started_at = str(term.get("startedAt") or "")
                c.finished_at = str(term.get("finishedAt") or "")
            else:
                c.state = "waiting"
                c.retry_at = now

    # ------------------------------------------------------------------ container machine

    def _image_waits(
        self,
        c: Container,
        source: Mapping[str, Any],
        pod: Mapping[str, Any],
        run: PodRun,
        now: float,
    ) -> bool:
        """True when `c`'s image (of a loaded repository) cannot be had: it waits in
        ErrImagePull, ImagePullBackOff or ErrImageNeverPull (imagepull.py)."""
        if self.puller is None or not self.puller.decides(dict(source)):
            return False
        outcome = self.puller.ensure(run.uid, dict(source), now)
        if outcome is None:
            return False
        c.state = "waiting"
        c.waiting_reason, c.waiting_message = outcome.reason, outcome.message
        c.retry_at = outcome.retry_at
        for type_, reason, message in outcome.events:
            self._container_event(pod, c, run, type_, reason, message)
        return True

    def _start(self, c: Container, pod: Mapping[str, Any], run: PodRun, now: float) -> None:
        source = _source(pod, c)
        if self._image_waits(c, source, pod, run, now):
            return
        self._flush_writes(run, now)
        c.mounts = simfiles.emptydir_mounts(pod, source)
        c.program = program_for(
            source,
            _default_duration(pod, c),
            pod=pod,
            files=simfiles.view(run.files, c.mounts),
            mounts=simfiles.writable_paths(c.mounts),
        )
        c.pending_writes = [
            (now + at * self.time_scale, path, content) for at, path, content in c.program.writes
        ]
        c.state = "running"
        c.waiting_reason = ""
        c.waiting_message = ""
        c.started_at = now_rfc3339()
        startup = source.get("startupProbe")
        c.probe_started = not startup
        if startup:
            # not modelled beyond its delay for a simulated container: it passes at its
            # first probe (a real process's probes really run, `processes.py`)
            delay = float(startup.get("initialDelaySeconds") or 0)
            c.startup_at = now + delay * self.time_scale
        duration = c.program.duration
        c.ends_at = now + duration * self.time_scale if math.isfinite(duration) else math.inf
        runtime = self.runtimes.for_container(source)
        if runtime is not self.runtimes.simulated:
            c.pending_writes = []  # a real process writes its real directories
        meta = pod.get("metadata") or {}
        try:
            runtime.start((meta.get("namespace", ""), meta["name"]), c, source, pod, run)
        except NOT_YET as exc:
            c.state = "waiting"
            c.waiting_reason, c.waiting_message = _not_yet(exc)
            c.retry_at = now + CONFIG_RETRY
            self._container_event(pod, c, run, WARNING, "Failed", f"Error: {c.waiting_message}")
            return
        self._started_events(pod, c, source, run)

    def _container_event(
        self, pod: Mapping[str, Any], c: Container, run: PodRun, type_: str, reason: str, msg: str
    ) -> None:
        path = f"spec.{'initContainers' if c.init else 'containers'}{{{c.name}}}"
        self.recorder.event(pod, type_, reason, msg, field_path=path, host=run.node)

    def _started_events(
        self, pod: Mapping[str, Any], c: Container, source: Mapping[str, Any], run: PodRun
    ) -> None:
        """What the kubelet says as a container starts: its image, then created, started."""
        image = c.image
        if source.get("imagePullPolicy") == "Always":
            self._container_event(pod, c, run, "Normal", "Pulling", f'Pulling image "{image}"')
            pulled = f'Successfully pulled image "{image}" in 0s (0s including waiting)'
        else:
            pulled = f'Container image "{image}" already present on machine'
        self._container_event(pod, c, run, "Normal", "Pulled", pulled)
        self._container_event(pod, c, run, "Normal", "Created", f"Created container: {c.name}")
        self._container_event(pod, c, run, "Normal", "Started", f"Started container {c.name}")

    def _exit(self, c: Container, code: int, reason: str, message: str = "") -> None:
        if c.exit_reason:  # a real container said why it ended (StartError)
            reason, message = c.exit_reason, c.exit_message
            c.exit_reason = c.exit_message = ""
        c.state = "terminated"
        c.exit_code = code
        c.term_reason = reason
        c.term_message = message
        c.finished_at = now_rfc3339()
        c.ends_at = math.inf
        if c.pending_writes:  # what it would have written after this moment never happens
            now = asyncio.get_running_loop().time()
            c.pending_writes = [w for w in c.pending_writes if w[0] <= now]

    def _flush_writes(self, run: PodRun, now: float) -> None:
        """Apply the simulated containers' emptyDir writes that have happened by `now`."""
        for c in run.containers:
            if not c.pending_writes:
                continue
            keep = []
            for write in c.pending_writes:
                if write[0] <= now:
                    simfiles.apply(run.files, c.mounts, write[1], write[2])
                else:
                    keep.append(write)
            c.pending_writes = keep

    def _crash(self, c: Container, pod: Mapping[str, Any], code: int, now: float) -> None:
        """Restart in place: the run that ended becomes lastState, then back-off."""
        self._exit(c, code, "Completed" if code == 0 else "Error")
        c.last_state = {"terminated": c.terminated()}
        c.restarts += 1
        c.state = "waiting"
        wait = _backoff(c.restarts)
        meta = pod.get("metadata") or {}
        c.waiting_reason = "CrashLoopBackOff"
        c.waiting_message = (
            f"back-off {int(wait)}s restarting failed container={c.name} "
            f"pod={meta.get('name')}_{meta.get('namespace')}({meta.get('uid')})"
        )
        c.retry_at = now + wait * self.time_scale
        run = self._runs.get((str(meta.get("namespace") or ""), str(meta.get("name") or "")))
        if run is not None:
            who = f"{meta.get('name')}_{meta.get('namespace')}({meta.get('uid')})"
            msg = f"Back-off restarting failed container {c.name} in pod {who}"
            self._container_event(pod, c, run, WARNING, "BackOff", msg)

    def _advance(self, run: PodRun, pod: Mapping[str, Any], now: float) -> bool:
        """Move the pod's containers forward to `now`; True when the status changed."""
        changed = False
        if not run.started:
            if now < run.start_at:
                return False
            run.started = True
            run.start_time = now_rfc3339()
            self._assign_ips(run)
            deadline = (pod.get("spec") or {}).get("activeDeadlineSeconds")
            if deadline is not None:
                run.deadline_at = now + float(deadline) * self.time_scale
            changed = True
        if run.deadline_at is not None and now >= run.deadline_at:
            for c in run.containers:
                if c.state != "terminated":
                    self._exit(c, KILLED_EXIT_CODE, "Error")
            run.done = True
            run.reason = "DeadlineExceeded"
            run.message = "Pod was active on the node longer than the specified deadline"
            self.recorder.event(pod, "Normal", run.reason, run.message, host=run.node)
            return True
        self._flush_writes(run, now)
        if run.restarting:
            if not self._restart_all_done(run, pod, now):
                return True
            changed = True
        for c in run.containers:  # a simulated startup probe passes after its initial delay
            if c.state == "running" and not c.real and not c.probe_started and now >= c.startup_at:
                c.probe_started = True
                changed = True
        for c in run.inits:  # a sidecar may end at any time
            if c.sidecar and c.state == "running" and now >= c.ends_at:
                changed = True
                if self._exited(c, pod, run, now):
                    return True
        if not run.initialized:
            for c in run.inits:
                if c.state == "waiting" and now >= c.retry_at:
                    self._start(c, pod, run, now)
                    changed = True
                if c.sidecar:
                    # the next container starts once the sidecar has started (startupProbe)
                    if c.state == "running" and c.probe_started:
                        continue
                    break
                if c.state == "running" and now >= c.ends_at:
                    changed = True
                    if self._exited(c, pod, run, now) or run.done:
                        return True
                if not (c.state == "terminated" and c.exit_code == 0):
                    break
            else:
                run.initialized = True
                run.ever_initialized = True
                changed = True
        if run.initialized:
            for c in run.mains:
                if c.state == "waiting" and now >= c.retry_at:
                    self._start(c, pod, run, now)
                    changed = True
                elif c.state == "running" and now >= c.ends_at:
                    changed = True
                    if self._exited(c, pod, run, now):
                        return True
            mains = run.mains
            if mains and all(c.state == "terminated" for c in mains):
                for c in run.inits:
                    if c.sidecar and c.state != "terminated":
                        self._exit(c, 0, "Completed")
                run.done = True
                changed = True
        return changed

    def _exited(self, c: Container, pod: Mapping[str, Any], run: PodRun, now: float) -> bool:
        """Container `c`'s program (or process) ended: restart it, restart the whole pod in
        place, or leave it terminated, as `restartrules.exit_action` decides. True when a
        restart of all containers began (the caller stops advancing the pod)."""
        assert c.program is not None
        code = c.program.exit_code
        policy = run.restart_policy
        action = exit_action(_source(pod, c), policy, code, init=c.init)
        if action == RESTART_ALL:
            self._begin_restart_all(c, code, run)
            return True
        if action == RESTART:
            self._crash(c, pod, code, now)
            return False
        self._exit(c, code, "Completed" if code == 0 else "Error")
        if c.init and code != 0:
            run.done = True  # an init container that failed for good fails the pod
        return False

    def _begin_restart_all(self, trigger: Container, code: int, run: PodRun) -> None:
        """RestartAllContainers, first phase: every running container is stopped at once
        (no grace period, as the kubelet does for this action); the pod, its UID, IP and
        volumes stay. `_restart_all_done` starts them again once all have stopped."""
        self._exit(trigger, code, "Completed" if code == 0 else "Error")
        for c in run.containers:
            if c.state != "running":
                continue
            if c.real and self.runtimes.real is not None:
                self.runtimes.real.stop_container(run, c.name)  # its exit is reported later
            else:
                self._exit(c, KILLED_EXIT_CODE, "Error")
        run.restarting = True
        run.restart_reported = False
        run.restart_message = (
            f"Container {trigger.name} exited with code {code}, restarting all containers"
        )
        log.info(
            "restarting all containers in place",
            pod=run.uid,
            container=trigger.name,
            exit_code=code,
        )

    def _restart_all_done(self, run: PodRun, pod: Mapping[str, Any], now: float) -> bool:
        """RestartAllContainers, second phase: once every container has stopped (and that
        was reported with AllContainersRestarting=True), each becomes waiting again with
        its last run as lastState and restartCount + 1; init containers run again first."""
        for c in run.containers:
            if c.state == "running" and c.real and now >= c.ends_at:
                assert c.program is not None
                code = c.program.exit_code
                self._exit(c, code, "Completed" if code == 0 else "Error")
        if any(c.state == "running" for c in run.containers):
            return False  # a real process is still stopping: woken when it exits
        if not run.restart_reported:
            run.restart_reported = True
            run.wake_at = now
            return False
        has_inits = bool(run.inits)
        for c in run.containers:
            if c.state == "terminated":
                c.last_state = {"terminated": c.terminated()}
                c.restarts += 1
            c.state = "waiting"
            c.waiting_reason = "PodInitializing" if c.init or has_inits else "ContainerCreating"
            c.waiting_message = ""
            c.retry_at = now
            c.ends_at = math.inf
            c.probe_started = True
            c.probe_ready = True
        run.initialized = False
        run.restarting = False
        run.restart_reported = False
        run.wake_at = math.inf
        return True

    def _next_wake(self, run: PodRun) -> float:
        times = [math.inf, run.wake_at]
        if not run.started:
            times.append(run.start_at)
        if run.deadline_at is not None:
            times.append(run.deadline_at)
        for c in run.containers:
            if c.state == "running":
                times.append(c.ends_at)
                if not c.real and not c.probe_started:
                    times.append(c.startup_at)
            elif c.state == "waiting" and c.retry_at > 0:
                times.append(c.retry_at)
        return min(times)

    def _assign_ips(self, run: PodRun) -> None:
        node = self.core.store.get(_NODES, ("", run.node)) or {}
        idx = self._node_ids.setdefault(run.node, len(self._node_ids))
        host = ""
        for addr in (node.get("status") or {}).get("addresses") or ():
            if addr.get("type") == "InternalIP":
                host = str(addr.get("address") or "")
                break
        run.host_ip = host or _dotted(_NODE_NET + 2 + idx % 65000)
        n = self._ip_counter.get(run.node, 0)
        self._ip_counter[run.node] = n + 1
        if not run.pod_ip:  # a real pod has its sandbox's IP
            run.pod_ip = _dotted(_POD_NET + ((idx % 16384) << 8) + 2 + n % 253)

    # ------------------------------------------------------------------ endings

    async def _terminate_gracefully(
        self, key: PodKey, pod: Mapping[str, Any], run: PodRun, now: float
    ) -> None:
        if run.uid not in self._stopping:  # the first pass over a pod being deleted
            self._stopping.add(run.uid)
            for c in run.containers:
                if c.state == "running":
                    msg = f"Stopping container {c.name}"
                    self._container_event(pod, c, run, "Normal", "Killing", msg)
        if self.runtimes.real is not None and any(c.real for c in run.containers):
            grace = (pod.get("metadata") or {}).get("deletionGracePeriodSeconds") or 0
            if not self.runtimes.real.terminate(run, float(grace)):
                return  # SIGTERM sent, SIGKILL after the grace period: woken when they exit
        if run.terminate_at is None:
            grace = (pod.get("metadata") or {}).get("deletionGracePeriodSeconds") or 0
            run.terminate_at = now + min(float(grace) * self.time_scale, MAX_TERMINATION_DELAY)
        if now < run.terminate_at:
            self._wake(key, run.terminate_at, now)
            return
        for c in run.containers:
            if c.state == "running" and c.real and c.program is not None:
                code = c.program.exit_code  # how the process really ended
                self._exit(c, code, "Completed" if code == 0 else "Error")
            elif c.state == "running":
                self._exit(c, KILLED_EXIT_CODE, "Error")
            elif c.state == "waiting":
                self._exit(
                    c,
                    KILLED_EXIT_CODE,
                    "ContainerStatusUnknown",
                    "The container could not be located when the pod was terminated",
                )
        run.done = True
        written = await self._write(key, run)
        self._runs.pop(key, None)
        if written is not None:
            current = self.core.store.get(_PODS, key)
            if (
                current is not None
                and current["metadata"].get("uid") == run.uid
                and current["metadata"].get("deletionTimestamp")
                and not current["metadata"].get("finalizers")
            ):
                self.core.force_remove(self._pods_rt, current)

    def _eviction_wait(
        self, node: str, spec: Mapping[str, Any], taints: list[tuple[str, str]], now: float
    ) -> float | None:
        """Seconds until the taint manager would evict the pod: 0 if some NoExecute taint
        is not tolerated, None if all are tolerated forever."""
        tolerations = spec.get("tolerations") or []
        wait = math.inf
        for key, value in taints:
            matching = tolerations_for(tolerations, key, value)
            if not matching:
                return 0.0
            seconds = math.inf
            for t in matching:
                if t.get("tolerationSeconds") is not None:
                    seconds = min(seconds, max(float(t["tolerationSeconds"]), 0.0))
            if math.isinf(seconds):
                continue
            since = self._taint_since.setdefault((node, key), now)
            wait = min(wait, since + seconds * self.time_scale - now)
        return None if math.isinf(wait) else wait

    async def _fail(
        self,
        key: PodKey,
        uid: str,
        reason: str,
        message: str,
        disruption: tuple[str, str] | None,
    ) -> bool:
        """Mark a pod Failed from outside its (dead or absent) kubelet, optionally with a
        DisruptionTarget condition, as the taint manager and pod GC do. True if written."""
        self._runs.pop(key, None)
        now = now_rfc3339()
        for _attempt in range(5):
            pod = self.core.store.get(_PODS, key)
            if pod is None or pod["metadata"].get("uid") != uid:
                return False
            status = dict(pod.get("status") or {})
            if status.get("phase") in TERMINAL:
                return False
            conds = [dict(c) for c in status.get("conditions") or []]
            if disruption is not None:
                conds = [c for c in conds if c.get("type") != "DisruptionTarget"]
                conds.insert(
                    0,
                    {
                        "type": "DisruptionTarget",
                        "status": "True",
                        "reason": disruption[0],
                        "message": disruption[1],
                        "lastProbeTime": None,
                        "lastTransitionTime": now,
                    },
                )
            for c in conds:
                if c.get("type") in ("Ready", "ContainersReady") and c.get("status") == "True":
                    c.update(status="False", reason="PodFailed", lastTransitionTime=now)
            for field_name in ("containerStatuses", "initContainerStatuses"):
                statuses = []
                for cs in status.get(field_name) or []:
                    if "terminated" in (cs.get("state") or {}):
                        statuses.append(cs)
                        continue
                    started = ((cs.get("state") or {}).get("running") or {}).get("startedAt")
                    term: dict[str, Any] = {
                        "exitCode": KILLED_EXIT_CODE,
                        "reason": "ContainerStatusUnknown",
                        "message": "The container could not be located when the pod was terminated",
                        "startedAt": started,
                        "finishedAt": now,
                    }
                    if cs.get("containerID"):
                        term["containerID"] = cs["containerID"]
                    statuses.append(
                        {**cs, "ready": False, "started": False, "state": {"terminated": term}}
                    )
                if statuses:
                    status[field_name] = statuses
            status["phase"] = "Failed"
            status["conditions"] = conds
            if reason:
                status["reason"] = reason
                status["message"] = message
            try:
                self.status_writes += 1
                await self.core.update(
                    self._pods_rt, key[0], key[1], {**pod, "status": status}, self._req(), "status"
                )
                return True
            except ApiError as err:
                if err.code == 409:
                    continue
                if err.code == 404:
                    return False
                raise
        return False

    # ------------------------------------------------------------------ status

    async def _write(self, key: PodKey, run: PodRun) -> dict[str, Any] | None:
        """Write the status derived from `run`, re-reading the pod on conflicts."""
        for _attempt in range(5):
            pod = self.core.store.get(_PODS, key)
            if pod is None or pod["metadata"].get("uid") != run.uid:
                return None
            status = pod_status(run, pod)
            if status == pod.get("status"):
                return pod
            try:
                self.status_writes += 1
                return await self.core.update(
                    self._pods_rt, key[0], key[1], {**pod, "status": status}, self._req(), "status"
                )
            except ApiError as err:
                if err.code == 409:
                    continue
                if err.code == 404:
                    return None
                raise
        raise ApiError(409, "Conflict", f"pod {key[0]}/{key[1]} keeps changing")
