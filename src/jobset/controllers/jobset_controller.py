"""The JobSet controller on `jobset.runtime`: observe (cache) → plan (pure) → act → status.

Watches JobSets (primary), and Jobs and Services mapped to their controller owner JobSet.
Every read of a reconcile is served by the informer caches:

- Jobs are indexed by controller owner - a JobSet (kind and API group) in the Job's own
  namespace, by UID - so neither a Job with the right name but another owner nor one in
  another namespace that copied the JobSet's UID is a child (`jobset.resources`); they are
  cached as the small records of `jobset.controllers.jobcache`;
- Services are looked up by name (the headless Service exists or not);
- PVCs, when volumeClaimPolicies are used, are looked up by name among those labelled with
  a JobSet name (the PVCs this controller creates carry that label);
- pods, with the InPlaceRestart gate on: those labelled with a JobSet name, indexed by
  namespace/JobSet name (`in_place_restart_pods`); their events wake only JobSets using the
  strategy.

`act` executes a plan in order, each group through a pool of `max_parallelism` workers
(upstream's 50) that build Job bodies only as they send them, so a 50,000-Job restart holds
50 bodies, not 50,000; AlreadyExists on create and NotFound on delete/patch are success
(deterministic names make every action safe to repeat). A pass that has created Jobs for
half a second while another JobSet waits for a worker stops there and queues itself again
behind it (`fairshare.py`): no tenant's large JobSet holds a worker for its whole creation.
Deletes carry the cached Job's UID
as precondition, so a stale cache can never delete a Job recreated under the same name.
The status is then written once, with the cached resourceVersion: a conflict means the
cache was stale, and the key is requeued quietly - that optimistic check is also what keeps
a restart from being counted twice. A pass that created Jobs and changed only Job counts
does not write them (they predate those Jobs; the Jobs' events bring the pass that writes
current ones): one status write fewer per JobSet. Events and the finished/restart metrics
follow a successful status write only.

No JobSet holds the event loop for the others. `plan` is pure and synchronous. Each
JobSet's Jobs are kept classified, counted and indexed between its passes (`childindex`,
told of every change by the Job store's listener; each cached Job's labels, conditions and
name are parsed once, as the record is built: `jobfacts`), so a pass costs in proportion to
the Jobs changed since the last one: a large JobSet is passed over for nearly every event
of its Jobs, and a pass over all of them each time made the controller's CPU grow with
Jobs times events. A pass that classifies `PLAN_IN_THREAD_JOBS` Jobs or more again (the
first, one after a restart), or over a failure policy of `PLAN_IN_THREAD_PATTERNS` message
patterns or more, runs in a worker thread, so the loop - every other JobSet's pass, the
webhooks, the lease renewal - gets the interpreter back at each GIL switch interval instead
of waiting for the whole plan (`kubeutil.gilswitch` shortens that interval).
Its inputs are cache objects, which nobody modifies (they are replaced), and the plan
changes nothing but the JobSet's index, which only this pass touches meanwhile (the Job
store's listener notes changes aside, read at the next pass). Acting then awaits each write, and
the Job bodies are built one per write, so the rest of a pass yields anyway.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final, Protocol, TypeVar

import orjson
import structlog

from jobset.api import constants as c
from jobset.api.regex import MANY_PATTERNS, message_pattern_count
from jobset.api.types import headless_service_name, is_suspended, name_of, replicas
from jobset.api.validation import DEFAULT_LIMITS, Limits
from jobset.controllers.childindex import ChildIndex
from jobset.controllers.classify import ChildLists
from jobset.controllers.expectations import Awaited
from jobset.controllers.fairshare import DEFAULT_SLICE_SECONDS, CreationSlice, slice_seconds
from jobset.controllers.in_place_restart import is_in_place_restart
from jobset.controllers.in_place_restart_pods import (
    IN_PLACE_POD_INDEX,
    in_place_pod_informer,
    in_place_pod_key,
)
from jobset.controllers.jobcache import job_record
from jobset.controllers.jobs import NewJob, all_exist, indices_of
from jobset.controllers.metrics import JobSetMetrics, JobSetPhaseCollector
from jobset.controllers.plan import Plan, PlanInput, Resume, feature_enabled, plan
from jobset.controllers.stored_validation import StoredValidation
from jobset.resources import JOBSET_OWNER_INDEX, JOBSETS, index_jobset_owner, jobset_owner_key
from jobset.runtime import (
    ApiError,
    FuncHandler,
    Informer,
    Manager,
    Request,
    Result,
    enqueue_mapped,
    enqueue_object,
    enqueue_owner,
    strip_managed_fields,
)
from jobset.runtime.client import JOBS, PVCS, SERVICES, Object, Resource
from jobset.runtime.logging import get_logger
from kubeutil.rfc3339 import parse_rfc3339

__all__ = ["ActionError", "JobSetController", "all_created", "jobset_phase"]

CONTROLLER_NAME: Final = "jobset"
EVENT_COMPONENT: Final = "jobset-controller"

T = TypeVar("T")

# A pass classifying this many Jobs again is planned in a worker thread (below it, planning
# on the loop costs less than the thread hop would save). A planning thread holds the
# interpreter lock the loop needs after each socket call, so a plan's cost slows the loop
# while it runs: the per-Job parse is done once per record (`jobfacts`) to keep that short.
PLAN_IN_THREAD_JOBS: Final = 1000
# ... and so is one whose failure policy has this many message patterns: a failed Job is
# matched against each rule's patterns in turn (RE2, linear, but a policy as large as an
# object allows is long to match and longer to compile).
PLAN_IN_THREAD_PATTERNS: Final = MANY_PATTERNS
# A pass that finds the cache still behind this controller's own status write waits for
# the write's watch event, which requeues the JobSet; this long at most (seconds).
OWN_WRITE_WAIT: Final = 1.0


class ActionError(Exception):
    """One or more writes of a pass failed; the pass is retried with backoff.

    Keeps the first `MAX_KEPT_ERRORS` failures (in the order they happened) and counts the
    rest: when 50,000 creations fail alike (a quota, a webhook down), one message naming
    50,000 errors helps nobody and holds them all in memory.
    """

    MAX_KEPT_ERRORS: Final = 10

    def __init__(
        self, errors: Sequence[ApiError], *, more: int = 0, only_conflicts: bool | None = None
    ) -> None:
        message = "; ".join(str(e) for e in errors)
        if more:
            message += f" (and {more} more)"
        super().__init__(message)
        self.errors = list(errors)
        self.more = more
        self._only_conflicts = only_conflicts

    @property
    def only_conflicts(self) -> bool:
        if self._only_conflicts is not None:
            return self._only_conflicts
        return all(e.conflict for e in self.errors)


class JobPlacer(Protocol):
    """What the reconciler needs of a placement planner (`jobset.placement.planned`)."""

    wake: Callable[[str, str], None] | None

    def place(self, jobset: Mapping[str, Any], job: dict[str, Any]) -> bool:
        """Called for the Jobs with exclusive placement only (the others are created as
        they are built); False holds the Job back."""
        ...

    def release(self, namespace: str, job_name: str) -> None: ...


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
        counts_interval: float = 1.0,
        limits: Limits = DEFAULT_LIMITS,
        creation_slice: float = DEFAULT_SLICE_SECONDS,
    ) -> None:
        self.client = manager.client
        # Stored JobSets judged by the create or the update rules, cached per generation.
        # --max-jobs-per-jobset / --max-pods-per-job (`limits`): a stored JobSet over them
        # (created while the webhook was down or bypassed) fails like one over a rule.
        self._validation = StoredValidation(dict(features or {}), limits)
        # Seconds a pass creates Jobs before it gives its worker to a waiting JobSet
        # (`fairshare.py`); 0: never.
        self.creation_slice = creation_slice
        self.placer: JobPlacer | None = None
        self.features: dict[str, bool] = self._validation.features
        self.clock = clock
        self.max_parallelism = max_parallelism
        # A change of Job counts alone is written at most this often per JobSet (seconds);
        # conditions, restarts and terminal states are written at once.
        self.counts_interval = counts_interval
        self._last_status_write: dict[str, float] = {}
        # key -> (resourceVersion a status write was made against, the one it produced),
        # until the cache shows the JobSet past the first (`_before_own_write`).
        self._own_status_writes: dict[str, tuple[str, str]] = {}
        # resync_period: every JobSet is reconciled again this often even without events
        # (controller-runtime's SyncPeriod); a converged JobSet then costs no writes.
        self.jobsets = manager.informer(
            JOBSETS, transform=strip_managed_fields, resync_period=resync_period
        )
        self.jobs = manager.informer(
            JOBS, transform=job_record, indexers={JOBSET_OWNER_INDEX: index_jobset_owner}
        )
        self.services = manager.informer(SERVICES, transform=strip_managed_fields)
        self.pvcs = manager.informer(
            PVCS, transform=strip_managed_fields, label_selector=c.JOBSET_NAME_KEY
        )
        self.recorder = manager.recorder(EVENT_COMPONENT)
        self.controller = manager.controller(CONTROLLER_NAME, self.reconcile)
        # InPlaceRestart reads the JobSets' pods (shared with exclusive placement: the
        # informer of pods labelled with a JobSet name); only with the gate on, as upstream.
        self.pods: Informer | None = None
        if self.features.get(c.FEATURE_IN_PLACE_RESTART):
            self.pods = in_place_pod_informer(manager)
            self.controller.watch(self.pods, enqueue_mapped(self._in_place_jobset_of))
        self.controller.watch(self.jobsets, enqueue_object())
        self.controller.watch(self.jobs, enqueue_owner(c.KIND, c.GROUP))
        # Jobs created (names) and deleted (uids) whose writes the cache does not show yet
        # (see `expectations.py`).
        self.awaited = Awaited()
        self.awaited_deletes = Awaited()
        self.jobs.add_event_handler(
            FuncHandler(
                add=self._job_observed,
                update=lambda _, new: self._job_observed(new),
                delete=lambda job: self._job_observed(job, gone=True),
            )
        )
        # Each reconciled JobSet's Jobs, kept classified between passes (`childindex`): by
        # JobSet key, with the owner key it was built for; and by owner key, for the handler.
        self._child_indexes: dict[str, tuple[str, ChildIndex]] = {}
        self._child_index_of_owner: dict[str, ChildIndex] = {}
        self.jobs.store.add_listener(self._job_changed)
        self.controller.watch(self.services, enqueue_owner(c.KIND, c.GROUP))
        registry = manager.metrics.registry
        self.metrics = JobSetMetrics(registry, per_jobset_names=per_jobset_metrics)
        JobSetPhaseCollector(registry, self._count_phases)
        self.log = get_logger("jobset-controller")
        # uids whose "all created" / "all ready" latency was already observed.
        self._observed_created: dict[str, str] = {}
        self._observed_ready: dict[str, str] = {}

    @property
    def limits(self) -> Limits:
        """The Jobs / pods caps stored JobSets are judged by."""
        return self._validation.limits

    @limits.setter
    def limits(self, value: Limits) -> None:
        self._validation.limits = value

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
        if self._before_own_write(key, js):
            self.log.debug("own status write not in the cache yet, waiting for it")
            return Result(requeue_after=OWN_WRITE_WAIT)
        uid = str(js["metadata"].get("uid") or "")
        p, plan_seconds = await self._plan(key, req.namespace, uid, js)
        if p.skip is not None:
            self.log.debug("skipping jobset", reason=p.skip)
            return Result()
        if p.in_place is not None:
            self._log_in_place(p)
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
            created, cut = await self._act(js, p, plan_seconds=plan_seconds)
        except ActionError as err:
            if err.only_conflicts:
                self.log.debug("write conflict, requeueing", error=str(err))
                return Result(requeue=True)
            raise
        write, requeue_after = self._status_write_due(key, p, created)
        if write:
            try:
                # Only the new resourceVersion is read of the answer (_remember_own_write).
                written = await self.client.update_status(
                    JOBSETS, {**js, "status": p.status}, metadata_only=True
                )
                self._last_status_write[key] = time.monotonic()
                self._remember_own_write(key, js, written)
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
        if cut:
            # Another JobSet waited: this one goes to the back of the queue for the rest.
            self.log.debug("creation slice spent, requeueing", created=created)
            self.controller.queue.add(req)
        for expiry in (self.awaited.next_expiry(key), self.awaited_deletes.next_expiry(key)):
            if expiry is not None:
                # A write never seen must not wait for an unrelated event to be made again.
                requeue_after = min(requeue_after, expiry) if requeue_after else expiry
        return Result(requeue_after=requeue_after)

    async def _plan(
        self, key: str, namespace: str, uid: str, js: Mapping[str, Any]
    ) -> tuple[Plan, float]:
        """The pass's plan from the caches, and the seconds planning took."""
        index = self._child_index(key, jobset_owner_key(namespace, uid)) if uid else None
        inp = PlanInput(
            jobset=js,
            jobs=[],
            child_index=index,
            now=self.clock(),
            service_exists=self._service_exists(js),
            existing_pvcs=self._existing_pvcs(js),
            features=self.features,
            invalid_message=self._validation.message(key, js),
            awaited_jobs=self.awaited.pending(key),
            deleted_jobs=self.awaited_deletes.pending(key),
            pods=self._in_place_pods(js),
        )
        planning = time.monotonic()
        # The Jobs the pass classifies again: those changed since the last pass, or all.
        restart_job = feature_enabled(self.features, c.FEATURE_RESTART_JOB)
        work = 0 if index is None else index.work(js, restart_job=restart_job)
        if (
            work + len(inp.awaited_jobs) >= PLAN_IN_THREAD_JOBS
            or message_pattern_count(js) >= PLAN_IN_THREAD_PATTERNS
        ):
            p = await asyncio.to_thread(plan, inp)  # tenant-sized: off the loop (docstring)
        else:
            p = plan(inp)
        return p, time.monotonic() - planning

    def _child_index(self, key: str, owner: str) -> ChildIndex:
        """The JobSet's Jobs kept classified, with every Job changed since the last pass
        put again (or removed): built from the cache on the JobSet's first pass."""
        found = self._child_indexes.get(key)
        if found is not None and found[0] == owner:
            index = found[1]
            for job_key in index.touched():
                job = self.jobs.store.get(job_key)
                if job is not None and owner in index_jobset_owner(job):
                    index.put(job_key, job)
                else:
                    index.remove(job_key)
            return index
        self._drop_child_index(key)
        index = ChildIndex()
        for job_key in self.jobs.store.index_keys(JOBSET_OWNER_INDEX, owner):
            job = self.jobs.store.get(job_key)
            if job is not None:
                index.put(job_key, job)
        self._child_indexes[key] = (owner, index)
        self._child_index_of_owner[owner] = index
        return index

    def _drop_child_index(self, key: str) -> None:
        found = self._child_indexes.pop(key, None)
        if found is not None:
            self._child_index_of_owner.pop(found[0], None)

    def _job_changed(self, key: str, old: Object | None, new: Object | None) -> None:
        """A Job cached, replaced or dropped: noted as changed in the index of each JobSet
        that owned it before or owns it now (read again at that JobSet's next pass)."""
        for obj in (old, new):
            if obj is not None:
                for owner in index_jobset_owner(obj):
                    index = self._child_index_of_owner.get(owner)
                    if index is not None:
                        index.touch(key)

    def _status_write_due(self, key: str, p: Plan, created: int) -> tuple[bool, float]:
        """Whether the pass writes its status now, and when to look again."""
        requeue_after = p.requeue_after or 0.0
        write = p.status_changed
        if write and p.only_counts_changed:
            if created:
                # Counts taken before these Jobs existed are stale already; the Jobs' watch
                # events bring the pass that writes current ones (one write fewer per JobSet).
                write = False
            else:
                last = self._last_status_write.get(key)
                wait = 0.0 if last is None else last + self.counts_interval - time.monotonic()
                if wait > 0:
                    # Counts that change with every Job event are coalesced: writing each
                    # change would write status once per Job event over a JobSet's life.
                    # Decisions never read the stored counts (plan recomputes them from the
                    # Jobs): only their freshness waits.
                    write = False
                    requeue_after = min(wait, requeue_after) if requeue_after else wait
        return write, requeue_after

    def _in_place_pods(self, js: Mapping[str, Any]) -> list[Any]:
        if self.pods is None or not is_in_place_restart(js):
            return []
        return self.pods.store.by_index(IN_PLACE_POD_INDEX, in_place_pod_key(js))

    def _in_place_jobset_of(self, pod: Mapping[str, Any]) -> list[Request]:
        """A pod event wakes its JobSet only when that JobSet restarts in place."""
        meta = pod.get("metadata") or {}
        name = (meta.get("labels") or {}).get(c.JOBSET_NAME_KEY)
        ns = str(meta.get("namespace") or "")
        js = self.jobsets.store.get_by_name(ns, str(name)) if name else None
        return [Request(ns, str(name))] if js is not None and is_in_place_restart(js) else []

    def _job_observed(self, job: Mapping[str, Any], gone: bool = False) -> None:
        meta = job.get("metadata") or {}
        owner = (meta.get("labels") or {}).get(c.JOBSET_NAME_KEY)
        if not owner:
            return
        key = f"{meta.get('namespace') or ''}/{owner}"
        self.awaited.observed(key, str(meta.get("name")))
        if gone or meta.get("deletionTimestamp"):
            self.awaited_deletes.observed(key, str(meta.get("uid")))

    def _log_in_place(self, p: Plan) -> None:
        ip = p.in_place
        assert ip is not None
        if ip.invalid_pods:
            self.log.warning(
                f"invalid {c.IN_PLACE_RESTART_ATTEMPT_KEY} annotation, must be a non-negative "
                "integer: pods ignored",
                pods=list(ip.invalid_pods),
            )
        if ip.current is not None:
            self.log.info("updated current in-place restart attempt", attempt=ip.current)
        if ip.previous is not None:
            self.log.info("updated previous in-place restart attempt", attempt=ip.previous)
        if ip.failed:
            self.log.info("in-place restarts exceeded maxRestarts, failing jobset")

    # ------------------------------------------------------------------ observe helpers

    def _service_exists(self, js: Mapping[str, Any]) -> bool:
        ns = str(js["metadata"].get("namespace") or "")
        return self.services.store.get_by_name(ns, headless_service_name(js)) is not None

    def _existing_pvcs(self, js: Mapping[str, Any]) -> frozenset[str]:
        if not (js.get("spec") or {}).get("volumeClaimPolicies"):
            return frozenset()
        ns = str(js["metadata"].get("namespace") or "")
        return frozenset(str(p["metadata"]["name"]) for p in self.pvcs.store.list(ns))

    def _count_phases(self) -> dict[tuple[str, str], int]:
        counts: Counter[tuple[str, str]] = Counter()
        for js in self.jobsets.store.list():
            counts[(str(js["metadata"].get("namespace") or ""), jobset_phase(js))] += 1
        return dict(counts)

    def _remember_own_write(
        self, key: str, before: Mapping[str, Any], written: Mapping[str, Any]
    ) -> None:
        old_rv = str((before.get("metadata") or {}).get("resourceVersion") or "")
        new_rv = str((written.get("metadata") or {}).get("resourceVersion") or "")
        if old_rv and new_rv and new_rv != old_rv:
            self._own_status_writes[key] = (old_rv, new_rv)

    def _before_own_write(self, key: str, js: Mapping[str, Any]) -> bool:
        """Whether the cached JobSet is still the version this controller's last status
        write replaced.

        Such a pass would plan on the status before that write (a restart not yet counted,
        say), and its own write would fail on the resourceVersion: a wasted plan and a
        wasted PUT of the whole object, costly for a large JobSet in both processes while
        other tenants wait. The write's watch event brings the next pass; `OWN_WRITE_WAIT` is the net
        should it never come. Any other version (the write's own, or a newer one by
        someone else) ends the wait.
        """
        pending = self._own_status_writes.get(key)
        if pending is None:
            return False
        if str(js["metadata"].get("resourceVersion") or "") == pending[0]:
            return True
        del self._own_status_writes[key]
        return False

    def _forget(self, key: str) -> None:
        """The JobSet is gone: drop what was remembered about it."""
        self._validation.forget(key)
        self._last_status_write.pop(key, None)
        self._own_status_writes.pop(key, None)
        self.awaited.forget(key)
        self.awaited_deletes.forget(key)
        self._observed_created.pop(key, None)
        self._observed_ready.pop(key, None)
        self._drop_child_index(key)

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
        if p.in_place is not None and p.in_place.previous is not None:
            self.metrics.jobset_restarted(name, ns, "in-place")

    def _observe_latencies(self, js: Mapping[str, Any], key: str, uid: str, p: Plan) -> None:
        created = parse_rfc3339(js["metadata"].get("creationTimestamp"))
        created_at = None if created is None else created.timestamp()
        if created_at is None:
            return
        ns = str(js["metadata"].get("namespace") or "")
        elapsed = max(0.0, time.time() - created_at)
        if self._observed_created.get(key) != uid and all_created(js, p.children):
            self._observed_created[key] = uid
            self.metrics.time_to_jobs_created_seconds.labels(ns).observe(elapsed)
        if self._observed_ready.get(key) != uid and p.all_ready:
            self._observed_ready[key] = uid
            self.metrics.time_to_ready_seconds.labels(ns).observe(elapsed)

    # ------------------------------------------------------------------ act

    async def _act(
        self, js: Mapping[str, Any], p: Plan, *, plan_seconds: float = 0.0
    ) -> tuple[int, bool]:
        """Execute the plan's writes in order; returns how many Jobs were created anew, and
        whether the creations were cut short for a waiting JobSet (`fairshare.py`; the
        slice grows with `plan_seconds`, what planning this pass took)."""
        ns = str(js["metadata"].get("namespace") or "")
        created = 0
        cut = False
        if p.delete_jobs:
            await self._parallel(p.delete_jobs, self._delete_job, len(p.delete_jobs))
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
                await self._parallel(
                    p.create_pvcs, lambda pvc: self._create(PVCS, pvc), len(p.create_pvcs)
                )
            except ActionError as err:
                self.recorder.event(dict(js), "Warning", c.PVC_CREATION_FAILED_REASON, str(err))
                raise
        if p.scale_jobs:
            await self._parallel(
                p.scale_jobs, lambda item: self._patch_job(item[0], item[1], ns), len(p.scale_jobs)
            )
        if p.create_jobs:

            async def create(job: NewJob) -> None:
                nonlocal created
                if await self._create_job(job):
                    created += 1

            # Bodies from the ReplicatedJob's encoded template (`PendingJobs.encoded`);
            # Jobs with exclusive placement as Jobs when a placement planner may pick
            # their domain (`JobPlacer.place` leaves every other Job as it is).
            items = p.create_jobs.encoded(exclusive_as_jobs=self.placer is not None)
            share = CreationSlice(
                items,
                seconds=slice_seconds(self.creation_slice, plan_seconds),
                others_waiting=lambda: len(self.controller.queue) > 0,
            )
            try:
                await self._parallel(share, create, len(p.create_jobs))
            except ActionError as err:
                self.recorder.event(dict(js), "Warning", c.JOB_CREATION_FAILED_REASON, str(err))
                raise
            cut = share.cut
        if p.suspend_jobs:
            await self._parallel(
                p.suspend_jobs,
                lambda job: self._patch_job(job, {"spec": {"suspend": True}}, ns),
                len(p.suspend_jobs),
            )
        if p.resume_jobs:
            await self._parallel(p.resume_jobs, self._resume_job, len(p.resume_jobs))
        return created, cut

    async def _parallel(
        self, items: Iterable[T], fn: Callable[[T], Awaitable[object]], count: int
    ) -> None:
        """Run `fn` over `items` in order, at most `max_parallelism` at once; join failures.

        A pool of workers takes items from one shared iterator, so an item - a Job body
        built on demand by `PendingJobs` - exists only while a worker sends it: peak memory
        is O(parallelism), not O(items) (a gather over 50,000 coroutines held all bodies).
        Every item is tried; `ApiError`s are collected into one `ActionError`. Any other
        exception stops the pool: the other workers are cancelled and it propagates.
        Order matters for crash safety only through determinism: names are fixed, so a
        pass cut anywhere is completed by the next one without duplicates.
        """
        it = iter(items)
        errors: list[ApiError] = []
        more = 0
        only_conflicts = True

        async def worker() -> None:
            nonlocal more, only_conflicts
            for item in it:
                try:
                    await fn(item)
                except ApiError as err:
                    only_conflicts = only_conflicts and err.conflict
                    if len(errors) < ActionError.MAX_KEPT_ERRORS:
                        errors.append(err)
                    else:
                        more += 1

        workers = [
            asyncio.ensure_future(worker()) for _ in range(max(1, min(self.max_parallelism, count)))
        ]
        try:
            await asyncio.gather(*workers)
        except BaseException:
            for w in workers:
                w.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            raise
        if errors:
            raise ActionError(errors, more=more, only_conflicts=only_conflicts)

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

    async def _create_job(self, job: Mapping[str, Any] | NewJob) -> bool:
        """Create one child Job; True when the server created it (not when it existed
        already, nor when placement held it back)."""
        placer = self.placer
        body: Mapping[str, Any] | bytes
        if isinstance(job, NewJob) and job.body is not None:
            name, ns, owner, body = job.name, job.namespace, job.owner, job.body
        else:
            if isinstance(job, NewJob):
                assert job.job is not None  # a NewJob is a body or a Job
                job = job.job
            meta = job["metadata"]
            name, ns = str(meta["name"]), str(meta.get("namespace") or "")
            owner = str((meta.get("labels") or {}).get(c.JOBSET_NAME_KEY) or "")
            if placer is not None:
                ref = (meta.get("ownerReferences") or [{}])[0].get("name", "")
                js = self.jobsets.store.get_by_name(ns, ref)
                job = dict(job)
                if js is None or not placer.place(js, job):
                    return False  # no free domain yet: the planner wakes this JobSet later
            body = job
        try:
            made = await self.client.create_raw(JOBS, body, ns or None)
        except ApiError as err:
            if err.already_exists:
                return False
            if placer is not None:
                placer.release(ns, name)
            raise ApiError(
                err.status,
                err.reason,
                f'job "{name}" creation failed with error: {err.message}',
                err.body,
            ) from err
        cached = self.jobs.store.get_by_name(ns, name)
        # The watch may have delivered the new Job before this response: then it is seen.
        # The answer is parsed only then, for its uid (most answers come first: unparsed).
        if owner and not (cached is not None and cached["metadata"].get("uid") == _uid(made)):
            self.awaited.expect(f"{ns}/{owner}", name)
        self.log.debug("created job", job=name)
        return True

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
        owner = (meta.get("labels") or {}).get(c.JOBSET_NAME_KEY)
        ns, uid = str(meta.get("namespace") or ""), str(meta.get("uid"))
        cached = self.jobs.store.get_by_name(ns, str(meta["name"]))
        if (
            owner
            and cached is not None
            and cached["metadata"].get("uid") == uid
            and not cached["metadata"].get("deletionTimestamp")
        ):
            # The cache does not show the deletion yet: the next pass must not repeat it.
            self.awaited_deletes.expect(f"{ns}/{owner}", uid)
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
                if rv and "resourceVersion" in (patch.get("metadata") or {}):
                    patch = {**patch, "metadata": {**patch["metadata"], "resourceVersion": rv}}
            if r.resources:
                await self.client.patch(JOBS, name, patch, ns, patch_type="strategic")
            else:
                await self.client.patch(JOBS, name, patch, ns)
        except ApiError as err:
            if err.not_found:
                return
            if r.resources and err.status == 422:
                self._resource_propagation_failed(r.job, err)
            raise

    def _resource_propagation_failed(self, job: Mapping[str, Any], err: ApiError) -> None:
        """KEP-1150: say why a resume with changed resources keeps failing, on the JobSet,
        instead of a silent backoff loop (the API server lacks KEP-5440's gate)."""
        meta = job.get("metadata") or {}
        owner = (meta.get("labels") or {}).get(c.JOBSET_NAME_KEY)
        js = self.jobsets.store.get_by_name(str(meta.get("namespace") or ""), str(owner))
        if js is None:
            return
        self.recorder.event(
            js,
            "Warning",
            c.RESOURCE_PROPAGATION_FAILED_REASON,
            f"Failed to propagate mutated resources to child Job {meta.get('name')}: "
            f"{err.message}. Ensure MutablePodResourcesForSuspendedJobs is enabled on the API "
            "server.",
        )


def _uid(answer: bytes) -> Any:
    """metadata.uid of a create's answer (None when it has none or is not JSON)."""
    try:
        made = orjson.loads(answer) if answer else None
    except orjson.JSONDecodeError:
        return None
    return ((made if isinstance(made, dict) else {}).get("metadata") or {}).get("uid")


def all_created(js: Mapping[str, Any], children: ChildLists) -> bool:
    """Every Job the spec asks for exists in the current run (previous ones excluded).

    Counted from the Jobs that exist (O(existing)), never by walking `replicas`; while
    fewer Jobs exist than the spec asks for (every pass of a long creation) it is O(1)."""
    rjobs = (js.get("spec") or {}).get("replicatedJobs") or []
    if children.current_count() < sum(replicas(rjob) for rjob in rjobs):
        return False
    by_rjob = indices_of(
        name_of(js), itertools.chain(children.active, children.succeeded, children.failed)
    )
    return all(
        all_exist(by_rjob.get(str(rjob.get("name") or ""), ()), replicas(rjob)) for rjob in rjobs
    )
