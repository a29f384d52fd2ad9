"""The pure planner: from a JobSet and its observed children to actions and desired status.

`plan()` is upstream's `reconcile` with every API call replaced by an entry in a `Plan`, so
the whole lifecycle is a function of its inputs (JobSet, owned Jobs, whether the headless
Service and PVCs exist, the time, the feature gates) and is tested without any server. The
controller executes a plan in field order - deletions, Service, PVCs, scaling, creations,
suspend/resume - stops at the first failure, and writes `status` (once, only when
`status_changed`) after all actions succeeded, then emits `events`. A pass that created
Jobs and changed nothing but Job counts (`only_counts_changed`) leaves the write to the
pass those Jobs' events bring: its counts predate the Jobs it just created. `create_jobs`
is lazy (`PendingJobs`): each body is built when the controller sends it.

The pass, in upstream's order:

1. Skip JobSets being deleted or managed by another controller (`spec.managedBy`).
2. A JobSet that fails validation (stored without the webhook, or valid only under other
   feature gates) is failed with reason `ValidationFailed` and a Warning event, instead of
   erroring on every pass. The caller judges it (`stored_validation.py`: create rules for
   generation 1, update rules for an update) and passes the verdict as `invalid_message`.
3. Classify children (Jobs beyond `replicas` after an elastic scale-down are previous);
   recompute `replicatedJobsStatus`.
4. Finished: delete still-active Jobs, apply ttlSecondsAfterFinished. Stop.
5. Delete previous Jobs (foreground); RestartingJobSet=False once all Jobs are ready again.
6. Failed Jobs: failure policy. Stop. Succeeded Jobs: success policy (Completed). Stop.
7. Headless Service, PVCs, elastic scaling, missing Jobs (dependsOn, InOrder,
   BlockingRecreate), then suspend or resume.
8. ExecutionAttemptsTracking (gate on): `status.executionAttempts` starts, grows on a
   resume and on a JobSet-wide restart, and is stamped on created and resumed Jobs
   (`execution_attempts`).
9. InPlaceRestart (gate on): the attempts of the JobSet's pods move
   `currentInPlaceRestartAttempt` / `previousInPlaceRestartAttempt` (`in_place_restart`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from jobset.api import constants as c
from jobset.api.defaulting import defaulted_view
from jobset.api.types import is_finished, is_managed_by_this_controller, is_suspended
from jobset.controllers import startup
from jobset.controllers.childindex import ChildIndex
from jobset.controllers.classify import (
    ChildLists,
    Children,
    all_jobs_ready,
    replicated_job_statuses,
    rjob_name_of,
    statuses_equal,
)
from jobset.controllers.conditions import Event, StatusUpdate
from jobset.controllers.execution_attempts import (
    attempt_for_pass,
    record_restart,
    record_running,
)
from jobset.controllers.in_place_restart import (
    InPlaceOutcome,
    is_in_place_restart,
    reconcile_in_place_restart,
)
from jobset.controllers.jobs import PendingJobs, missing_indices, resume_patch
from jobset.controllers.network import headless_service, wants_headless_service
from jobset.controllers.restart_policy import FailureOutcome, execute_failure_policy
from jobset.controllers.success_policy import success_policy_met
from jobset.controllers.ttl import ttl_decision
from jobset.controllers.volumes import persistent_volume_claims

__all__ = ["VALIDATION_FAILED_REASON", "Plan", "PlanInput", "Resume", "feature_enabled", "plan"]

Job = dict[str, Any]

# Not an upstream reason (upstream has no controller-side validation): the Failed
# condition's reason when a stored JobSet does not pass validation.
VALIDATION_FAILED_REASON: Final = "ValidationFailed"


def feature_enabled(features: Mapping[str, bool], name: str) -> bool:
    """A feature gate's value, falling back to the project's defaults."""
    return bool(features.get(name, c.DEFAULT_FEATURE_GATES.get(name, False)))


@dataclass(frozen=True)
class PlanInput:
    """Everything one pass observes (from the cache) plus the clock and the gates."""

    jobset: Mapping[str, Any]
    jobs: list[Job]
    now: datetime
    service_exists: bool = False
    existing_pvcs: frozenset[str] = frozenset()
    features: Mapping[str, bool] = field(default_factory=dict)
    # Validation errors of the JobSet, formatted; None when valid (the caller validates,
    # and may cache the result per generation).
    invalid_message: str | None = None
    # Names of Jobs created by an earlier pass and not in the cache yet: they exist, so
    # they are not created again; uids of Jobs deleted by an earlier pass whose deletion the
    # cache does not show yet: they are not deleted again (see `expectations.py`).
    awaited_jobs: frozenset[str] = frozenset()
    deleted_jobs: frozenset[str] = frozenset()
    # The JobSet's pods (label jobset.sigs.k8s.io/jobset-name), read only by in-place
    # restart: given when the InPlaceRestart gate is on and the JobSet uses the strategy.
    pods: Sequence[Mapping[str, Any]] = ()
    # The same Jobs kept classified between passes (`childindex`), read instead of `jobs`
    # when given: the pass brings it up to date, in O(Jobs changed since the last pass).
    child_index: ChildIndex | None = None


@dataclass(frozen=True)
class Resume:
    """Resume one suspended Job: clear status.startTime first if set, then patch it.

    `resources`: the patch changes container resources (KEP-1150), and is sent as a
    strategic merge patch (containers merged by name)."""

    job: Job
    patch: dict[str, Any]
    clear_start_time: bool
    resources: bool = False


@dataclass
class Plan:
    """What one pass must do. Empty lists mean nothing to do."""

    skip: str | None = None
    delete_jobs: list[Job] = field(default_factory=list)
    create_service: dict[str, Any] | None = None
    create_pvcs: list[dict[str, Any]] = field(default_factory=list)
    scale_jobs: list[tuple[Job, dict[str, Any]]] = field(default_factory=list)
    # Built one at a time when read (see `PendingJobs`): a sequence of Job bodies.
    create_jobs: PendingJobs = field(default_factory=PendingJobs)
    suspend_jobs: list[Job] = field(default_factory=list)
    resume_jobs: list[Resume] = field(default_factory=list)
    delete_jobset: bool = False
    requeue_after: float | None = None
    status: dict[str, Any] = field(default_factory=dict)
    status_changed: bool = False
    # The status change is only Job counts in replicatedJobsStatus (see `StatusUpdate`).
    only_counts_changed: bool = False
    events: list[Event] = field(default_factory=list)
    children: ChildLists = field(default_factory=Children)
    failure: FailureOutcome | None = None
    in_place: InPlaceOutcome | None = None
    # Set when this pass finishes the JobSet ("Completed" / "Failed"), for metrics.
    finished: str | None = None
    all_ready: bool = False

    @property
    def has_writes(self) -> bool:
        return bool(
            self.delete_jobs
            or self.create_service is not None
            or self.create_pvcs
            or self.scale_jobs
            or self.create_jobs
            or self.suspend_jobs
            or self.resume_jobs
            or self.delete_jobset
            or self.status_changed
        )


def _not_deleting(jobs: Iterable[Job], deleted: frozenset[str] = frozenset()) -> list[Job]:
    out = []
    for job in jobs:
        meta = job.get("metadata") or {}
        if not meta.get("deletionTimestamp") and meta.get("uid") not in deleted:
            out.append(job)
    return out


def plan(inp: PlanInput) -> Plan:
    """Plan one reconcile pass of `inp.jobset`. Pure: reads its input and changes nothing
    but `inp.child_index`, which it brings up to date."""
    raw = inp.jobset
    meta = raw.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return Plan(skip="deleting")
    if not is_managed_by_this_controller(raw):
        return Plan(skip=f"managed by {(raw.get('spec') or {}).get('managedBy')}")

    # Webhook defaults are idempotent: applying them here makes a JobSet stored without the
    # webhook behave as one that went through it. Only the status is ever written back. A
    # view, not a deep copy (sharing what the defaults leave alone): the pass only reads it.
    js: dict[str, Any] = dict(defaulted_view(raw))
    restart_job = feature_enabled(inp.features, c.FEATURE_RESTART_JOB)
    tracking = feature_enabled(inp.features, c.FEATURE_EXECUTION_ATTEMPTS_TRACKING)
    update = StatusUpdate.of(js, inp.now)
    out = Plan()

    was_finished = is_finished(js)
    children = inp.child_index if inp.child_index is not None else ChildIndex.of(inp.jobs)
    children.classify(js, restart_job=restart_job)
    out.children = children
    statuses = replicated_job_statuses(js, children, restart_job=restart_job)
    if not statuses_equal(update.status.get("replicatedJobsStatus"), statuses):
        update.changed = True
    update.status["replicatedJobsStatus"] = statuses
    if not statuses and "replicatedJobsStatus" not in (js.get("status") or {}):
        del update.status["replicatedJobsStatus"]

    if inp.invalid_message is not None and not was_finished:
        update.set_failed(VALIDATION_FAILED_REASON, inp.invalid_message)
        out.finished = c.TERMINAL_STATE_FAILED
        return _finish(out, update)

    if was_finished:
        out.delete_jobs = _not_deleting(children.active, inp.deleted_jobs)
        ttl = ttl_decision(js, inp.now)
        out.delete_jobset = ttl.delete
        out.requeue_after = ttl.requeue_after
        return _finish(out, update)

    out.delete_jobs = _not_deleting(children.previous, inp.deleted_jobs)
    suspended = is_suspended(js)
    out.all_ready = all_jobs_ready(js, statuses)
    if not suspended and out.all_ready:
        update.set_restarting_false(c.RESTARTING_REASON_JOBS_READY, c.RESTARTING_MESSAGE_JOBS_READY)

    if children.failed:
        out.failure = execute_failure_policy(js, children, update, restart_job=restart_job)
        if tracking:
            record_restart(update)
        if out.failure.failed:
            out.finished = c.TERMINAL_STATE_FAILED
        return _finish(out, update)

    if children.succeeded and success_policy_met(js, children.succeeded):
        update.set_completed()
        out.finished = c.TERMINAL_STATE_COMPLETED
        return _finish(out, update)

    _plan_supporting(js, children, inp, out)
    attempt = attempt_for_pass(update, suspended=suspended) if tracking else None
    _plan_creation(js, children, statuses, update, out, restart_job, inp.awaited_jobs, attempt)
    if suspended:
        out.suspend_jobs = [j for j in children.active if not (j.get("spec") or {}).get("suspend")]
        update.set_suspended()
    else:
        resources = feature_enabled(inp.features, c.FEATURE_MUTABLE_POD_RESOURCES)
        _plan_resume(js, children, statuses, update, out, resources=resources, attempt=attempt)
        if attempt is not None:
            record_running(update, attempt)
    if is_in_place_restart(js) and feature_enabled(inp.features, c.FEATURE_IN_PLACE_RESTART):
        out.in_place = reconcile_in_place_restart(js, inp.pods, update)
        if out.in_place.failed:
            out.finished = c.TERMINAL_STATE_FAILED
    return _finish(out, update)


def _plan_supporting(
    js: Mapping[str, Any], children: ChildLists, inp: PlanInput, out: Plan
) -> None:
    """The headless Service, the PVCs and (ElasticJobSet) scaled Jobs the pass needs."""
    if wants_headless_service(js) and not inp.service_exists:
        out.create_service = headless_service(js)
    out.create_pvcs = [
        pvc
        for pvc in persistent_volume_claims(js)
        if pvc["metadata"]["name"] not in inp.existing_pvcs
    ]
    if feature_enabled(inp.features, c.FEATURE_ELASTIC_JOBSET):
        out.scale_jobs = _scaling(js, children.active)


def _finish(out: Plan, update: StatusUpdate) -> Plan:
    out.status = update.status
    out.status_changed = update.changed
    out.only_counts_changed = update.only_counts_changed()
    out.events = update.events
    return out


def _plan_creation(
    js: Mapping[str, Any],
    children: ChildIndex,
    statuses: list[dict[str, Any]],
    update: StatusUpdate,
    out: Plan,
    restart_job: bool,
    awaited: frozenset[str] = frozenset(),
    attempt: int | None = None,
) -> None:
    """Missing Jobs, ReplicatedJob by ReplicatedJob (upstream `reconcileReplicatedJobs`)."""
    suspended = is_suspended(js)
    ordered = startup.in_order(js) and not suspended
    # Parsed once for every ReplicatedJob: O(Jobs that exist), whatever `replicas` says.
    existing = children.existing_indices(awaited)
    out.create_jobs = PendingJobs(js, restart_job=restart_job, execution_attempt=attempt)
    for rjob in (js.get("spec") or {}).get("replicatedJobs") or []:
        if not startup.dependencies_reached(js, rjob, statuses):
            continue
        status = startup.find_status(statuses, str(rjob.get("name")))
        if ordered and startup.all_replicas_started(rjob, status):
            continue
        indices = existing.get(str(rjob.get("name") or ""), ())
        out.create_jobs.add(rjob, missing_indices(js, rjob, children, indices=indices))
        if ordered:
            update.set_startup_in_progress()
            return
    if ordered:
        update.set_startup_completed()


def _plan_resume(
    js: Mapping[str, Any],
    children: ChildIndex,
    statuses: list[dict[str, Any]],
    update: StatusUpdate,
    out: Plan,
    *,
    resources: bool = False,
    attempt: int | None = None,
) -> None:
    """Unsuspend suspended Jobs (upstream `resumeJobsIfNecessary`); with `resources`
    (KEP-1150's gate) their container resources become the template's; with `attempt`
    (KEP-1282's gate) they carry that execution attempt."""
    ordered = startup.in_order(js)
    # By ReplicatedJob, in name order: the only Jobs a resume patches.
    suspended = children.suspended_active()
    for rjob in (js.get("spec") or {}).get("replicatedJobs") or []:
        name = str(rjob.get("name"))
        if not startup.dependencies_reached(js, rjob, statuses):
            continue
        if ordered and startup.all_replicas_started(rjob, startup.find_status(statuses, name)):
            continue
        for job in suspended.get(name, []):
            patch = resume_patch(job, rjob, resources=resources, execution_attempt=attempt)
            pod = patch.get("spec", {}).get("template", {}).get("spec", {})
            out.resume_jobs.append(
                Resume(
                    job,
                    patch,
                    bool((job.get("status") or {}).get("startTime")),
                    resources="containers" in pod or "initContainers" in pod,
                )
            )
        if ordered:
            update.set_startup_in_progress()
            return
    update.set_resumed()


def _scaling(js: Mapping[str, Any], active: list[Job]) -> list[tuple[Job, dict[str, Any]]]:
    """ElasticJobSet: propagate a changed parallelism == completions to active Jobs.

    Unlike upstream, an unset parallelism is never propagated: the API server would default
    it to 1 again and every pass would patch the Job anew.
    """
    desired: dict[str, tuple[Any, Any]] = {}
    for rjob in (js.get("spec") or {}).get("replicatedJobs") or []:
        spec = (rjob.get("template") or {}).get("spec") or {}
        desired[str(rjob.get("name"))] = (spec.get("parallelism"), spec.get("completions"))
    out: list[tuple[Job, dict[str, Any]]] = []
    for job in active:
        want = desired.get(rjob_name_of(job))
        if want is None or want[0] is None or want[0] != want[1]:
            continue
        spec = job.get("spec") or {}
        if spec.get("parallelism") != want[0] or spec.get("completions") != want[1]:
            out.append((job, {"spec": {"parallelism": want[0], "completions": want[1]}}))
    return out
