"""The JobSet controller on `jobset.runtime`: observe (cache) → plan (pure) → act → status.

Watches JobSets (primary), and Jobs and Services mapped to their controller owner JobSet.
Every read of a reconcile is served by the informer caches:

- Jobs are indexed by controller owner UID (a Job with the right name but another owner is
  not a child) and kept slim by a transform: managedFields and the pod template are
  dropped, except the five pod-template fields a resume merges into (labels, annotations,
  nodeSelector, tolerations, schedulingGates) - the pod template is most of a Job's bytes;
- Services are looked up by name (the headless Service exists or not);
- PVCs, when volumeClaimPolicies are used, are looked up by name among those labelled with
  a JobSet name (the PVCs this controller creates carry that label).

`act` executes a plan in order, each group with bounded parallelism; AlreadyExists on
create and NotFound on delete/patch are success (deterministic names make every action
safe to repeat). Deletes carry the cached Job's UID as precondition, so a stale cache can
never delete a Job recreated under the same name. The status is then written once, with
the cached resourceVersion: a conflict means the cache was stale, and the key is requeued
quietly - that optimistic check is also what keeps a restart from being counted twice.
Events and the finished/restart metrics follow a successful status write only.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final, Protocol, TypeVar

import structlog

from jobset.api import constants as c
from jobset.api.defaulting import default_jobset
from jobset.api.types import headless_service_name, is_suspended, iter_job_names
from jobset.api.validation import format_invalid_message, validate_create
from jobset.controllers.classify import Children
from jobset.controllers.plan import Plan, PlanInput, Resume, plan
from jobset.metrics import JobSetMetrics, JobSetPhaseCollector
from jobset.runtime import (
    BY_CONTROLLER_UID,
    ApiError,
    Manager,
    Request,
    Result,
    enqueue_object,
    enqueue_owner,
    index_by_controller_uid,
    strip_managed_fields,
)
from jobset.runtime.client import JOBS, Object, Resource
from jobset.runtime.logging import get_logger

__all__ = [
    "JOBSETS",
    "PVCS",
    "SERVICES",
    "ActionError",
    "JobSetController",
    "jobset_phase",
    "slim_job",
]

JOBSETS: Final = Resource(c.GROUP, c.VERSION, c.PLURAL, c.KIND)
SERVICES: Final = Resource("", "v1", "services", "Service")
PVCS: Final = Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim")

CONTROLLER_NAME: Final = "jobset"
EVENT_COMPONENT: Final = "jobset-controller"

_RESUME_POD_FIELDS: Final = ("nodeSelector", "tolerations", "schedulingGates")

T = TypeVar("T")


class ActionError(Exception):
    """One or more writes of a pass failed; the pass is retried with backoff."""

    def __init__(self, errors: Sequence[ApiError]) -> None:
        super().__init__("; ".join(str(e) for e in errors))
        self.errors = list(errors)

    @property
    def only_conflicts(self) -> bool:
        return all(e.conflict for e in self.errors)


class JobPlacer(Protocol):
    """What the reconciler needs of a placement planner (`jobset.placement.planned`)."""

    wake: Callable[[str, str], None] | None

    def place(self, jobset: Mapping[str, Any], job: dict[str, Any]) -> bool: ...

    def release(self, namespace: str, job_name: str) -> None: ...


def slim_job(job: Object) -> Object:
    """Cache transform for Jobs: drop managedFields and all of the pod template but the
    fields a resume merges into (see module docstring)."""
    meta = job.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    spec = job.get("spec")
    if isinstance(spec, dict) and isinstance(spec.get("template"), dict):
        template = spec["template"]
        tmeta = template.get("metadata") or {}
        tspec = template.get("spec") or {}
        slim: dict[str, Any] = {}
        kept_meta = {k: tmeta[k] for k in ("labels", "annotations") if k in tmeta}
        if kept_meta:
            slim["metadata"] = kept_meta
        kept_spec = {k: tspec[k] for k in _RESUME_POD_FIELDS if k in tspec}
        if kept_spec:
            slim["spec"] = kept_spec
        spec["template"] = slim
    return job


def jobset_phase(js: Mapping[str, Any]) -> str:
    """The phase a JobSet is counted in by the `jobset_jobsets` gauge."""
    conds = {
        cond.get("type"): cond.get("status")
        for cond in (js.get("status") or {}).get("conditions") or []
    }
    if conds.get(c.CONDITION_COMPLETED) == "True":
        return c.TERMINAL_STATE_COMPLETED
    if conds.get(c.CONDITION_FAILED) == "True":
        return c.TERMINAL_STATE_FAILED
    if is_suspended(js):
        return "Suspended"
    if conds.get(c.CONDITION_RESTARTING) == "True":
        return "Restarting"
    return "Running"


def _now() -> datetime:
    return datetime.now(UTC)


def _parse_time(value: Any) -> float | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class JobSetController:
    """The JobSet reconciler registered on a `Manager`."""

    def __init__(
        self,
        manager: Manager,
        *,
        features: Mapping[str, bool] | None = None,
        per_jobset_metrics: bool = False,
        clock: Callable[[], datetime] = _now,
        max_parallelism: int = c.MAX_PARALLELISM,
        resync_period: float | None = None,
    ) -> None:
        self.client = manager.client
        self.placer: JobPlacer | None = None
        self.features: dict[str, bool] = dict(features or {})
        self.clock = clock
        self.max_parallelism = max_parallelism
        # resync_period: every JobSet is reconciled again this often even without events
        # (controller-runtime's SyncPeriod); a converged JobSet then costs no writes.
        self.jobsets = manager.informer(
            JOBSETS, transform=strip_managed_fields, resync_period=resync_period
        )
        self.jobs = manager.informer(
            JOBS, transform=slim_job, indexers={BY_CONTROLLER_UID: index_by_controller_uid}
        )
        self.services = manager.informer(SERVICES, transform=strip_managed_fields)
        self.pvcs = manager.informer(
            PVCS, transform=strip_managed_fields, label_selector=c.JOBSET_NAME_KEY
        )
        self.recorder = manager.recorder(EVENT_COMPONENT)
        self.controller = manager.controller(CONTROLLER_NAME, self.reconcile)
        self.controller.watch(self.jobsets, enqueue_object())
        self.controller.watch(self.jobs, enqueue_owner(c.KIND, c.GROUP))
        self.controller.watch(self.services, enqueue_owner(c.KIND, c.GROUP))
        registry = manager.metrics.registry
        self.metrics = JobSetMetrics(registry, per_jobset_names=per_jobset_metrics)
        JobSetPhaseCollector(registry, self._count_phases)
        self.log = get_logger("jobset-controller")
        # Validation is pure but not free: cached per JobSet key, for one (uid, generation).
        self._validation: dict[str, tuple[str, int, str | None]] = {}
        # uids whose "all created" / "all ready" latency was already observed.
        self._observed_created: dict[str, str] = {}
        self._observed_ready: dict[str, str] = {}

    # ------------------------------------------------------------------ reconcile

    async def reconcile(self, req: Request) -> Result:
        with structlog.contextvars.bound_contextvars(jobset=str(req)):
            return await self._reconcile(req)

    async def _reconcile(self, req: Request) -> Result:
        js = self.jobsets.store.get_by_name(req.namespace, req.name)
        key = str(req)
        if js is None:
            self._forget(key)
            return Result()
        uid = str(js["metadata"].get("uid") or "")
        jobs = self.jobs.store.by_index(BY_CONTROLLER_UID, uid) if uid else []
        p = plan(
            PlanInput(
                jobset=js,
                jobs=jobs,
                now=self.clock(),
                service_exists=self._service_exists(js),
                existing_pvcs=self._existing_pvcs(js),
                features=self.features,
                invalid_message=self._invalid_message(key, js),
            )
        )
        if p.skip is not None:
            self.log.debug("skipping jobset", reason=p.skip)
            return Result()
        if p.has_writes:
            self.log.info(
                "reconciling jobset",
                create=len(p.create_jobs),
                delete=len(p.delete_jobs),
                suspend=len(p.suspend_jobs),
                resume=len(p.resume_jobs),
                status_changed=p.status_changed,
                restarts=p.status.get("restarts", 0),
            )
        try:
            await self._act(js, p)
        except ActionError as err:
            if err.only_conflicts:
                self.log.debug("write conflict, requeueing", error=str(err))
                return Result(requeue=True)
            raise
        if p.status_changed:
            try:
                await self.client.update_status(JOBSETS, {**js, "status": p.status})
            except ApiError as err:
                if err.conflict:
                    self.log.debug("status conflict, requeueing")
                    return Result(requeue=True)
                if err.not_found:
                    return Result()
                raise
            for ev in p.events:
                self.recorder.event(js, ev.type, ev.reason, ev.message)
            self._count_outcome(js, p)
        self._observe_latencies(js, key, uid, p)
        return Result(requeue_after=p.requeue_after or 0.0)

    # ------------------------------------------------------------------ observe helpers

    def _service_exists(self, js: Mapping[str, Any]) -> bool:
        ns = str(js["metadata"].get("namespace") or "")
        return self.services.store.get_by_name(ns, headless_service_name(js)) is not None

    def _existing_pvcs(self, js: Mapping[str, Any]) -> frozenset[str]:
        if not (js.get("spec") or {}).get("volumeClaimPolicies"):
            return frozenset()
        ns = str(js["metadata"].get("namespace") or "")
        return frozenset(str(p["metadata"]["name"]) for p in self.pvcs.store.list(ns))

    def _invalid_message(self, key: str, js: Mapping[str, Any]) -> str | None:
        meta = js["metadata"]
        uid = str(meta.get("uid") or "")
        generation = int(meta.get("generation") or 0)
        cached = self._validation.get(key)
        if cached is not None and cached[:2] == (uid, generation):
            return cached[2]
        errors = validate_create(default_jobset(js), features=self.features)
        message = format_invalid_message(str(meta.get("name")), errors) if errors else None
        self._validation[key] = (uid, generation, message)
        return message

    def _count_phases(self) -> dict[tuple[str, str], int]:
        counts: Counter[tuple[str, str]] = Counter()
        for js in self.jobsets.store.list():
            counts[(str(js["metadata"].get("namespace") or ""), jobset_phase(js))] += 1
        return dict(counts)

    def _forget(self, key: str) -> None:
        """The JobSet is gone: drop what was remembered about it."""
        self._validation.pop(key, None)
        self._observed_created.pop(key, None)
        self._observed_ready.pop(key, None)

    # ------------------------------------------------------------------ metrics

    def _count_outcome(self, js: Mapping[str, Any], p: Plan) -> None:
        name = str(js["metadata"].get("name"))
        ns = str(js["metadata"].get("namespace") or "")
        if p.finished == c.TERMINAL_STATE_COMPLETED:
            self.metrics.jobset_completed(name, ns)
        elif p.finished == c.TERMINAL_STATE_FAILED:
            self.metrics.jobset_failed(name, ns)
        if p.failure is not None and p.failure.restarted_jobset:
            self.metrics.jobset_restarted(name, ns, "jobset")
        if p.failure is not None and p.failure.restarted_job:
            self.metrics.jobset_restarted(name, ns, "job")

    def _observe_latencies(self, js: Mapping[str, Any], key: str, uid: str, p: Plan) -> None:
        created_at = _parse_time(js["metadata"].get("creationTimestamp"))
        if created_at is None:
            return
        ns = str(js["metadata"].get("namespace") or "")
        elapsed = max(0.0, time.time() - created_at)
        if self._observed_created.get(key) != uid and _all_created(js, p.children):
            self._observed_created[key] = uid
            self.metrics.time_to_jobs_created_seconds.labels(ns).observe(elapsed)
        if self._observed_ready.get(key) != uid and p.all_ready:
            self._observed_ready[key] = uid
            self.metrics.time_to_ready_seconds.labels(ns).observe(elapsed)

    # ------------------------------------------------------------------ act

    async def _act(self, js: Mapping[str, Any], p: Plan) -> None:
        ns = str(js["metadata"].get("namespace") or "")
        if p.delete_jobs:
            await self._parallel(p.delete_jobs, self._delete_job)
        if p.delete_jobset:
            await self._delete_jobset(js)
        if p.create_service is not None:
            try:
                await self._create(SERVICES, p.create_service)
            except ApiError as err:
                self.recorder.event(
                    dict(js), "Warning", c.HEADLESS_SERVICE_CREATION_FAILED_REASON, str(err)
                )
                raise
        if p.create_pvcs:
            try:
                await self._parallel(p.create_pvcs, lambda pvc: self._create(PVCS, pvc))
            except ActionError as err:
                self.recorder.event(dict(js), "Warning", c.PVC_CREATION_FAILED_REASON, str(err))
                raise
        if p.scale_jobs:
            await self._parallel(p.scale_jobs, lambda item: self._patch_job(item[0], item[1], ns))
        if p.create_jobs:
            try:
                await self._parallel(p.create_jobs, self._create_job)
            except ActionError as err:
                self.recorder.event(dict(js), "Warning", c.JOB_CREATION_FAILED_REASON, str(err))
                raise
        if p.suspend_jobs:
            await self._parallel(
                p.suspend_jobs, lambda job: self._patch_job(job, {"spec": {"suspend": True}}, ns)
            )
        if p.resume_jobs:
            await self._parallel(p.resume_jobs, self._resume_job)

    async def _parallel(self, items: Sequence[T], fn: Callable[[T], Awaitable[None]]) -> None:
        """Run `fn` over `items`, at most `max_parallelism` at once; join the failures."""
        sem = asyncio.Semaphore(self.max_parallelism)

        async def one(item: T) -> ApiError | None:
            async with sem:
                try:
                    await fn(item)
                except ApiError as err:
                    return err
                return None

        results = await asyncio.gather(*(one(i) for i in items))
        errors = [r for r in results if r is not None]
        if errors:
            raise ActionError(errors)

    async def _create(self, res: Resource, obj: Mapping[str, Any]) -> None:
        try:
            await self.client.create(res, obj)
        except ApiError as err:
            if not err.already_exists:
                raise

    def attach_placement(self, placer: JobPlacer) -> None:
        """Let the planned placement strategy pick each new Job's domain before it is
        created; a JobSet that waited for a free domain is re-queued when one frees up."""
        self.placer = placer
        placer.wake = lambda ns, name: self.controller.queue.add(Request(ns, name))

    async def _create_job(self, job: Mapping[str, Any]) -> None:
        meta = job["metadata"]
        placer = self.placer
        if placer is not None:
            ns = str(meta.get("namespace") or "")
            owner = (meta.get("ownerReferences") or [{}])[0].get("name", "")
            js = self.jobsets.store.get_by_name(ns, owner)
            job = dict(job)
            if js is None or not placer.place(js, job):
                return  # no free domain yet: the planner wakes this JobSet when one frees up
        try:
            await self.client.create(JOBS, job)
        except ApiError as err:
            if err.already_exists:
                return
            if placer is not None:
                placer.release(str(meta.get("namespace") or ""), str(meta["name"]))
            raise ApiError(
                err.status,
                err.reason,
                f'job "{job["metadata"]["name"]}" creation failed with error: {err.message}',
                err.body,
            ) from err
        self.log.debug("created job", job=job["metadata"]["name"])

    async def _delete_job(self, job: Mapping[str, Any]) -> None:
        meta = job["metadata"]
        try:
            await self.client.delete(
                JOBS,
                meta["name"],
                meta.get("namespace"),
                propagation_policy="Foreground",
                uid=meta.get("uid"),
            )
        except ApiError as err:
            # NotFound: already gone. Conflict: the UID precondition failed, so the Job we
            # meant is gone and another one carries its name: not ours to delete.
            if not (err.not_found or err.status == 409):
                raise
        self.log.debug(
            "deleted job",
            job=meta["name"],
            restart_attempt=(meta.get("labels") or {}).get(c.RESTART_ATTEMPT_KEY),
        )

    async def _delete_jobset(self, js: Mapping[str, Any]) -> None:
        meta = js["metadata"]
        self.log.info("ttl after finished expired, deleting jobset")
        try:
            await self.client.delete(
                JOBSETS,
                meta["name"],
                meta.get("namespace"),
                propagation_policy="Foreground",
                uid=meta.get("uid"),
            )
        except ApiError as err:
            if not (err.not_found or err.status == 409):
                raise

    async def _patch_job(self, job: Mapping[str, Any], patch: Mapping[str, Any], ns: str) -> None:
        try:
            await self.client.patch(JOBS, job["metadata"]["name"], dict(patch), ns)
        except ApiError as err:
            if not err.not_found:
                raise

    async def _resume_job(self, r: Resume) -> None:
        meta = r.job["metadata"]
        name, ns = meta["name"], meta.get("namespace")
        try:
            patch = r.patch
            if r.clear_start_time:
                # A started Job's pod template is immutable: clear startTime first, then
                # resume against the resourceVersion that write produced.
                out = await self.client.patch(
                    JOBS, name, {"status": {"startTime": None}}, ns, subresource="status"
                )
                rv = (out.get("metadata") or {}).get("resourceVersion")
                if rv and "metadata" in patch:
                    patch = {**patch, "metadata": {"resourceVersion": rv}}
            await self.client.patch(JOBS, name, patch, ns)
        except ApiError as err:
            if not err.not_found:
                raise


def _all_created(js: Mapping[str, Any], children: Children) -> bool:
    """Every Job the spec asks for exists in the current run (previous ones excluded)."""
    current = {
        str(j["metadata"]["name"])
        for j in (*children.active, *children.succeeded, *children.failed)
    }
    return all(name in current for _, _, name in iter_job_names(js))
