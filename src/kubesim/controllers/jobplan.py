"""The Job controller's decision for one sync at level `pods`, without a server.

`JobPlanner(job, pods, memory, now).decide()` says what upstream's `syncJob` would do -
whether the Job fails or succeeds, which pods to delete and which completion indexes to
create - and `status_after(actions, outcome)` the status to write once those writes were
made. `job.py` applies both (creates and deletes pods, writes the status, then removes the
finalizers of the pods the status accounts for); tests call them directly.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubesim.clock import now_rfc3339, parse_rfc3339
from kubesim.controllers.jobpolicy import (
    COMPLETION_INDEX_ANNOTATION,
    INDEX_FAILURE_COUNT_ANNOTATION,
    INDEX_IGNORED_FAILURE_COUNT_ANNOTATION,
    JOB_TRACKING_FINALIZER,
    MAX_POD_CREATE_DELETE_PER_SYNC,
    Backoff,
    Finish,
    active_pod_rank,
    backoff_delay,
    completion_index,
    ensure_condition,
    find_condition,
    format_indexes,
    has_tracking_finalizer,
    indexed_generate_name,
    int_annotation,
    is_deleting,
    is_pod_failed,
    is_terminal,
    match_pod_failure_policy,
    match_success_policy,
    omit_zero,
    parse_indexes,
    past_backoff_limit_on_failure,
    pod_phase,
    pod_ready,
    spec_int,
    truncate_prefix,
    with_index_env,
)

__all__ = ["Actions", "JobPlanner", "Memory", "Outcome", "StatusUpdate"]


@dataclass
class Memory:
    """What the controller remembers about one Job between syncs (upstream's in-memory
    stores), handed to the planner by value so the decision stays a pure function."""

    counted: Collection[str] = ()  # pod uids the status counts whose finalizer is still on
    lost: Sequence[dict[str, Any]] = ()  # pods that vanished with the tracking finalizer
    started: float | None = None  # precise start time (status.startTime has whole seconds)
    backoff: Backoff | None = None
    # Per completion index: (failures, ignored failures, last failure time).
    index_failures: Mapping[int, tuple[int, int, float]] = field(default_factory=dict)
    time_scale: float = 1.0


@dataclass
class Actions:
    """What one sync wants done to the pods, decided before anything is written."""

    finish: Finish | None
    status: dict[str, Any]  # the status being built (startTime may be set already)
    conds: list[dict[str, Any]]
    tracked: list[dict[str, Any]]  # finished pods not accounted for, finalizer still on
    new_succeeded: Sequence[Mapping[str, Any]]
    new_failed: Sequence[Mapping[str, Any]]
    succeeded: int
    succeeded_indexes: set[int]
    failed_indexes: set[int]
    index_failures: dict[int, tuple[int, int, float]]  # the new per-index memory
    started_at: float | None = None  # record as the precise start time
    requeue_after: list[float] = field(default_factory=list)
    delete: list[dict[str, Any]] = field(default_factory=list)
    keep_finalizer: bool = False  # deleted pods keep the finalizer: they will be counted
    create: list[int | None] = field(default_factory=list)  # completion indexes (None: any)
    manage_called: bool = False


@dataclass
class Outcome:
    """What applying `Actions` achieved: pods really deleted (and how many were ready), created."""

    deleted: int = 0
    deleted_ready: int = 0
    created: int = 0


@dataclass
class StatusUpdate:
    """The status to write, and what to do once it is written."""

    status: dict[str, Any]
    release: list[dict[str, Any]]  # pods whose tracking finalizer goes after the write
    started_at: float | None = None  # a resumed Job restarts its deadline clock
    backoff: Backoff | None = None  # the new podBackoffStore record (None: unchanged)


class JobPlanner:
    """One `syncJob` of one Job at level `pods`, as pure decisions over plain dicts.

    Upstream's order: count newly finished pods, decide whether the Job fails or succeeds,
    else manage its pods (create / delete / suspend); then - once those writes happened -
    compute the status, and only after it is written remove the finalizers of the pods it
    now accounts for. `decide()` is the first half and `status_after()` the second; the
    controller performs the writes between them, so both are testable without a server.
    """

    def __init__(
        self, job: Mapping[str, Any], pods: Sequence[dict[str, Any]], memory: Memory, now: float
    ) -> None:
        self.job = job
        self.pods = list(pods)
        self.memory = memory
        meta = job["metadata"]
        self.ns: str = meta.get("namespace", "")
        self.name: str = meta["name"]
        self.uid: str = meta["uid"]
        spec: dict[str, Any] = job.get("spec") or {}
        self.spec = spec
        self.old_status: dict[str, Any] = job.get("status") or {}
        self.indexed = spec.get("completionMode") == "Indexed"
        completions = spec.get("completions")
        self.completions: int | None = int(completions) if completions is not None else None
        self.parallelism = spec_int(spec, "parallelism", 1)
        self.backoff_limit = spec_int(spec, "backoffLimit", 6)
        self.suspended = bool(spec.get("suspend"))
        self.deleting = bool(meta.get("deletionTimestamp"))
        self.pfp: dict[str, Any] | None = spec.get("podFailurePolicy")
        self.only_failed = spec.get("podReplacementPolicy") == "Failed" or self.pfp is not None
        self.per_index = self.indexed and spec.get("backoffLimitPerIndex") is not None
        self.now_wall = now
        self.now = now_rfc3339(now)
        self.active_pods = [p for p in self.pods if not is_terminal(p) and not is_deleting(p)]
        self.terminating = sum(1 for p in self.pods if is_deleting(p) and not is_terminal(p))
        self.ready = sum(1 for p in self.active_pods if pod_ready(p))
        self.index_failures: dict[int, tuple[int, int, float]] = dict(memory.index_failures)

    def valid_index(self, pod: Mapping[str, Any]) -> bool:
        if not self.indexed:
            return True
        ix = completion_index(pod)
        return ix is not None and self.completions is not None and 0 <= ix < self.completions

    # ------------------------------------------------------------------ before the writes

    def decide(self) -> Actions:
        """Count finished pods, decide failure/success, and which pods to delete or create."""
        status: dict[str, Any] = dict(self.old_status)
        conds: list[dict[str, Any]] = [dict(c) for c in status.get("conditions") or []]
        lost = self.memory.lost
        tracked = [
            p
            for p in self.pods
            if has_tracking_finalizer(p) and p["metadata"].get("uid") not in self.memory.counted
        ]
        if self.indexed:
            tracked.sort(key=lambda p: (completion_index(p) or 0, p["metadata"]["name"]))
        new_succeeded = [
            p for p in (*tracked, *lost) if pod_phase(p) == "Succeeded" and self.valid_index(p)
        ]
        new_failed: list[Mapping[str, Any]] = [
            p for p in tracked if is_pod_failed(p, self.only_failed) and self.valid_index(p)
        ]
        new_failed += [p for p in lost if pod_phase(p) != "Succeeded" and self.valid_index(p)]
        counted_failed = sum(1 for p in new_failed if match_pod_failure_policy(self.pfp, p)[1])
        acts = Actions(
            finish=None,
            status=status,
            conds=conds,
            tracked=tracked,
            new_succeeded=new_succeeded,
            new_failed=new_failed,
            succeeded=int(status.get("succeeded") or 0) + len(new_succeeded),
            succeeded_indexes=set(),
            failed_indexes=set(),
            index_failures=self.index_failures,
        )
        if not status.get("startTime") and not self.suspended:
            status["startTime"] = self.now
            acts.started_at = self.now_wall
        failed = int(status.get("failed") or 0) + counted_failed
        acts.finish = self._existing_finish(conds) or self._failure(acts, failed)
        if self.indexed:
            self._indexes(acts)
        if acts.finish is not None:
            acts.delete, acts.keep_finalizer = list(self.active_pods), True
        elif not self.deleting:
            self._manage(acts)
        return acts

    def _existing_finish(self, conds: Sequence[Mapping[str, Any]]) -> Finish | None:
        for ctype, final in (("SuccessCriteriaMet", "Complete"), ("FailureTarget", "Failed")):
            c = find_condition(conds, ctype)
            if c is not None and c.get("status") == "True":
                return Finish(ctype, final, str(c.get("reason") or ""), str(c.get("message") or ""))
        return None

    def _failure(self, acts: Actions, failed: int) -> Finish | None:
        """podFailurePolicy FailJob, backoffLimit, activeDeadlineSeconds - in upstream's order."""
        if self.pfp is not None:
            for p in self.pods:
                if is_pod_failed(p, self.only_failed):
                    message = match_pod_failure_policy(self.pfp, p)[0]
                    if message is not None:
                        return Finish("FailureTarget", "Failed", "PodFailurePolicy", message)
        if failed > self.backoff_limit or past_backoff_limit_on_failure(self.spec, self.pods):
            return Finish(
                "FailureTarget",
                "Failed",
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
            )
        left = self._deadline_left(acts)
        if left is not None and left <= 0:
            return Finish(
                "FailureTarget",
                "Failed",
                "DeadlineExceeded",
                "Job was active longer than specified deadline",
            )
        if left is not None:
            acts.requeue_after.append(left)
        return None

    def _deadline_left(self, acts: Actions) -> float | None:
        """Seconds until activeDeadlineSeconds (scaled) runs out; None if not applicable."""
        deadline = self.spec.get("activeDeadlineSeconds")
        status = acts.status
        if deadline is None or self.suspended or not status.get("startTime"):
            return None
        started = acts.started_at if acts.started_at is not None else self.memory.started
        if started is None:
            started = parse_rfc3339(status["startTime"])
        return started + float(deadline) * self.memory.time_scale - self.now_wall

    def _indexes(self, acts: Actions) -> None:
        """Indexed Jobs: completed and failed indexes, maxFailedIndexes, successPolicy."""
        assert self.completions is not None
        done = parse_indexes(acts.status.get("completedIndexes"), self.completions)
        for p in self.pods:
            if pod_phase(p) == "Succeeded" and has_tracking_finalizer(p) and self.valid_index(p):
                done.add(completion_index(p) or 0)
        for p in self.memory.lost:
            if pod_phase(p) == "Succeeded" and self.valid_index(p):
                done.add(completion_index(p) or 0)
        acts.succeeded_indexes, acts.succeeded = done, len(done)
        if self.per_index:
            acts.failed_indexes = failed = self._failed_indexes(acts.status, done)
            max_failed = self.spec.get("maxFailedIndexes")
            if acts.finish is None and max_failed is not None and len(failed) > int(max_failed):
                acts.finish = Finish(
                    "FailureTarget",
                    "Failed",
                    "MaxFailedIndexesExceeded",
                    "Job has exceeded the specified maximal number of failed indexes",
                )
            elif acts.finish is None and failed and len(failed) + len(done) >= self.completions:
                acts.finish = Finish(
                    "FailureTarget", "Failed", "FailedIndexes", "Job has failed indexes"
                )
        if acts.finish is None:
            met = match_success_policy(self.spec.get("successPolicy"), self.completions, done)
            if met is not None:
                acts.finish = Finish("SuccessCriteriaMet", "Complete", "SuccessPolicy", met)

    def _failed_indexes(self, status: Mapping[str, Any], succeeded: set[int]) -> set[int]:
        """backoffLimitPerIndex: an index fails once its failures exceed the limit, or a
        FailIndex rule matches. Failure counts travel on the replacement pod's annotation."""
        assert self.completions is not None
        limit = int(self.spec.get("backoffLimitPerIndex") or 0)
        out = parse_indexes(status.get("failedIndexes"), self.completions)
        memory = self.index_failures
        for p in (*self.pods, *self.memory.lost):
            if not self.valid_index(p) or not is_pod_failed(p, self.only_failed):
                continue
            ix = completion_index(p)
            assert ix is not None
            if ix in succeeded:
                continue
            _msg, counts, action = match_pod_failure_policy(self.pfp, p)
            fails = int_annotation(p, INDEX_FAILURE_COUNT_ANNOTATION) + (1 if counts else 0)
            ignored = int_annotation(p, INDEX_IGNORED_FAILURE_COUNT_ANNOTATION) + (
                0 if counts else 1
            )
            seen = memory.get(ix, (0, 0, 0.0))
            if (fails, ignored) > seen[:2]:
                memory[ix] = (max(fails, seen[0]), max(ignored, seen[1]), self.now_wall)
            if action == "FailIndex" or fails > limit:
                out.add(ix)
        return out

    def _manage(self, acts: Actions) -> None:
        """`manageJob`: bring the number of active pods to what the Job wants."""
        acts.manage_called = True
        active = len(self.active_pods)
        if self.suspended:
            acts.delete = list(self.active_pods)
            return
        if self.completions is None:
            want = active if acts.succeeded > 0 else self.parallelism
        else:
            want = max(min(self.completions - acts.succeeded, self.parallelism), 0)
        to_remove = self._pods_for_removal(max(active - want, 0))
        if to_remove:
            acts.delete = to_remove[:MAX_POD_CREATE_DELETE_PER_SYNC]
            return
        blocking_terminating = self.terminating if self.only_failed else 0
        diff = want - blocking_terminating - active
        if diff <= 0:
            return
        if not self.per_index:
            wait = self._backoff_left()
            if wait > 0:
                acts.requeue_after.append(wait)
                return
        diff = min(diff, MAX_POD_CREATE_DELETE_PER_SYNC)
        if not self.indexed:
            acts.create = [None] * diff
            return
        found = self._pending_indexes(diff, acts.succeeded_indexes, acts.failed_indexes)
        if self.per_index:
            found, wait = self._indexes_past_backoff(found)
            if not found and wait > 0:
                acts.requeue_after.append(wait)
                return
        acts.create = list(found)

    def _backoff_left(self) -> float:
        record = self.memory.backoff
        if record is None or record.failures <= 0:
            return 0.0
        wait = backoff_delay(record.failures) * self.memory.time_scale
        return wait - (self.now_wall - record.last_failure)

    def _indexes_past_backoff(self, indexes: list[int]) -> tuple[list[int], float]:
        ready: list[int] = []
        wait = math.inf
        for ix in indexes:
            fails, _ignored, last = self.index_failures.get(ix, (0, 0, 0.0))
            left = backoff_delay(fails) * self.memory.time_scale - (self.now_wall - last)
            if fails <= 0 or left <= 0:
                ready.append(ix)
            else:
                wait = min(wait, left)
        return ready, (0.0 if ready else wait)

    def _pods_for_removal(self, at_least: int) -> list[dict[str, Any]]:
        """Surplus pods, and for Indexed Jobs pods with a duplicate or invalid index; the
        least advanced (unscheduled, pending, not ready, newest) go first."""
        remove: list[dict[str, Any]] = []
        keep = self.active_pods
        if self.indexed:
            keep = []
            by_index: dict[int, list[dict[str, Any]]] = {}
            for p in self.active_pods:
                if not self.valid_index(p):
                    remove.append(p)
                    continue
                ix = completion_index(p)
                assert ix is not None
                by_index.setdefault(ix, []).append(p)
            for group in by_index.values():
                group.sort(key=active_pod_rank)
                remove.extend(group[:-1])
                keep.append(group[-1])
        if len(remove) < at_least:
            keep = sorted(keep, key=active_pod_rank)
            remove.extend(keep[: at_least - len(remove)])
        return remove

    def _pending_indexes(self, count: int, succeeded: set[int], failed: set[int]) -> list[int]:
        assert self.completions is not None
        taken = set(succeeded) | failed
        for p in self.active_pods:
            ix = completion_index(p)
            if ix is not None:
                taken.add(ix)
        if self.only_failed:
            for p in self.pods:
                if is_deleting(p) and not is_terminal(p):
                    ix = completion_index(p)
                    if ix is not None:
                        taken.add(ix)
        out: list[int] = []
        for ix in range(self.completions):
            if len(out) >= count:
                break
            if ix not in taken:
                out.append(ix)
        return out

    def pod_for(self, index: int | None) -> dict[str, Any]:
        """A pod from the template, as `CreatePodsWithGenerateName` would build it."""
        template = self.spec.get("template") or {}
        tmeta = template.get("metadata") or {}
        labels = dict(tmeta.get("labels") or {})
        annotations = dict(tmeta.get("annotations") or {})
        pod_spec = dict(template.get("spec") or {})
        finalizers = list(tmeta.get("finalizers") or [])
        if JOB_TRACKING_FINALIZER not in finalizers:
            finalizers.append(JOB_TRACKING_FINALIZER)
        if index is None:
            generate_name = truncate_prefix(f"{self.name}-")
        else:
            annotations[COMPLETION_INDEX_ANNOTATION] = str(index)
            labels[COMPLETION_INDEX_ANNOTATION] = str(index)
            pod_spec["hostname"] = f"{self.name}-{index}"
            pod_spec["containers"] = [with_index_env(c) for c in pod_spec.get("containers") or []]
            if pod_spec.get("initContainers"):
                pod_spec["initContainers"] = [with_index_env(c) for c in pod_spec["initContainers"]]
            generate_name = indexed_generate_name(self.name, index)
            if self.per_index:
                fails, ignored, _last = self.index_failures.get(index, (0, 0, 0.0))
                annotations[INDEX_FAILURE_COUNT_ANNOTATION] = str(fails)
                if ignored:
                    annotations[INDEX_IGNORED_FAILURE_COUNT_ANNOTATION] = str(ignored)
        owner = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
        meta: dict[str, Any] = {
            "generateName": generate_name,
            "namespace": self.ns,
            "labels": labels,
            "finalizers": finalizers,
            "ownerReferences": [owner],
        }
        if annotations:
            meta["annotations"] = annotations
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec}

    # ------------------------------------------------------------------ after the writes

    def status_after(self, acts: Actions, done: Outcome) -> StatusUpdate:
        """The status once `acts` were applied with outcome `done`, and what it releases."""
        status, conds, finish = acts.status, acts.conds, acts.finish
        active = len(self.active_pods) - done.deleted + done.created
        terminating = self.terminating + done.deleted
        ready = self.ready - done.deleted_ready
        blocked = finish is not None and done.deleted != len(self.active_pods)
        update = StatusUpdate(status, [], backoff=self._next_backoff(acts))
        if finish is None:
            finish = self._completion_or_suspension(acts, active, update)
        succeeded, failed = self._count(acts, finish, update)
        omit_zero(status, "active", active)
        status["ready"] = max(ready, 0)
        status["terminating"] = max(terminating, 0)
        omit_zero(status, "succeeded", succeeded)
        omit_zero(status, "failed", failed)
        status.setdefault("uncountedTerminatedPods", {})
        if self.indexed:
            if acts.succeeded_indexes:
                status["completedIndexes"] = format_indexes(acts.succeeded_indexes)
            else:
                status.pop("completedIndexes", None)
            if self.per_index:
                status["failedIndexes"] = format_indexes(acts.failed_indexes)
        if finish is not None:
            ensure_condition(conds, finish.interim, "True", finish.reason, finish.message, self.now)
            if not blocked and terminating <= 0:
                ensure_condition(
                    conds, finish.final, "True", finish.reason, finish.message, self.now
                )
                if finish.final == "Complete":
                    status["completionTime"] = self.now
        if conds:
            status["conditions"] = conds
        else:
            status.pop("conditions", None)
        return update

    def _completion_or_suspension(
        self, acts: Actions, active: int, update: StatusUpdate
    ) -> Finish | None:
        if self.completions is None:
            complete = acts.succeeded > 0 and active == 0
        else:
            complete = acts.succeeded >= self.completions and active == 0
        if complete:
            return Finish(
                "SuccessCriteriaMet",
                "Complete",
                "CompletionsReached",
                "Reached expected number of succeeded pods",
            )
        if acts.manage_called:
            if self.suspended:
                ensure_condition(
                    acts.conds, "Suspended", "True", "JobSuspended", "Job suspended", self.now
                )
            elif ensure_condition(
                acts.conds, "Suspended", "False", "JobResumed", "Job resumed", self.now
            ):
                # Resumed Jobs restart their activeDeadlineSeconds clock.
                acts.status["startTime"] = self.now
                update.started_at = self.now_wall
        return None

    def _count(self, acts: Actions, finish: Finish | None, update: StatusUpdate) -> tuple[int, int]:
        """Which pods the status now accounts for (their finalizer can go), and the counters."""
        lost = self.memory.lost
        newly_failed = sum(
            1
            for p in lost
            if pod_phase(p) != "Succeeded"
            and self.valid_index(p)
            and match_pod_failure_policy(self.pfp, p)[1]
        )
        newly_succeeded = sum(
            1 for p in lost if pod_phase(p) == "Succeeded" and self.valid_index(p)
        )
        for p in acts.tracked:
            considered_failed = is_pod_failed(p, self.only_failed)
            succeeded = pod_phase(p) == "Succeeded"
            if not (self.deleting or finish is not None or succeeded or considered_failed):
                continue
            update.release.append(p)
            if succeeded:
                if not self.indexed:
                    newly_succeeded += 1
            elif considered_failed or (finish is not None and finish.failed):
                if self.valid_index(p) and match_pod_failure_policy(self.pfp, p)[1]:
                    newly_failed += 1
        # Counted by an earlier sync whose finalizer removal failed: release, don't recount.
        update.release += [
            p
            for p in self.pods
            if has_tracking_finalizer(p) and p["metadata"].get("uid") in self.memory.counted
        ]
        total = acts.succeeded
        if not self.indexed:
            total = int(self.old_status.get("succeeded") or 0) + newly_succeeded
        return total, int(self.old_status.get("failed") or 0) + newly_failed

    def _next_backoff(self, acts: Actions) -> Backoff | None:
        if not acts.new_succeeded and not acts.new_failed:
            return None
        old = self.memory.backoff
        record = Backoff(old.failures, old.last_failure) if old is not None else Backoff()
        if acts.new_succeeded:
            record.failures = 0
        if acts.new_failed:
            record.failures += len(acts.new_failed)
            record.last_failure = self.now_wall
        return record
