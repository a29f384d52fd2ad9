"""The simulated kube-controller-manager Job controller (batch/v1, as of Kubernetes 1.32).

A JobSet is only as testable as the Jobs under it: the JobSet controller reads Job conditions
(`Complete`, `Failed` and their reasons), counters (`active`, `ready`, `succeeded`, `failed`)
and relies on the Job controller to create, replace and delete pods. So this follows
`pkg/controller/job` closely where a client can tell the difference:

- Pods come from `spec.template` with the controller's labels, an owner reference, the
  `batch.kubernetes.io/job-tracking` finalizer, and for Indexed Jobs the completion index
  (annotation, label, `JOB_COMPLETION_INDEX` env, hostname `<job>-<index>`).
- Finished pods are counted exactly once through that finalizer: the status is written with
  the new counts, then the finalizer is removed. A pod deleted before it succeeded counts as
  failed (`podReplacementPolicy: TerminatingOrFailed`); pods removed to suspend or scale down
  lose their finalizer first and are not counted, as upstream does.
- Failure: `podFailurePolicy` (FailJob / Ignore / Count / FailIndex), `backoffLimit` (with
  container restarts counted for `restartPolicy: OnFailure`), `activeDeadlineSeconds`,
  `backoffLimitPerIndex` / `maxFailedIndexes`. Success: completions, or `successPolicy`.
  Both go through the 1.31+ interim conditions (`FailureTarget`, `SuccessCriteriaMet`): the
  terminal `Failed` / `Complete` condition is added once no pod is terminating.
- Replacement pods wait for the pod-failure back-off (10 s doubling to 6 min), scaled by
  `--time-scale` like every other simulated duration.

Level `jobs` simulates no pods at all: a Job advances by status alone. Each completion slot
(index) runs the template's program for its duration (times `--time-scale`), at most
`parallelism` at a time, and succeeds, fails and is retried after the back-off, or restarts
in place, with the same limits and conditions as above (backoffLimit, backoffLimitPerIndex,
podFailurePolicy on exit codes, activeDeadlineSeconds, successPolicy, suspend). Two status
writes per Job in the common case, so benchmarks with tens of thousands of Jobs exercise the
JobSet controller without the pod machinery.

Events as `job-controller` (through `events.py`, correlated as client-go does):
SuccessfulCreate "Created pod: NAME" / FailedCreate "Error creating: ERROR" (a webhook's
denial, a quota), SuccessfulDelete "Deleted pod: NAME" / FailedDelete, Completed "Job
completed", the Failed condition's reason and message (BackoffLimitExceeded, DeadlineExceeded,
...), Suspended / Resumed; at level `jobs` only the ones about the Job's conditions.

Simplifications, on purpose: no adoption of orphan pods matching a Job's selector,
and `uncountedTerminatedPods` stays empty (a crash of the whole simulator between a status
write and a finalizer removal could count a pod twice).

Where things are: `jobpolicy.py` has the pure facts about Jobs and pods, `jobplan.py` the
pure decision of one sync at level `pods` (this module applies it), `jobsim.py` level `jobs`
(`StatusOnly`, the strategy the controller is constructed with for that level),
`kubesim.base.workqueue` the queue and timers shared with the simulated kubelet.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

import structlog

from kubesim.apiserver.core.apicore import ApiCore
from kubesim.apiserver.core.request import Request, component_request
from kubesim.apiserver.core.store import DELETED, ResourceKey, WatchEvent
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.base.events import NO_EVENTS, WARNING, EventSink
from kubesim.base.workqueue import WorkQueue
from kubesim.controllers.jobplan import JobPlanner, Memory, Outcome, StatusUpdate
from kubesim.controllers.jobpolicy import (
    JOB_CONTROLLER_NAME,
    JOB_TRACKING_FINALIZER,
    Backoff,
    condition_events,
    has_tracking_finalizer,
    is_job_finished,
    job_ref,
    pod_ready,
)
from kubesim.controllers.jobsim import StatusOnly
from kubesim.machinery.errors import ApiError
from kubeutil.aio import cancel_and_wait

__all__ = ["JobController"]

log = structlog.get_logger("sim.jobcontroller")

# Workers syncing distinct Jobs concurrently (kube-controller-manager's default is 5); they
# overlap the latency of admission webhooks on pod creation.
WORKERS: Final = 8

_PODS: Final[ResourceKey] = ("", "pods")
_JOBS: Final[ResourceKey] = ("batch", "jobs")
_TERMINAL: Final = frozenset({"Succeeded", "Failed"})

JobKey = tuple[str, str, str]  # ("job", namespace, name) or ("orphan", namespace, pod name)


class JobController:
    """Reconciles batch/v1 Jobs: with pods (level `pods`), or by status alone when constructed
    with the `status_only` strategy (level `jobs`), which then owns the Jobs' simulated runs."""

    def __init__(
        self,
        core: ApiCore,
        time_scale: float = 1.0,
        events: EventSink | None = None,
        status_only: StatusOnly | None = None,
    ) -> None:
        self.core = core
        self.status_only = status_only
        self.level = "pods" if status_only is None else "jobs"
        self.time_scale = max(float(time_scale), 0.0)
        self.recorder = NO_EVENTS if events is None else events.recorder("job-controller")
        jobs_rt = core.registry.get("batch", "v1", "jobs")
        pods_rt = core.registry.get("", "v1", "pods")
        assert jobs_rt is not None and pods_rt is not None
        self._jobs_rt: ResourceType = jobs_rt
        self._pods_rt: ResourceType = pods_rt
        self._queue: WorkQueue[JobKey] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        # Pods whose finished state is in the Job status but whose finalizer is still on.
        self._counted: set[str] = set()
        # Pods that vanished with the tracking finalizer (force-removed), per Job uid.
        self._lost: dict[str, list[dict[str, Any]]] = {}
        self._backoff: dict[str, Backoff] = {}
        # Per Job uid and completion index: (failures, ignored failures, last failure time).
        self._index_failures: dict[str, dict[int, tuple[int, int, float]]] = {}
        # Precise start times (status.startTime has whole seconds only), per Job uid.
        self.started: dict[str, float] = {}
        self.syncs = 0  # for tests and benchmarks: how much work the controller did
        self.status_writes = 0

    # ------------------------------------------------------------------ lifecycle

    def _req(self) -> Request:
        return component_request("job-controller")

    def start(self) -> None:
        self._queue = WorkQueue()
        self.core.store.listeners.append(self._on_event)
        for job in self.core.list(self._jobs_rt, None).items:
            meta = job["metadata"]
            self._queue.add(("job", meta.get("namespace", ""), meta["name"]))
        if self.level == "pods":
            for pod in self.core.list(self._pods_rt, None).items:
                if has_tracking_finalizer(pod) and job_ref(pod) is None:
                    meta = pod["metadata"]
                    self._queue.add(("orphan", meta.get("namespace", ""), meta["name"]))
        self._tasks = [
            asyncio.create_task(self._worker(), name=f"sim-job-controller-{i}")
            for i in range(WORKERS)
        ]

    async def stop(self) -> None:
        with contextlib.suppress(ValueError):
            self.core.store.listeners.remove(self._on_event)
        await cancel_and_wait(*self._tasks)
        self._tasks = []
        if self._queue is not None:
            self._queue.close()

    # ------------------------------------------------------------------ events

    def _on_event(self, rkey: ResourceKey, ev: WatchEvent) -> None:
        """Store listener: only bookkeeping and enqueueing, the work happens in workers."""
        queue = self._queue
        if queue is None:
            return
        try:
            if rkey == _JOBS:
                meta = ev.obj["metadata"]
                ns, name = meta.get("namespace", ""), meta["name"]
                if ev.type == DELETED:
                    self._job_gone(ev.obj)
                queue.add(("job", ns, name))
            elif rkey == _PODS and self.level == "pods":
                self._on_pod(queue, ev)
        except Exception:  # a listener must never break the write that triggered it
            log.exception("job controller event handling failed")

    def _on_pod(self, queue: WorkQueue[JobKey], ev: WatchEvent) -> None:
        pod = ev.obj
        meta = pod["metadata"]
        ns = meta.get("namespace", "")
        ref = job_ref(pod)
        if ref is not None:
            queue.add(("job", ns, str(ref.get("name"))))
        if ev.old is not None:
            old_ref = job_ref(ev.old)
            if old_ref is not None and (ref is None or old_ref.get("uid") != ref.get("uid")):
                queue.add(("job", ns, str(old_ref.get("name"))))
        uid = meta.get("uid", "")
        if ev.type == DELETED:
            if has_tracking_finalizer(pod) and uid not in self._counted and ref is not None:
                # Removed (force-removed) before the controller accounted for it: count it
                # at the Job's next sync, if the Job is still there to count it.
                job = self.core.store.get(_JOBS, (ns, str(ref.get("name"))))
                if job is not None and job["metadata"].get("uid") == ref.get("uid"):
                    self._lost.setdefault(str(ref.get("uid")), []).append(pod)
            self._counted.discard(uid)
            return
        if has_tracking_finalizer(pod):
            job = None if ref is None else self.core.store.get(_JOBS, (ns, str(ref.get("name"))))
            if job is None or job["metadata"].get("uid") != (ref or {}).get("uid"):
                queue.add(("orphan", ns, meta["name"]))

    def _job_gone(self, job: Mapping[str, Any]) -> None:
        meta = job["metadata"]
        uid = meta.get("uid", "")
        self._lost.pop(uid, None)
        self._backoff.pop(uid, None)
        self._index_failures.pop(uid, None)
        self.started.pop(uid, None)
        if self.status_only is not None:
            self.status_only.job_gone(uid)
        if self._queue is None:
            return
        for rkey, okey in list(self.core.store.dependents.get(uid, ())):
            if rkey == _PODS:
                self._queue.add(("orphan", okey[0], okey[1]))

    # ------------------------------------------------------------------ workers

    async def _worker(self) -> None:
        queue = self._queue
        assert queue is not None
        while True:
            key = await queue.get()
            try:
                kind, ns, name = key
                retry = False
                if kind == "orphan":
                    await self._sync_orphan(ns, name)
                elif self.status_only is None:
                    retry = await self._sync_job(ns, name)
                else:
                    await self._sync_job_status_only(self.status_only, ns, name)
                if retry:
                    queue.add_rate_limited(key)
                else:
                    queue.forget(key)
            except ApiError as err:
                if err.code == 409:
                    queue.add(key)  # stale read: redo from the fresh state at once
                elif err.code == 404:
                    queue.forget(key)
                else:
                    log.warning("job sync failed", key=key, code=err.code, error=str(err))
                    queue.add_rate_limited(key)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("job sync crashed", key=key)
                queue.add_rate_limited(key)
            finally:
                queue.done(key)

    def requeue_after(self, ns: str, name: str, delay: float) -> None:
        if self._queue is not None and not math.isinf(delay):
            self._queue.add_after(("job", ns, name), delay)

    # ------------------------------------------------------------------ API helpers

    def _pods_of(self, job_uid: str) -> list[dict[str, Any]]:
        """The Job's pods, by its controller reference (the store indexes owners)."""
        out = []
        store = self.core.store
        for rkey, okey in store.dependents.get(job_uid, ()):
            if rkey != _PODS:
                continue
            pod = store.get(rkey, okey)
            if pod is None:
                continue
            ref = job_ref(pod)
            if ref is not None and ref.get("uid") == job_uid:
                out.append(pod)
        out.sort(key=lambda p: p["metadata"]["name"])
        return out

    async def write_status(self, job: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        meta = job["metadata"]
        self.status_writes += 1
        written = await self.core.update(
            self._jobs_rt,
            meta.get("namespace", ""),
            meta["name"],
            {**job, "status": status},
            self._req(),
            subresource="status",
        )
        for type_, reason, message in condition_events(job.get("status"), status):
            self.recorder.event(written, type_, reason, message)
        return written

    async def _remove_finalizer(self, pod: Mapping[str, Any]) -> bool:
        """Drop the tracking finalizer from the current version of `pod`; True when it is
        gone (or the pod is)."""
        meta = pod["metadata"]
        ns, name, uid = meta.get("namespace", ""), meta["name"], meta.get("uid")
        for _attempt in range(5):
            current = self.core.store.get(_PODS, (ns, name))
            if current is None or current["metadata"].get("uid") != uid:
                return True
            cmeta = current["metadata"]
            finalizers = [f for f in cmeta.get("finalizers") or () if f != JOB_TRACKING_FINALIZER]
            if len(finalizers) == len(cmeta.get("finalizers") or ()):
                return True
            new_meta = {**cmeta, "finalizers": finalizers}
            if not finalizers:
                del new_meta["finalizers"]
            try:
                await self.core.update(
                    self._pods_rt, ns, name, {**current, "metadata": new_meta}, self._req()
                )
                return True
            except ApiError as err:
                if err.code == 404:
                    return True
                if err.code != 409:
                    log.warning("removing pod finalizer failed", pod=f"{ns}/{name}", error=str(err))
                    return False
        return False

    async def _delete_pod(
        self, pod: Mapping[str, Any], job: Mapping[str, Any] | None = None
    ) -> bool:
        meta = pod["metadata"]
        try:
            await self.core.delete(
                self._pods_rt,
                meta.get("namespace", ""),
                meta["name"],
                {"propagationPolicy": "Background", "preconditions": {"uid": meta.get("uid")}},
                self._req(),
            )
            if job is not None:
                self.recorder.event(
                    job, "Normal", "SuccessfulDelete", f"Deleted pod: {meta['name']}"
                )
            return True
        except ApiError as err:
            if err.code == 404:
                return True
            if err.code == 409:  # a pod of the same name but another uid: ours is gone
                return True
            log.warning("deleting pod failed", pod=meta["name"], error=str(err))
            if job is not None:
                self.recorder.event(job, WARNING, "FailedDelete", f"Error deleting: {err.message}")
            return False

    async def _delete_pods(
        self,
        pods: Sequence[Mapping[str, Any]],
        *,
        keep_finalizer: bool,
        job: Mapping[str, Any] | None = None,
    ) -> tuple[int, int]:
        """Delete pods concurrently; returns (deleted, of which were ready). Without
        `keep_finalizer` the finalizer goes first, so the pods are never counted (what
        upstream does for suspension and scale-down)."""

        async def one(pod: Mapping[str, Any]) -> bool:
            if not keep_finalizer and not await self._remove_finalizer(pod):
                return False
            return await self._delete_pod(pod, job)

        results = await asyncio.gather(*(one(p) for p in pods))
        deleted = sum(1 for ok in results if ok)
        ready = sum(1 for ok, p in zip(results, pods, strict=True) if ok and pod_ready(p))
        return deleted, ready

    # ------------------------------------------------------------------ orphans

    async def _sync_orphan(self, ns: str, name: str) -> None:
        """A pod with the tracking finalizer whose Job is gone, finished or not its
        controller any more: nobody else will remove the finalizer."""
        pod = self.core.store.get(_PODS, (ns, name))
        if pod is None or not has_tracking_finalizer(pod):
            return
        ref = job_ref(pod)
        if ref is not None:
            job = self.core.store.get(_JOBS, (ns, str(ref.get("name"))))
            if job is not None and job["metadata"].get("uid") == ref.get("uid"):
                managed_by = (job.get("spec") or {}).get("managedBy")
                if managed_by not in (None, JOB_CONTROLLER_NAME):
                    return
                if not is_job_finished(job):
                    return
        await self._remove_finalizer(pod)

    # ------------------------------------------------------------------ level pods

    async def _sync_job(self, ns: str, name: str) -> bool:
        """One sync at level `pods`; True asks for a rate-limited retry (pods could not be
        created, e.g. a webhook denied them)."""
        job = self.core.store.get(_JOBS, (ns, name))
        if job is None:
            return False
        self.syncs += 1
        spec = job.get("spec") or {}
        uid = job["metadata"]["uid"]
        if spec.get("managedBy") not in (None, JOB_CONTROLLER_NAME):
            return False
        pods = self._pods_of(uid)
        if is_job_finished(job):
            # Finished earlier: only make sure no pod keeps its finalizer.
            self._backoff.pop(uid, None)
            leftovers = [p for p in pods if has_tracking_finalizer(p)]
            if leftovers:
                await asyncio.gather(*(self._remove_finalizer(p) for p in leftovers))
            return False
        mode = spec.get("completionMode") or "NonIndexed"
        if mode not in ("NonIndexed", "Indexed"):
            return False
        sync = _JobSync(self, job, pods)
        await sync.run()
        return sync.retry

    # ------------------------------------------------------------------ level jobs

    async def _sync_job_status_only(self, mode: StatusOnly, ns: str, name: str) -> None:
        """Level `jobs`: advance one Job's simulated pods to now and write what changed
        (`jobsim.py`)."""
        key = (ns, name)
        job = self.core.store.get(_JOBS, key)
        if job is None:
            mode.forget(key)
            return
        self.syncs += 1
        meta = job["metadata"]
        if (
            (job.get("spec") or {}).get("managedBy") not in (None, JOB_CONTROLLER_NAME)
            or is_job_finished(job)
            or meta.get("deletionTimestamp")
        ):
            mode.forget(key)
            return
        await mode.sync(self, job)


class _JobSync:
    """One `syncJob` of one Job at level `pods`: `JobPlanner` decides, this writes.

    The order is upstream's: pods are deleted or created first, then the status is written,
    and only then are the tracking finalizers of the pods it now accounts for removed.
    """

    def __init__(self, ctl: JobController, job: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        self.ctl = ctl
        self.job = job
        meta = job["metadata"]
        self.ns: str = meta.get("namespace", "")
        self.name: str = meta["name"]
        self.uid: str = meta["uid"]
        self.pods = pods
        self.planner: JobPlanner | None = None
        self.retry = False

    async def run(self) -> None:
        ctl = self.ctl
        lost = ctl._lost.pop(self.uid, [])
        try:
            await self._run(lost)
        except BaseException:
            if lost:  # not counted yet: keep them for the retry
                ctl._lost.setdefault(self.uid, []).extend(lost)
            raise

    async def _run(self, lost: list[dict[str, Any]]) -> None:
        ctl = self.ctl
        memory = Memory(
            counted=ctl._counted,
            lost=lost,
            started=ctl.started.get(self.uid),
            backoff=ctl._backoff.get(self.uid),
            index_failures=ctl._index_failures.get(self.uid, {}),
            time_scale=ctl.time_scale,
        )
        self.planner = planner = JobPlanner(self.job, self.pods, memory, time.time())
        acts = planner.decide()
        if acts.started_at is not None:
            ctl.started[self.uid] = acts.started_at
        if acts.index_failures or self.uid in ctl._index_failures:
            ctl._index_failures[self.uid] = acts.index_failures
        for delay in acts.requeue_after:
            ctl.requeue_after(self.ns, self.name, delay)
        outcome = Outcome()
        if acts.delete:
            outcome.deleted, outcome.deleted_ready = await ctl._delete_pods(
                acts.delete, keep_finalizer=acts.keep_finalizer, job=self.job
            )
        if acts.create:
            outcome.created = await self._create_pods(acts.create)
        update = planner.status_after(acts, outcome)
        if update.started_at is not None:
            ctl.started[self.uid] = update.started_at
        if update.status != planner.old_status:
            await ctl.write_status(self.job, update.status)
        await self._release(update)

    async def _release(self, update: StatusUpdate) -> None:
        """The status accounts for these pods now; only then may their finalizer go."""
        ctl = self.ctl
        release_uids = [p["metadata"].get("uid", "") for p in update.release]
        ctl._counted.update(release_uids)
        if update.backoff is not None:
            ctl._backoff[self.uid] = update.backoff
        if not update.release:
            return
        results = await asyncio.gather(*(ctl._remove_finalizer(p) for p in update.release))
        for uid, ok in zip(release_uids, results, strict=True):
            if ok:
                ctl._counted.discard(uid)
        if not all(results):
            ctl.requeue_after(self.ns, self.name, 0.05)

    def _planner(self) -> JobPlanner:
        assert self.planner is not None
        return self.planner

    async def _create_pods(self, indexes: list[int | None]) -> int:
        """Create in slow-start batches (1, 2, 4, ...) and stop at the first batch with an
        error, as upstream does, so a webhook or quota rejecting pods is not hammered."""
        created = 0
        batch = 1
        position = 0
        failed = False
        while position < len(indexes):
            chunk = indexes[position : position + batch]
            position += len(chunk)
            results = await asyncio.gather(
                *(self._create_one(ix) for ix in chunk), return_exceptions=True
            )
            for res in results:
                if res is True:
                    created += 1
                elif isinstance(res, BaseException) and not isinstance(res, ApiError):
                    raise res
                elif res is not False:
                    failed = True
            if failed:
                break
            batch *= 2
        if failed:
            self.retry = True
        return created

    async def _create_one(self, index: int | None) -> bool | ApiError:
        try:
            pod = await self.ctl.core.create(
                self.ctl._pods_rt, self.ns, self._planner().pod_for(index), self.ctl._req()
            )
            name = pod["metadata"]["name"]
            self.ctl.recorder.event(self.job, "Normal", "SuccessfulCreate", f"Created pod: {name}")
            return True
        except ApiError as err:
            if err.code == 403 and "being terminated" in err.message:
                return False  # the namespace is going away: nothing to do
            self.ctl.recorder.event(
                self.job, WARNING, "FailedCreate", f"Error creating: {err.message}"
            )
            log.info(
                "pod creation failed",
                job=f"{self.ns}/{self.name}",
                index=index,
                code=err.code,
                error=err.message,
            )
            return err
