"""The simulated kube-scheduler: the loop around `scheduling.schedule()`.

It keeps a `ClusterSnapshot` current from Node and Pod store events, takes pending pods in
arrival order, decides a batch of them against the snapshot (assuming each binding at once,
as kube-scheduler's cache does, so the next pod of a group sees it), then writes the
bindings: `spec.nodeName` and the `PodScheduled=True` condition, as the binding subresource
would. A pod that fits nowhere gets `PodScheduled=False`, reason `Unschedulable`, with
kube-scheduler's "0/N nodes are available: ..." message, written only when it changes.

Unschedulable pods wait until the cluster changes (a node appears or changes, a bound pod
finishes, goes away or is bound) and are then all retried, at most every
`RETRY_INTERVAL` seconds, so a cluster full of waiting pods does not spin. Within one pass,
pods with an identical scheduling signature (namespace, labels but the completion index,
and the spec fields the filters read) share the verdict of the first that failed until
something gets bound — thousands of pods of one Job cost one search, not thousands.

Events as `default-scheduler` (kube-scheduler records through events.k8s.io; here the same
fields in core/v1, see `base/events.py`): `Scheduled` "Successfully assigned NS/POD to
NODE" (action Binding) and `FailedScheduling` with the message of the condition (action
Scheduling), recorded when that message changes - kube-scheduler's event series count
repeats in memory and writes them rarely, so one Event per distinct verdict is what a user sees.

Each attempt is also costed as kube-scheduler would have paid for it (`cost.py`: affinity
term tests and filter calls, from the snapshot's totals, O(1) per pod), a pod that reuses a
verdict included, since kube-scheduler runs a cycle per pod. The totals are served at
`/debug/scheduler` (`debug_report`) so benchmarks can compare placement strategies on the
work a real scheduler does, not only on this one's time.

Pods with `schedulingGates` are left alone until the gates are removed; pods for another
`schedulerName`, bound, finished or being deleted are not this scheduler's business.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Mapping
from typing import Any, Final

import orjson
import structlog

from kubesim.apiserver.core.apicore import ApiCore
from kubesim.apiserver.core.objects import with_pod_scheduled
from kubesim.apiserver.core.request import Request, component_request
from kubesim.apiserver.core.store import ADDED, DELETED, ResourceKey, WatchEvent
from kubesim.apiserver.registry.features import FeatureGates
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.base.events import NO_EVENTS, WARNING, EventSink
from kubesim.controllers.scheduler import gang
from kubesim.controllers.scheduler.cost import ZERO, SchedulingCost, kube_scheduler_evaluations
from kubesim.controllers.scheduler.scheduling import FilterScan, needs_scheduling, schedule
from kubesim.controllers.scheduler.snapshot import ClusterSnapshot
from kubesim.controllers.scheduler.volumebinding import PodVolumes, pod_volumes
from kubesim.machinery.errors import ApiError
from kubeutil.aio import cancel_and_wait

__all__ = ["Scheduler"]

log = structlog.get_logger("sim.scheduler")

BATCH_SIZE: Final = 256  # pods decided before their bindings are written
RETRY_INTERVAL: Final = 0.25  # seconds between retries of unschedulable pods, at least
_PODS: Final[ResourceKey] = ("", "pods")
_NODES: Final[ResourceKey] = ("", "nodes")
# Changes that may let a pod with claims go on (VolumeBinding's cluster events).
_STORAGE: Final = frozenset(
    {
        ("", "persistentvolumeclaims"),
        ("", "persistentvolumes"),
        ("storage.k8s.io", "storageclasses"),
    }
)
_TERMINAL: Final = frozenset({"Succeeded", "Failed"})
# Labels that differ between otherwise identical pods and that affinity terms do not use.
_PER_POD_LABELS: Final = frozenset(
    {"batch.kubernetes.io/job-completion-index", "apps.kubernetes.io/pod-index"}
)
_SIGNATURE_FIELDS: Final = (
    "nodeSelector",
    "affinity",
    "tolerations",
    "overhead",
    "priority",
    "preemptionPolicy",
    "schedulerName",
)

PodKey = tuple[str, str]


def _bound_and_running(pod: Mapping[str, Any] | None) -> bool:
    if pod is None:
        return False
    return (
        bool((pod.get("spec") or {}).get("nodeName"))
        and (pod.get("status") or {}).get("phase") not in _TERMINAL
    )


def _gated(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("spec") or {}).get("schedulingGates"))


def _signature(pod: Mapping[str, Any]) -> bytes:
    """What the filters of `schedule()` read of a pod, serialised: equal signatures get
    equal answers against the same snapshot."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k not in _PER_POD_LABELS}
    resources = [
        (c.get("resources"), c.get("restartPolicy"))
        for key in ("initContainers", "containers")
        for c in spec.get(key) or ()
    ]
    sig = {
        "ns": meta.get("namespace"),
        "labels": labels,
        "resources": resources,
        **{f: spec.get(f) for f in _SIGNATURE_FIELDS},
    }
    return orjson.dumps(sig, option=orjson.OPT_SORT_KEYS)


class Scheduler:
    """Binds pending pods to nodes; one task, decisions in batches."""

    def __init__(
        self,
        core: ApiCore,
        rng: random.Random | None = None,
        events: EventSink | None = None,
        gates: FeatureGates | None = None,
    ) -> None:
        self.core = core
        self.rng = rng or random.Random(0)
        self.recorder = NO_EVENTS if events is None else events.recorder("default-scheduler")
        pods_rt = core.registry.get("", "v1", "pods")
        assert pods_rt is not None
        self._pods_rt: ResourceType = pods_rt
        self.snapshot = ClusterSnapshot()
        self._events: list[tuple[ResourceKey, WatchEvent]] = []
        self._active: dict[PodKey, None] = {}  # pods to try, in arrival order
        self._unschedulable: dict[PodKey, None] = {}  # tried, fit nowhere; wait for a change
        self._cluster_changed = False
        self._last_retry = 0.0
        self._retry_handle: asyncio.TimerHandle | None = None
        self._wakeup: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self.bound = 0  # counters for tests and benchmarks
        self.attempts = 0  # searches this scheduler made
        self.cycles = 0  # scheduling cycles kube-scheduler would have run (one per pod tried)
        self.cost: SchedulingCost = ZERO  # what those cycles would have cost it
        # Pods of scheduling.k8s.io PodGroups, decided group by group (gang.py).
        self.gangs = gang.GangPlanner(core.store, gates or FeatureGates({}))

    def debug_report(self) -> dict[str, Any]:
        """The counters served at /debug/scheduler."""
        return {
            "bound": self.bound,
            "attempts": self.attempts,
            "cycles": self.cycles,
            "kubeSchedulerEvaluations": self.cost.as_dict(),
            **({"gang": self.gangs.report()} if self.gangs.enabled else {}),
        }

    def _req(self) -> Request:
        return component_request("default-scheduler")

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        self._wakeup = asyncio.Event()
        self.core.store.listeners.append(self._on_event)
        # What an informer's initial list would deliver: everything already stored.
        for node in list(self.core.store.resource(_NODES).objects.values()):
            self._events.append((_NODES, WatchEvent(ADDED, node, 0)))
        for pod in list(self.core.store.resource(_PODS).objects.values()):
            self._events.append((_PODS, WatchEvent(ADDED, pod, 0)))
        self._wakeup.set()
        self._task = asyncio.create_task(self._run(), name="sim-scheduler")

    async def stop(self) -> None:
        with contextlib.suppress(ValueError):
            self.core.store.listeners.remove(self._on_event)
        if self._retry_handle is not None:
            self._retry_handle.cancel()
            self._retry_handle = None
        await cancel_and_wait(self._task)
        self._task = None

    # ------------------------------------------------------------------ events

    def _on_event(self, rkey: ResourceKey, ev: WatchEvent) -> None:
        """Store listener: queue the event; the loop applies it to the snapshot."""
        if rkey == _PODS or rkey == _NODES or (rkey == gang.PODGROUPS_KEY and self.gangs.enabled):
            self._events.append((rkey, ev))
            if self._wakeup is not None:
                self._wakeup.set()
        elif rkey in _STORAGE and self._unschedulable:
            self._cluster_changed = True
            if self._wakeup is not None:
                self._wakeup.set()

    def _apply_events(self) -> None:
        events, self._events = self._events, []
        snap = self.snapshot
        for rkey, ev in events:
            try:
                if rkey == gang.PODGROUPS_KEY:
                    self._cluster_changed = True  # a group appeared or changed: retry
                elif rkey == _NODES:
                    if ev.type == DELETED:
                        snap.remove_node(ev.obj["metadata"]["name"])
                    else:
                        snap.add_node(ev.obj)
                    self._cluster_changed = True
                else:
                    self._apply_pod(ev)
            except Exception:  # one odd object must not stop scheduling
                log.exception("scheduler could not apply an event")

    def _apply_pod(self, ev: WatchEvent) -> None:
        pod, old = ev.obj, ev.old
        meta = pod["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        snap = self.snapshot
        self.gangs.observe(pod, ev.type == DELETED)
        if ev.type == DELETED:
            snap.remove_pod(pod)
            self._active.pop(key, None)
            self._unschedulable.pop(key, None)
            if _bound_and_running(pod):
                self._cluster_changed = True
            return
        spec_same = old is not None and (
            old.get("spec") is pod.get("spec") or old.get("spec") == pod.get("spec")
        )
        labels_same = old is not None and (old["metadata"].get("labels") == meta.get("labels"))
        was_bound, is_bound = _bound_and_running(old), _bound_and_running(pod)
        if not (spec_same and labels_same and was_bound == is_bound):
            snap.add_pod(pod)
            if was_bound != is_bound:
                self._cluster_changed = True  # capacity freed, or an affinity peer placed
        if not needs_scheduling(pod) or _gated(pod):
            self._active.pop(key, None)
            self._unschedulable.pop(key, None)
            return
        if key in self._unschedulable:
            if not (spec_same and labels_same):
                del self._unschedulable[key]  # the pod itself changed: worth a new try
                self._active[key] = None
        elif key not in self._active:
            self._active[key] = None

    # ------------------------------------------------------------------ loop

    async def _run(self) -> None:
        wakeup = self._wakeup
        assert wakeup is not None
        while True:
            await wakeup.wait()
            wakeup.clear()
            self._apply_events()
            self._maybe_retry_unschedulable()
            if self._active:
                try:
                    await self._schedule_batch()
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("scheduling batch failed")
                    await asyncio.sleep(0.1)
                if self._active:
                    wakeup.set()
                    await asyncio.sleep(0)  # let the rest of the simulator breathe

    def _maybe_retry_unschedulable(self) -> None:
        if not self._cluster_changed or not self._unschedulable:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        wait = self._last_retry + RETRY_INTERVAL - now
        if wait > 0:
            if self._retry_handle is None and self._wakeup is not None:
                self._retry_handle = loop.call_later(wait, self._retry_due)
            return
        self._cluster_changed = False
        self._last_retry = now
        for key in self._unschedulable:
            self._active[key] = None
        self._unschedulable.clear()

    def _retry_due(self) -> None:
        self._retry_handle = None
        if self._wakeup is not None:
            self._wakeup.set()

    def _take_batch(self) -> list[PodKey]:
        """Up to BATCH_SIZE pods off the active queue, oldest first."""
        keys = []
        for key in self._active:
            keys.append(key)
            if len(keys) >= BATCH_SIZE:
                break
        for key in keys:
            del self._active[key]
        return keys

    async def _schedule_batch(self) -> None:
        keys = self._take_batch()
        store = self.core.store
        snap = self.snapshot
        verdicts: dict[bytes, tuple[str, SchedulingCost]] = {}
        bindings: list[tuple[dict[str, Any], str]] = []
        rejected: list[tuple[dict[str, Any], str]] = []
        keys, groups = self._decide_groups(keys, bindings, rejected)
        for key in keys:
            pod = store.get(_PODS, key)
            if pod is None or not needs_scheduling(pod) or _gated(pod):
                continue
            try:
                volumes = pod_volumes(pod, store)
            except Exception as exc:  # one odd claim must not stop scheduling
                log.exception("reading a pod's claims failed", pod=f"{key[0]}/{key[1]}")
                volumes = PodVolumes(rejected=f"error reading the pod's claims: {exc}")
            # A pod's claims are its own: its verdict is not shared with look-alikes. The
            # signature is only worked out when there is a verdict to share or to look up.
            shared = volumes is None
            sig = _signature(pod) if shared and verdicts else b""
            self.cycles += 1
            cached = verdicts.get(sig) if sig else None
            if cached is None:
                self.attempts += 1
                scan = FilterScan()
                node, message = schedule(pod, snap, self.rng, scan=scan, volumes=volumes)
                cost = kube_scheduler_evaluations(  # before the assumption
                    pod,
                    snap,
                    scan,
                    claims=0 if volumes is None else volumes.claims,
                    rejected=volumes is not None and bool(volumes.rejected),
                )
                self.cost += cost
                if node is not None and volumes is not None and volumes.pending:
                    # PreBind: place the claims for this node now (the next pod of the batch
                    # sharing a claim must see where it went); the pod is bound once they
                    # are bound, on a retry after their change.
                    await self._place_claims(volumes, node)
                    self._unschedulable[key] = None
                    continue
                if node is not None:
                    snap.assume(pod, node)
                    bindings.append((pod, node))
                    verdicts.clear()  # a new placement may satisfy someone's affinity
                    continue
                if shared:
                    verdicts[sig or _signature(pod)] = (message, cost)
            else:
                message, cost = cached
                self.cost += cost
            rejected.append((pod, message))
            self._unschedulable[key] = None
        if not bindings and not rejected and not groups:
            return
        results = await asyncio.gather(
            *(self._bind(pod, node) for pod, node in bindings),
            *(self._mark_unschedulable(pod, message) for pod, message in rejected),
            *(gang.write_verdict(self.core, self.recorder, v, self._req()) for v in groups),
            return_exceptions=True,
        )
        for (pod, _node), ok in zip(bindings, results[: len(bindings)], strict=True):
            if ok is True:
                self.bound += 1
                continue
            if isinstance(ok, BaseException) and not isinstance(ok, ApiError):
                log.error("binding crashed", error=repr(ok))
            # Undo the assumption; the pod's own events will queue it again if it still
            # needs a node.
            meta = pod["metadata"]
            key = (meta.get("namespace", ""), meta["name"])
            current = store.get(_PODS, key)
            snap.add_pod(current if current is not None else pod)
            if current is not None and needs_scheduling(current) and not _gated(current):
                self._active[key] = None
        for res in results[len(bindings) :]:
            if isinstance(res, BaseException) and not isinstance(res, ApiError):
                log.error("marking a pod unschedulable crashed", error=repr(res))

    def _decide_groups(
        self,
        keys: list[PodKey],
        bindings: list[tuple[dict[str, Any], str]],
        rejected: list[tuple[dict[str, Any], str]],
    ) -> tuple[list[PodKey], list[gang.GangVerdict]]:
        """Run a pod-group cycle for each group with a pod in `keys` (higher priority first);
        returns the keys to schedule one by one and the verdicts to write."""
        if not self.gangs.enabled:
            return keys, []
        single: list[PodKey] = []
        groups: dict[gang.GroupKey, None] = {}
        for key in keys:
            pod = self.core.store.get(_PODS, key)
            group = self.gangs.group_of(pod) if pod is not None else None
            if group is None:
                single.append(key)
            else:
                groups[group] = None
        verdicts = []
        ordered = sorted(groups, key=lambda g: -self.gangs.group_priority(g, self.gangs.members(g)))
        for group in ordered:
            verdict = self.gangs.decide(group, self.snapshot, self.rng)
            self.cycles += verdict.tried
            self.cost += verdict.cost
            for pod, node in verdict.bindings:
                bindings.append((pod, node))
            for pod, message in verdict.rejected:
                rejected.append((pod, message))
            waiting = {gang.pod_key(p) for p, _m in verdict.rejected}
            for member in self.gangs.members(group):
                key = gang.pod_key(member)
                self._active.pop(key, None)
                if key in waiting:
                    self._unschedulable[key] = None
            single += verdict.individual
            verdicts.append(verdict)
        return single, verdicts

    # ------------------------------------------------------------------ writes

    async def _place_claims(self, volumes: PodVolumes, node_name: str) -> None:
        """VolumeBinding's PreBind for the chosen node: static volumes get their claim,
        claims to provision get the node (`volume.kubernetes.io/selected-node`)."""
        node = self.core.store.get(_NODES, ("", node_name))
        if node is None:
            return
        for kind, obj, extra, claim_ref in volumes.bind_writes(node):
            plural = "persistentvolumeclaims" if kind == "claim" else "persistentvolumes"
            rt = self.core.registry.get("", "v1", plural)
            assert rt is not None
            meta = obj["metadata"]
            current = self.core.store.get(("", plural), (meta.get("namespace", ""), meta["name"]))
            if current is None:
                continue
            new_meta = dict(current["metadata"])
            new_meta["annotations"] = {**(new_meta.get("annotations") or {}), **extra}
            new = {**current, "metadata": new_meta}
            if claim_ref is not None:
                new["spec"] = {**(current.get("spec") or {}), "claimRef": claim_ref}
            try:
                await self.core.update(
                    rt, meta.get("namespace", ""), meta["name"], new, self._req()
                )
            except ApiError as err:
                log.info("placing a claim failed", object=meta["name"], error=str(err))

    async def _bind(self, pod: dict[str, Any], node: str) -> bool:
        """Bind through the binding subresource: spec.nodeName and PodScheduled=True in one
        write, with the admission kube-apiserver gives a Binding."""
        meta = pod["metadata"]
        ns, name, uid = meta.get("namespace", ""), meta["name"], meta.get("uid")
        current = self.core.store.get(_PODS, (ns, name))
        if (
            current is None
            or current["metadata"].get("uid") != uid
            or not needs_scheduling(current)
        ):
            return False
        try:
            await self.core.bind(
                self._pods_rt,
                ns,
                name,
                {
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": name, "namespace": ns, "uid": uid},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": node},
                },
                self._req(),
            )
        except ApiError as err:
            if err.code not in (404, 409):
                log.warning("binding failed", pod=f"{ns}/{name}", node=node, error=str(err))
            return False
        self.recorder.event(
            current,
            "Normal",
            "Scheduled",
            f"Successfully assigned {ns}/{name} to {node}",
            action="Binding",
        )
        return True

    async def _mark_unschedulable(self, pod: dict[str, Any], message: str) -> None:
        meta = pod["metadata"]
        await self._set_scheduled(
            meta.get("namespace", ""),
            meta["name"],
            meta.get("uid"),
            "False",
            "Unschedulable",
            message,
        )

    async def _set_scheduled(
        self, ns: str, name: str, uid: Any, status: str, reason: str, message: str
    ) -> None:
        for _attempt in range(5):
            pod = self.core.store.get(_PODS, (ns, name))
            if pod is None or pod["metadata"].get("uid") != uid:
                return
            pod_status = pod.get("status") or {}
            old = next(
                (c for c in pod_status.get("conditions") or () if c.get("type") == "PodScheduled"),
                None,
            )
            if (
                old is not None
                and old.get("status") == status
                and (old.get("reason") or "") == reason
                and (old.get("message") or "") == message
            ):
                return
            try:
                written = await self.core.update(
                    self._pods_rt,
                    ns,
                    name,
                    {**pod, "status": with_pod_scheduled(pod_status, status, reason, message)},
                    self._req(),
                    subresource="status",
                )
                if status == "False" and reason == "Unschedulable":
                    self.recorder.event(
                        written, WARNING, "FailedScheduling", message, action="Scheduling"
                    )
                return
            except ApiError as err:
                if err.code == 409:
                    continue
                if err.code != 404:
                    log.warning("pod condition update failed", pod=f"{ns}/{name}", error=str(err))
                return
