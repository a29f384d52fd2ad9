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

Simplifications, on purpose: no adoption of orphan pods matching a Job's selector, no Events,
and `uncountedTerminatedPods` stays empty (a crash of the whole simulator between a status
write and a finalizer removal could count a pod twice).

The `WorkQueue` and `TimerHeap` here are shared with the simulated kubelet: one timer and a
few worker tasks serve any number of objects, where a task per object would not scale.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import math
import random
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Generic, TypeVar

import structlog

from kubesim.apiserver.apicore import SYSTEM_USER, ApiCore, Request
from kubesim.apiserver.resources import ResourceType
from kubesim.apiserver.store import DELETED, ResourceKey, WatchEvent
from kubesim.clock import now_rfc3339, parse_rfc3339
from kubesim.machinery.errors import ApiError
from kubesim.programs.programs import Program, program_for

__all__ = [
    "COMPLETION_INDEX_ANNOTATION",
    "JOB_TRACKING_FINALIZER",
    "JobController",
    "TimerHeap",
    "WorkQueue",
    "format_indexes",
    "match_pod_failure_policy",
    "match_success_policy",
    "parse_indexes",
]

log = structlog.get_logger("sim.jobcontroller")

JOB_TRACKING_FINALIZER: Final = "batch.kubernetes.io/job-tracking"
COMPLETION_INDEX_ANNOTATION: Final = "batch.kubernetes.io/job-completion-index"
INDEX_FAILURE_COUNT_ANNOTATION: Final = "batch.kubernetes.io/job-index-failure-count"
INDEX_IGNORED_FAILURE_COUNT_ANNOTATION: Final = (
    "batch.kubernetes.io/job-index-ignored-failure-count"
)
COMPLETION_INDEX_ENV: Final = "JOB_COMPLETION_INDEX"
JOB_CONTROLLER_NAME: Final = "kubernetes.io/job-controller"

# Upstream constants (pkg/controller/job): pod-failure back-off, and how much one sync does.
DEFAULT_POD_FAILURE_BACKOFF: Final = 10.0
MAX_POD_FAILURE_BACKOFF: Final = 360.0
MAX_POD_CREATE_DELETE_PER_SYNC: Final = 500
# kube-apiserver's generateName: 5 random characters after at most 58 of prefix.
MAX_GENERATED_NAME_PREFIX: Final = 58
# How long a simulated pod takes to start at level `jobs`, before --time-scale.
JOBS_LEVEL_START_DELAY: Final = 1.0
# The kubelet's first container restart back-off, for restartPolicy OnFailure at level `jobs`.
CRASH_LOOP_BACKOFF: Final = 10.0
# Workers syncing distinct Jobs concurrently (kube-controller-manager's default is 5); they
# overlap the latency of admission webhooks on pod creation.
WORKERS: Final = 8

_PODS: Final[ResourceKey] = ("", "pods")
_JOBS: Final[ResourceKey] = ("batch", "jobs")
_TERMINAL: Final = frozenset({"Succeeded", "Failed"})

K = TypeVar("K", bound=Hashable)

# ---------------------------------------------------------------------------------------------
# Timers and work queues


class TimerHeap(Generic[K]):
    """Deadlines for many keys behind a single event-loop timer.

    `schedule` keeps, per key, either the earliest deadline (work-queue "add after"
    semantics) or the latest call's (a state machine moving its next step). Superseded heap
    entries are skipped when they surface, so rescheduling is O(log n) with no search.
    """

    def __init__(self, fire: Callable[[K], None]) -> None:
        self._fire = fire
        self._heap: list[tuple[float, int, K]] = []
        self._due: dict[K, float] = {}
        self._seq = itertools.count()
        self._handle: asyncio.TimerHandle | None = None
        self._armed_for = math.inf

    def __len__(self) -> int:
        return len(self._due)

    def schedule(self, key: K, delay: float, *, earliest: bool = True) -> None:
        """Fire `key` after `delay` seconds (never if infinite)."""
        if math.isinf(delay) or math.isnan(delay):
            if not earliest:
                self._due.pop(key, None)
            return
        loop = asyncio.get_running_loop()
        when = loop.time() + max(delay, 0.0)
        current = self._due.get(key)
        if current is not None and earliest and current <= when:
            return
        self._due[key] = when
        heapq.heappush(self._heap, (when, next(self._seq), key))
        self._arm(loop)

    def cancel(self, key: K) -> None:
        self._due.pop(key, None)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._armed_for = math.inf
        self._heap.clear()
        self._due.clear()

    def _arm(self, loop: asyncio.AbstractEventLoop) -> None:
        heap = self._heap
        while heap and self._due.get(heap[0][2]) != heap[0][0]:
            heapq.heappop(heap)
        if not heap:
            return
        when = heap[0][0]
        if self._handle is not None:
            if self._armed_for <= when:
                return
            self._handle.cancel()
        self._armed_for = when
        self._handle = loop.call_at(when, self._on_timer)

    def _on_timer(self) -> None:
        self._handle = None
        self._armed_for = math.inf
        loop = asyncio.get_running_loop()
        now = loop.time()
        heap = self._heap
        while heap and heap[0][0] <= now:
            when, _, key = heapq.heappop(heap)
            if self._due.get(key) == when:
                del self._due[key]
                try:
                    self._fire(key)
                except Exception:  # a broken callback must not stop every other timer
                    log.exception("timer callback failed", key=str(key))
        self._arm(loop)


class WorkQueue(Generic[K]):
    """client-go's workqueue semantics: a key queued many times is processed once, never by
    two workers at the same time, and again if it was queued while being processed."""

    def __init__(self) -> None:
        self._ready: deque[K] = deque()
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._wakeup = asyncio.Event()
        self._failures: dict[K, int] = {}
        self.timers: TimerHeap[K] = TimerHeap(self.add)

    def __len__(self) -> int:
        return len(self._dirty)

    def add(self, key: K) -> None:
        if key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._processing:
            self._ready.append(key)
            self._wakeup.set()

    def add_after(self, key: K, delay: float) -> None:
        if delay <= 0:
            self.add(key)
        else:
            self.timers.schedule(key, delay)

    def add_rate_limited(self, key: K) -> None:
        """Retry with per-key exponential back-off (50 ms doubling to 30 s), so a persistent
        error (a webhook denying pods, say) does not spin."""
        n = self._failures.get(key, 0)
        self._failures[key] = n + 1
        self.add_after(key, min(0.05 * 2**n, 30.0))

    def forget(self, key: K) -> None:
        self._failures.pop(key, None)

    async def get(self) -> K:
        while not self._ready:
            self._wakeup.clear()
            await self._wakeup.wait()
        key = self._ready.popleft()
        self._dirty.discard(key)
        self._processing.add(key)
        return key

    def done(self, key: K) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._ready.append(key)
            self._wakeup.set()

    def close(self) -> None:
        self.timers.close()


# ---------------------------------------------------------------------------------------------
# Pure helpers (unit-testable without a cluster)


def parse_indexes(text: str | None, limit: int | None = None) -> set[int]:
    """Parse "1,3-5,7" (the format of `completedIndexes` and `successPolicy`); indexes at or
    above `limit` and malformed parts are dropped, as upstream does."""
    out: set[int] = set()
    if not text:
        return out
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo_s, sep, hi_s = part.partition("-")
        try:
            lo = int(lo_s)
            hi = int(hi_s) if sep else lo
        except ValueError:
            continue
        if lo < 0 or hi < lo:
            continue
        if limit is not None:
            hi = min(hi, limit - 1)
        out.update(range(lo, hi + 1))
    return out


def format_indexes(indexes: Iterable[int]) -> str:
    """Sorted, with consecutive runs collapsed: {0,1,2,3,5} -> "0-3,5"."""
    parts: list[str] = []
    start = prev = -2
    for ix in sorted(set(indexes)):
        if ix == prev + 1:
            prev = ix
            continue
        if start >= 0:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = ix
    if start >= 0:
        parts.append(str(start) if start == prev else f"{start}-{prev}")
    return ",".join(parts)


def _exit_code_matches(code: int, requirement: Mapping[str, Any]) -> bool:
    values = requirement.get("values") or []
    op = requirement.get("operator")
    if op == "In":
        return code in values
    if op == "NotIn":
        return code not in values
    return False


def _matching_container(
    statuses: Sequence[Mapping[str, Any]], requirement: Mapping[str, Any]
) -> Mapping[str, Any] | None:
    want = requirement.get("containerName")
    for cs in statuses:
        term = (cs.get("state") or {}).get("terminated")
        if term is None:
            continue
        if want is not None and want != cs.get("name"):
            continue
        code = int(term.get("exitCode") or 0)
        if code != 0 and _exit_code_matches(code, requirement):
            return cs
    return None


def match_pod_failure_policy(
    policy: Mapping[str, Any] | None, pod: Mapping[str, Any]
) -> tuple[str | None, bool, str | None]:
    """(FailJob message or None, whether the failure counts, matched action or None) for a
    failed pod, rule by rule as `matchPodFailurePolicy` does."""
    if not policy:
        return None, True, None
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    who = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
    for index, rule in enumerate(policy.get("rules") or []):
        action = rule.get("action")
        on_codes = rule.get("onExitCodes")
        if on_codes is not None:
            cs = _matching_container(status.get("containerStatuses") or [], on_codes)
            if cs is None:
                cs = _matching_container(status.get("initContainerStatuses") or [], on_codes)
            if cs is None:
                continue
            code = ((cs.get("state") or {}).get("terminated") or {}).get("exitCode")
            message = (
                f"Container {cs.get('name')} for pod {who} failed with exit code {code} "
                f"matching {action} rule at index {index}"
            )
        else:
            patterns = rule.get("onPodConditions") or []
            matched = None
            for cond in status.get("conditions") or []:
                for pattern in patterns:
                    if cond.get("type") == pattern.get("type") and cond.get("status") == (
                        pattern.get("status") or "True"
                    ):
                        matched = cond
                        break
                if matched is not None:
                    break
            if matched is None:
                continue
            message = (
                f"Pod {who} has condition {matched.get('type')} matching {action} rule at "
                f"index {index}"
            )
        if action == "Ignore":
            return None, False, action
        if action == "FailJob":
            return message, True, action
        if action in ("Count", "FailIndex"):
            return None, True, action
    return None, True, None


def match_success_policy(
    policy: Mapping[str, Any] | None, completions: int, succeeded: set[int]
) -> str | None:
    """The `SuccessCriteriaMet` message if a `successPolicy` rule is satisfied, else None."""
    if not policy:
        return None
    for index, rule in enumerate(policy.get("rules") or []):
        wanted = rule.get("succeededIndexes")
        count = rule.get("succeededCount")
        if wanted is not None:
            rule_indexes = parse_indexes(wanted, completions)
            matched = len(rule_indexes & succeeded)
            met = matched >= count if count is not None else matched == len(rule_indexes)
        elif count is not None:
            met = len(succeeded) >= count
        else:
            met = False
        if met:
            return f"Matched rules at index {index}"
    return None


def controller_ref(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


def _job_ref(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    ref = controller_ref(obj)
    if ref is not None and ref.get("kind") == "Job" and ref.get("apiVersion") == "batch/v1":
        return ref
    return None


def find_condition(conds: Sequence[Mapping[str, Any]], ctype: str) -> Mapping[str, Any] | None:
    for c in conds:
        if c.get("type") == ctype:
            return c
    return None


def _new_condition(ctype: str, status: str, reason: str, message: str, now: str) -> dict[str, Any]:
    return {
        "type": ctype,
        "status": status,
        "lastProbeTime": now,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    }


def ensure_condition(
    conds: list[dict[str, Any]], ctype: str, status: str, reason: str, message: str, now: str
) -> bool:
    """`ensureJobConditionStatus`: update the condition of that type, or append it unless it
    would be a new False (going from nothing to False means nothing). True if changed."""
    for i, c in enumerate(conds):
        if c.get("type") == ctype:
            if (
                c.get("status") != status
                or c.get("reason") != reason
                or c.get("message") != message
            ):
                conds[i] = _new_condition(ctype, status, reason, message, now)
                return True
            return False
    if status != "False":
        conds.append(_new_condition(ctype, status, reason, message, now))
        return True
    return False


def is_job_finished(job: Mapping[str, Any]) -> bool:
    for c in (job.get("status") or {}).get("conditions") or ():
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return True
    return False


def _has_tracking_finalizer(pod: Mapping[str, Any]) -> bool:
    return JOB_TRACKING_FINALIZER in ((pod.get("metadata") or {}).get("finalizers") or ())


def _phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _terminal(pod: Mapping[str, Any]) -> bool:
    return _phase(pod) in _TERMINAL


def _deleting(obj: Mapping[str, Any]) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def pod_ready(pod: Mapping[str, Any]) -> bool:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready":
            return bool(c.get("status") == "True")
    return False


def completion_index(pod: Mapping[str, Any]) -> int | None:
    meta = pod.get("metadata") or {}
    raw = (meta.get("annotations") or {}).get(COMPLETION_INDEX_ANNOTATION)
    if raw is None:
        raw = (meta.get("labels") or {}).get(COMPLETION_INDEX_ANNOTATION)
    try:
        return int(raw) if raw is not None else None
    except (TypeError, ValueError):
        return None


def _int_annotation(pod: Mapping[str, Any], key: str) -> int:
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(key)
    try:
        return max(int(raw), 0) if raw is not None else 0
    except (TypeError, ValueError):
        return 0


def _is_pod_failed(pod: Mapping[str, Any], only_failed: bool) -> bool:
    """Upstream `isPodFailed`: Failed, or — unless only failed pods are replaced — deleted
    before it succeeded (orphans never get the chance to reach Failed)."""
    phase = _phase(pod)
    if phase == "Failed":
        return True
    if only_failed:
        return False
    return _deleting(pod) and phase != "Succeeded"


def _restart_count(pod: Mapping[str, Any]) -> int:
    status = pod.get("status") or {}
    total = 0
    for key in ("initContainerStatuses", "containerStatuses"):
        for cs in status.get(key) or ():
            total += int(cs.get("restartCount") or 0)
    return total


def _past_backoff_limit_on_failure(
    spec: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]
) -> bool:
    """With restartPolicy OnFailure the kubelet restarts containers in place; their restarts
    count against backoffLimit."""
    template = (spec.get("template") or {}).get("spec") or {}
    if template.get("restartPolicy") != "OnFailure":
        return False
    restarts = sum(_restart_count(p) for p in pods if _phase(p) in ("Pending", "Running"))
    limit = _spec_int(spec, "backoffLimit", 6)
    return restarts > 0 if limit == 0 else restarts >= limit


def _active_pod_rank(pod: Mapping[str, Any]) -> tuple[Any, ...]:
    """controller.ActivePods ordering: the pods earliest in their life sort first, so they
    are the ones removed when there are too many."""
    spec = pod.get("spec") or {}
    phase_rank = {"Pending": 0, "Unknown": 1, "Running": 2}.get(_phase(pod), 1)
    return (
        1 if spec.get("nodeName") else 0,
        phase_rank,
        1 if pod_ready(pod) else 0,
        -_restart_count(pod),
        -_created(pod),  # newer pods first
    )


def _created(obj: Mapping[str, Any]) -> float:
    stamp = (obj.get("metadata") or {}).get("creationTimestamp")
    try:
        return parse_rfc3339(stamp) if stamp else 0.0
    except ValueError:
        return 0.0


def _truncate_prefix(prefix: str) -> str:
    return (
        prefix if len(prefix) <= MAX_GENERATED_NAME_PREFIX else prefix[:MAX_GENERATED_NAME_PREFIX]
    )


def _indexed_generate_name(job_name: str, index: int) -> str:
    """`podGenerateNameWithIndex`: `<job>-<index>-`, trimming the job name, never the index."""
    suffix = f"-{index}-"
    prefix = job_name + suffix
    if len(prefix) > MAX_GENERATED_NAME_PREFIX:
        prefix = prefix[: MAX_GENERATED_NAME_PREFIX - len(suffix)] + suffix
    return prefix


def _with_index_env(container: Mapping[str, Any]) -> dict[str, Any]:
    env = list(container.get("env") or [])
    if any(e.get("name") == COMPLETION_INDEX_ENV for e in env):
        return dict(container)
    env.append(
        {
            "name": COMPLETION_INDEX_ENV,
            "valueFrom": {
                "fieldRef": {
                    "apiVersion": "v1",
                    "fieldPath": f"metadata.labels['{COMPLETION_INDEX_ANNOTATION}']",
                }
            },
        }
    )
    return {**container, "env": env}


def _spec_int(spec: Mapping[str, Any], key: str, default: int) -> int:
    """An int32 field of a spec with its API default (backoffLimit 6, parallelism 1, ...)."""
    value = spec.get(key)
    try:
        return int(value) if value is not None else default
    except (TypeError, ValueError):
        return default


def _backoff_delay(failures: int) -> float:
    if failures <= 0:
        return 0.0
    return float(
        min(DEFAULT_POD_FAILURE_BACKOFF * 2.0 ** min(failures - 1, 32), MAX_POD_FAILURE_BACKOFF)
    )


def _omit_zero(status: dict[str, Any], key: str, value: int) -> None:
    """Go's `omitempty` on int32 counters: a zero counter is absent from the JSON."""
    if value:
        status[key] = value
    else:
        status.pop(key, None)


# ---------------------------------------------------------------------------------------------
# The controller


JobKey = tuple[str, str, str]  # ("job", namespace, name) or ("orphan", namespace, pod name)


@dataclass
class _Backoff:
    """Upstream's podBackoffStore record: failures since the last success, and when."""

    failures: int = 0
    last_failure: float = 0.0


@dataclass
class _Finish:
    interim: str  # FailureTarget | SuccessCriteriaMet
    final: str  # Failed | Complete
    reason: str
    message: str

    @property
    def failed(self) -> bool:
        return self.final == "Failed"


@dataclass
class _Run:
    """Level `jobs`: the simulated pods of one Job, one timeline per completion slot.

    A slot is a completion index (a pod of an Indexed Job, or one of the `completions`
    pods of a NonIndexed one). At most `parallelism` slots run at once; each ends at its
    own program's duration, then succeeds, fails (and is retried after the pod back-off)
    or restarts in place (`restartPolicy: OnFailure`).
    """

    uid: str
    start_at: float  # loop time the first simulated pods may start
    running: dict[int, float] = field(default_factory=dict)  # slot -> loop time it ends
    retry_at: dict[int, float] = field(default_factory=dict)  # slot -> earliest restart
    succeeded: set[int] = field(default_factory=set)
    failed_slots: set[int] = field(default_factory=set)  # backoffLimitPerIndex
    slot_failures: dict[int, int] = field(default_factory=dict)
    failed: int = 0
    restarts: int = 0
    failures_since_success: int = 0
    programs: dict[int, Program] = field(default_factory=dict)


class JobController:
    """Reconciles batch/v1 Jobs: with pods at level `pods`, by status alone at level `jobs`."""

    def __init__(
        self,
        core: ApiCore,
        level: str = "pods",
        time_scale: float = 1.0,
        rng: random.Random | None = None,
    ) -> None:
        if level not in ("pods", "jobs"):
            raise ValueError(f"JobController level must be 'pods' or 'jobs', not {level!r}")
        self.core = core
        self.level = level
        self.time_scale = max(float(time_scale), 0.0)
        self.rng = rng or random.Random(0)
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
        self._backoff: dict[str, _Backoff] = {}
        # Per Job uid and completion index: (failures, ignored failures, last failure time).
        self._index_failures: dict[str, dict[int, tuple[int, int, float]]] = {}
        # Precise start times (status.startTime has whole seconds only), per Job uid.
        self._started: dict[str, float] = {}
        self._runs: dict[tuple[str, str], _Run] = {}
        self.syncs = 0  # for tests and benchmarks: how much work the controller did
        self.status_writes = 0

    # ------------------------------------------------------------------ lifecycle

    def _req(self) -> Request:
        return Request(user=dict(SYSTEM_USER), field_manager="job-controller")

    def start(self) -> None:
        self._queue = WorkQueue()
        self.core.store.listeners.append(self._on_event)
        for job in self.core.list(self._jobs_rt, None).items:
            meta = job["metadata"]
            self._queue.add(("job", meta.get("namespace", ""), meta["name"]))
        if self.level == "pods":
            for pod in self.core.list(self._pods_rt, None).items:
                if _has_tracking_finalizer(pod) and _job_ref(pod) is None:
                    meta = pod["metadata"]
                    self._queue.add(("orphan", meta.get("namespace", ""), meta["name"]))
        self._tasks = [
            asyncio.create_task(self._worker(), name=f"sim-job-controller-{i}")
            for i in range(WORKERS)
        ]

    async def stop(self) -> None:
        with contextlib.suppress(ValueError):
            self.core.store.listeners.remove(self._on_event)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
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
        ref = _job_ref(pod)
        if ref is not None:
            queue.add(("job", ns, str(ref.get("name"))))
        if ev.old is not None:
            old_ref = _job_ref(ev.old)
            if old_ref is not None and (ref is None or old_ref.get("uid") != ref.get("uid")):
                queue.add(("job", ns, str(old_ref.get("name"))))
        uid = meta.get("uid", "")
        if ev.type == DELETED:
            if _has_tracking_finalizer(pod) and uid not in self._counted and ref is not None:
                # Removed (force-removed) before the controller accounted for it: count it
                # at the Job's next sync, if the Job is still there to count it.
                job = self.core.store.get(_JOBS, (ns, str(ref.get("name"))))
                if job is not None and job["metadata"].get("uid") == ref.get("uid"):
                    self._lost.setdefault(str(ref.get("uid")), []).append(pod)
            self._counted.discard(uid)
            return
        if _has_tracking_finalizer(pod):
            job = None if ref is None else self.core.store.get(_JOBS, (ns, str(ref.get("name"))))
            if job is None or job["metadata"].get("uid") != (ref or {}).get("uid"):
                queue.add(("orphan", ns, meta["name"]))

    def _job_gone(self, job: Mapping[str, Any]) -> None:
        meta = job["metadata"]
        uid = meta.get("uid", "")
        self._lost.pop(uid, None)
        self._backoff.pop(uid, None)
        self._index_failures.pop(uid, None)
        self._started.pop(uid, None)
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
                elif self.level == "pods":
                    retry = await self._sync_job(ns, name)
                else:
                    await self._sync_job_status_only(ns, name)
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

    def _requeue_after(self, ns: str, name: str, delay: float) -> None:
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
            ref = _job_ref(pod)
            if ref is not None and ref.get("uid") == job_uid:
                out.append(pod)
        out.sort(key=lambda p: p["metadata"]["name"])
        return out

    async def _write_status(self, job: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        meta = job["metadata"]
        self.status_writes += 1
        return await self.core.update(
            self._jobs_rt,
            meta.get("namespace", ""),
            meta["name"],
            {**job, "status": status},
            self._req(),
            subresource="status",
        )

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

    async def _delete_pod(self, pod: Mapping[str, Any]) -> bool:
        meta = pod["metadata"]
        try:
            await self.core.delete(
                self._pods_rt,
                meta.get("namespace", ""),
                meta["name"],
                {"propagationPolicy": "Background", "preconditions": {"uid": meta.get("uid")}},
                self._req(),
            )
            return True
        except ApiError as err:
            if err.code == 404:
                return True
            if err.code == 409:  # a pod of the same name but another uid: ours is gone
                return True
            log.warning("deleting pod failed", pod=meta["name"], error=str(err))
            return False

    async def _delete_pods(
        self, pods: Sequence[Mapping[str, Any]], *, keep_finalizer: bool
    ) -> tuple[int, int]:
        """Delete pods concurrently; returns (deleted, of which were ready). Without
        `keep_finalizer` the finalizer goes first, so the pods are never counted (what
        upstream does for suspension and scale-down)."""

        async def one(pod: Mapping[str, Any]) -> bool:
            if not keep_finalizer and not await self._remove_finalizer(pod):
                return False
            return await self._delete_pod(pod)

        results = await asyncio.gather(*(one(p) for p in pods))
        deleted = sum(1 for ok in results if ok)
        ready = sum(1 for ok, p in zip(results, pods, strict=True) if ok and pod_ready(p))
        return deleted, ready

    # ------------------------------------------------------------------ orphans

    async def _sync_orphan(self, ns: str, name: str) -> None:
        """A pod with the tracking finalizer whose Job is gone, finished or not its
        controller any more: nobody else will remove the finalizer."""
        pod = self.core.store.get(_PODS, (ns, name))
        if pod is None or not _has_tracking_finalizer(pod):
            return
        ref = _job_ref(pod)
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
            leftovers = [p for p in pods if _has_tracking_finalizer(p)]
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

    def _program_for_slot(self, job: Mapping[str, Any], run: _Run, slot: int) -> Program:
        program = run.programs.get(slot)
        if program is not None:
            return program
        spec = job.get("spec") or {}
        template = spec.get("template") or {}
        containers = (template.get("spec") or {}).get("containers") or [{}]
        container: Mapping[str, Any] = containers[0]
        pod: dict[str, Any] | None = None
        if spec.get("completionMode") == "Indexed":
            # What the pod of this index would see: JOB_COMPLETION_INDEX and its hostname.
            container = _with_index_env(container)
            tmeta = template.get("metadata") or {}
            name = job["metadata"]["name"]
            pod = {
                "metadata": {
                    "name": f"{name}-{slot}",
                    "namespace": job["metadata"].get("namespace", ""),
                    "labels": {
                        **(tmeta.get("labels") or {}),
                        COMPLETION_INDEX_ANNOTATION: str(slot),
                    },
                    "annotations": {
                        **(tmeta.get("annotations") or {}),
                        COMPLETION_INDEX_ANNOTATION: str(slot),
                    },
                },
                "spec": {"hostname": f"{name}-{slot}"},
            }
        program = program_for(container, pod=pod)
        if len(run.programs) < 4096:
            run.programs[slot] = program
        return program

    def _start_delay(self) -> float:
        return JOBS_LEVEL_START_DELAY * self.time_scale * self.rng.uniform(0.8, 1.2)

    async def _sync_job_status_only(self, ns: str, name: str) -> None:
        """Level `jobs`: advance one Job's simulated pods to now and write what changed.

        The status is written only when something a client could see happens: pods start
        or end, the Job is suspended or resumed, or it finishes.
        """
        key = (ns, name)
        job = self.core.store.get(_JOBS, key)
        if job is None:
            self._runs.pop(key, None)
            return
        self.syncs += 1
        meta = job["metadata"]
        uid = meta["uid"]
        spec = job.get("spec") or {}
        if (
            spec.get("managedBy") not in (None, JOB_CONTROLLER_NAME)
            or is_job_finished(job)
            or meta.get("deletionTimestamp")
        ):
            self._runs.pop(key, None)
            return
        loop = asyncio.get_running_loop()
        now_loop, now_wall = loop.time(), time.time()
        now = now_rfc3339(now_wall)
        old_status: dict[str, Any] = job.get("status") or {}
        status: dict[str, Any] = dict(old_status)
        conds: list[dict[str, Any]] = [dict(c) for c in status.get("conditions") or []]
        run = self._runs.get(key)
        if run is not None and run.uid != uid:
            run = None
        if spec.get("suspend"):
            self._runs.pop(key, None)
            ensure_condition(conds, "Suspended", "True", "JobSuspended", "Job suspended", now)
            status.pop("active", None)
            status.update(ready=0, terminating=0, conditions=conds)
            status.setdefault("uncountedTerminatedPods", {})
            if status != old_status:
                await self._write_status(job, status)
            return
        changed = False
        if ensure_condition(conds, "Suspended", "False", "JobResumed", "Job resumed", now):
            status["startTime"] = now  # resumed Jobs restart their deadline clock
            self._started[uid] = now_wall
            changed = True
        indexed = spec.get("completionMode") == "Indexed"
        slots = _spec_int(spec, "completions", _spec_int(spec, "parallelism", 1))
        if run is None:
            run = _Run(uid, now_loop + self._start_delay())
            if indexed:
                run.succeeded = parse_indexes(status.get("completedIndexes"), slots)
                run.failed_slots = parse_indexes(status.get("failedIndexes"), slots)
            else:
                run.succeeded = set(range(min(int(status.get("succeeded") or 0), slots)))
            run.failed = int(status.get("failed") or 0)
            self._runs[key] = run
        sim = _SlotSim(self, job, run, slots, now_loop)
        finish = sim.advance()
        if (
            finish is None
            and (left := self._deadline_left(spec, status, uid, now_wall)) is not None
        ):
            if left <= 0:
                run.failed += len(run.running)
                run.running.clear()
                finish = _Finish(
                    "FailureTarget",
                    "Failed",
                    "DeadlineExceeded",
                    "Job was active longer than specified deadline",
                )
            else:
                self._requeue_after(ns, name, left)
        if finish is None and now_loop >= run.start_at:
            if sim.fill() and not status.get("startTime"):
                status["startTime"] = now
                self._started[uid] = now_wall
                deadline = spec.get("activeDeadlineSeconds")
                if deadline is not None:
                    self._requeue_after(ns, name, float(deadline) * self.time_scale)
            finish = sim.completion()
        changed = changed or sim.changed or finish is not None
        if finish is not None:
            self._runs.pop(key, None)
        else:
            wake = sim.next_wake()
            if not math.isinf(wake):
                self._requeue_after(ns, name, wake - now_loop)
        if not changed:
            return
        active = len(run.running) if finish is None else 0
        _omit_zero(status, "active", active)
        status["ready"] = active
        status["terminating"] = 0
        status.setdefault("uncountedTerminatedPods", {})
        _omit_zero(status, "failed", run.failed)
        _omit_zero(status, "succeeded", len(run.succeeded))
        if indexed and run.succeeded:
            status["completedIndexes"] = format_indexes(run.succeeded)
        if indexed and spec.get("backoffLimitPerIndex") is not None:
            status["failedIndexes"] = format_indexes(run.failed_slots)
        if finish is not None:
            ensure_condition(conds, finish.interim, "True", finish.reason, finish.message, now)
            ensure_condition(conds, finish.final, "True", finish.reason, finish.message, now)
            if finish.final == "Complete":
                status["completionTime"] = now
        if conds:
            status["conditions"] = conds
        if status != old_status:
            await self._write_status(job, status)

    def _deadline_left(
        self, spec: Mapping[str, Any], status: Mapping[str, Any], uid: str, now_wall: float
    ) -> float | None:
        deadline = spec.get("activeDeadlineSeconds")
        if deadline is None or not status.get("startTime"):
            return None
        started = self._started.get(uid) or parse_rfc3339(status["startTime"])
        return started + float(deadline) * self.time_scale - now_wall


class _SlotSim:
    """Level `jobs`: one step of a `_Run` — slots that ended, limits, and new starts."""

    def __init__(
        self, ctl: JobController, job: Mapping[str, Any], run: _Run, slots: int, now: float
    ) -> None:
        self.ctl = ctl
        self.job = job
        self.run = run
        self.slots = slots
        self.now = now
        self.spec: Mapping[str, Any] = job.get("spec") or {}
        template = (self.spec.get("template") or {}).get("spec") or {}
        self.on_failure = template.get("restartPolicy") == "OnFailure"
        containers = template.get("containers") or [{}]
        self.container_name = str(containers[0].get("name") or "")
        self.indexed = self.spec.get("completionMode") == "Indexed"
        self.per_index = self.indexed and self.spec.get("backoffLimitPerIndex") is not None
        self.changed = False

    def _duration(self, slot: int) -> float:
        program = self.ctl._program_for_slot(self.job, self.run, slot)
        return program.duration * self.ctl.time_scale

    def advance(self) -> _Finish | None:
        """Settle every slot that has ended by now, in the order they ended."""
        run = self.run
        spec = self.spec
        ended = sorted((end, slot) for slot, end in run.running.items() if end <= self.now)
        backoff_limit = _spec_int(spec, "backoffLimit", 6)
        policy = spec.get("podFailurePolicy")
        ns = self.job["metadata"].get("namespace", "")
        name = self.job["metadata"]["name"]
        scale = self.ctl.time_scale
        for end, slot in ended:
            self.changed = True
            del run.running[slot]
            code = self.ctl._program_for_slot(self.job, run, slot).exit_code
            if code == 0:
                run.succeeded.add(slot)
                run.failures_since_success = 0
                continue
            fake_pod = {
                "metadata": {"namespace": ns, "name": f"{name}-{slot}"},
                "status": {
                    "containerStatuses": [
                        {
                            "name": self.container_name,
                            "state": {"terminated": {"exitCode": code}},
                        }
                    ]
                },
            }
            message, counts, action = match_pod_failure_policy(policy, fake_pod)
            if message is not None:
                run.failed += 1 + len(run.running)
                run.running.clear()
                return _Finish("FailureTarget", "Failed", "PodFailurePolicy", message)
            if self.on_failure and counts:
                run.restarts += 1
                if (backoff_limit == 0 and run.restarts > 0) or (
                    backoff_limit > 0 and run.restarts >= backoff_limit
                ):
                    run.failed += 1 + len(run.running)
                    run.running.clear()
                    return self._backoff_exceeded()
                # restarted in place after the kubelet's crash-loop back-off
                wait = CRASH_LOOP_BACKOFF * 2.0 ** min(run.restarts - 1, 5)
                run.running[slot] = end + min(wait, 300.0) * scale + self._duration(slot)
                continue
            if counts:
                run.failed += 1
                run.failures_since_success += 1
                failures = run.slot_failures.get(slot, 0) + 1
                run.slot_failures[slot] = failures
                if self.per_index and (
                    action == "FailIndex" or failures > _spec_int(spec, "backoffLimitPerIndex", 0)
                ):
                    run.failed_slots.add(slot)
                if run.failed > backoff_limit:
                    run.failed += len(run.running)
                    run.running.clear()
                    return self._backoff_exceeded()
            n = run.slot_failures.get(slot, 0) if self.per_index else run.failures_since_success
            run.retry_at[slot] = end + _backoff_delay(n) * scale
        if self.per_index:
            max_failed = spec.get("maxFailedIndexes")
            if max_failed is not None and len(run.failed_slots) > int(max_failed):
                run.failed += len(run.running)
                run.running.clear()
                return _Finish(
                    "FailureTarget",
                    "Failed",
                    "MaxFailedIndexesExceeded",
                    "Job has exceeded the specified maximal number of failed indexes",
                )
            if run.failed_slots and len(run.failed_slots) + len(run.succeeded) >= self.slots:
                return _Finish("FailureTarget", "Failed", "FailedIndexes", "Job has failed indexes")
        if self.indexed:
            met = match_success_policy(spec.get("successPolicy"), self.slots, run.succeeded)
            if met is not None:
                run.running.clear()
                return _Finish("SuccessCriteriaMet", "Complete", "SuccessPolicy", met)
        return None

    def _backoff_exceeded(self) -> _Finish:
        return _Finish(
            "FailureTarget",
            "Failed",
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit",
        )

    def fill(self) -> bool:
        """Start slots up to `parallelism`; True if any started."""
        run = self.run
        parallelism = _spec_int(self.spec, "parallelism", 1)
        if self.spec.get("completions") is None and run.succeeded:
            return False  # a work queue drains: once one pod succeeded, none start
        started = False
        for slot in range(self.slots):
            if len(run.running) >= parallelism:
                break
            if slot in run.running or slot in run.succeeded or slot in run.failed_slots:
                continue
            if run.retry_at.get(slot, 0.0) > self.now:
                continue
            run.retry_at.pop(slot, None)
            run.running[slot] = self.now + self._duration(slot)
            started = True
        self.changed = self.changed or started
        return started

    def completion(self) -> _Finish | None:
        run = self.run
        if self.spec.get("completions") is None:
            done = bool(run.succeeded) and not run.running
        else:
            done = len(run.succeeded) >= self.slots and not run.running
        if not done:
            return None
        return _Finish(
            "SuccessCriteriaMet",
            "Complete",
            "CompletionsReached",
            "Reached expected number of succeeded pods",
        )

    def next_wake(self) -> float:
        run = self.run
        times = [math.inf, *run.running.values()]
        if run.start_at > self.now:
            times.append(run.start_at)
        times.extend(t for s, t in run.retry_at.items() if s not in run.failed_slots)
        return min(times)


class _JobSync:
    """One `syncJob` of one Job at level `pods`: computed from the store, then written.

    Mirrors upstream's order: count newly finished pods, decide whether the Job fails or
    succeeds, else manage its pods (create / delete / suspend), write the status, and only
    then remove the tracking finalizers of the pods the status now accounts for.
    """

    def __init__(self, ctl: JobController, job: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        self.ctl = ctl
        self.job = job
        self.pods = pods
        meta = job["metadata"]
        self.ns: str = meta.get("namespace", "")
        self.name: str = meta["name"]
        self.uid: str = meta["uid"]
        self.spec: dict[str, Any] = job.get("spec") or {}
        self.old_status: dict[str, Any] = job.get("status") or {}
        spec = self.spec
        self.indexed = spec.get("completionMode") == "Indexed"
        completions = spec.get("completions")
        self.completions: int | None = int(completions) if completions is not None else None
        self.parallelism = _spec_int(spec, "parallelism", 1)
        self.backoff_limit = _spec_int(spec, "backoffLimit", 6)
        self.suspended = bool(spec.get("suspend"))
        self.deleting = bool(meta.get("deletionTimestamp"))
        self.pfp: dict[str, Any] | None = spec.get("podFailurePolicy")
        self.only_failed = spec.get("podReplacementPolicy") == "Failed" or self.pfp is not None
        self.per_index = self.indexed and spec.get("backoffLimitPerIndex") is not None
        self.now_wall = time.time()
        self.now = now_rfc3339(self.now_wall)
        self.retry = False

    def _valid_index(self, pod: Mapping[str, Any]) -> bool:
        if not self.indexed:
            return True
        ix = completion_index(pod)
        return ix is not None and self.completions is not None and 0 <= ix < self.completions

    async def run(self) -> None:
        ctl = self.ctl
        pods = self.pods
        status: dict[str, Any] = dict(self.old_status)
        conds: list[dict[str, Any]] = [dict(c) for c in status.get("conditions") or []]
        active_pods = [p for p in pods if not _terminal(p) and not _deleting(p)]
        terminating = sum(1 for p in pods if _deleting(p) and not _terminal(p))
        ready = sum(1 for p in active_pods if pod_ready(p))
        lost = ctl._lost.pop(self.uid, [])
        try:
            await self._run(status, conds, active_pods, terminating, ready, lost)
        except BaseException:
            if lost:  # not counted yet: keep them for the retry
                ctl._lost.setdefault(self.uid, []).extend(lost)
            raise

    async def _run(
        self,
        status: dict[str, Any],
        conds: list[dict[str, Any]],
        active_pods: list[dict[str, Any]],
        terminating: int,
        ready: int,
        lost: list[dict[str, Any]],
    ) -> None:
        ctl = self.ctl
        spec = self.spec
        counted_uids = ctl._counted
        # Finished pods the status does not account for yet: still carrying the finalizer.
        tracked = [
            p
            for p in self.pods
            if _has_tracking_finalizer(p) and p["metadata"].get("uid") not in counted_uids
        ]
        if self.indexed:
            tracked.sort(key=lambda p: (completion_index(p) or 0, p["metadata"]["name"]))
        new_succeeded = [
            p for p in (*tracked, *lost) if _phase(p) == "Succeeded" and self._valid_index(p)
        ]
        new_failed = [
            p for p in tracked if _is_pod_failed(p, self.only_failed) and self._valid_index(p)
        ]
        new_failed += [p for p in lost if _phase(p) != "Succeeded" and self._valid_index(p)]
        non_ignored_failed = sum(1 for p in new_failed if match_pod_failure_policy(self.pfp, p)[1])
        succeeded = int(status.get("succeeded") or 0) + len(new_succeeded)
        failed = int(status.get("failed") or 0) + non_ignored_failed

        if not status.get("startTime") and not self.suspended:
            status["startTime"] = self.now
            ctl._started[self.uid] = self.now_wall

        finish = self._existing_finish(conds)
        if finish is None and self.pfp is not None:
            for p in self.pods:
                if _is_pod_failed(p, self.only_failed):
                    message = match_pod_failure_policy(self.pfp, p)[0]
                    if message is not None:
                        finish = _Finish("FailureTarget", "Failed", "PodFailurePolicy", message)
                        break
        if finish is None:
            if failed > self.backoff_limit or _past_backoff_limit_on_failure(spec, self.pods):
                finish = _Finish(
                    "FailureTarget",
                    "Failed",
                    "BackoffLimitExceeded",
                    "Job has reached the specified backoff limit",
                )
            elif (left := self._deadline_left(status)) is not None:
                if left <= 0:
                    finish = _Finish(
                        "FailureTarget",
                        "Failed",
                        "DeadlineExceeded",
                        "Job was active longer than specified deadline",
                    )
                else:
                    ctl._requeue_after(self.ns, self.name, left)

        succeeded_indexes: set[int] = set()
        failed_indexes: set[int] = set()
        if self.indexed:
            assert self.completions is not None
            succeeded_indexes = parse_indexes(status.get("completedIndexes"), self.completions)
            for p in self.pods:
                if _phase(p) == "Succeeded" and _has_tracking_finalizer(p) and self._valid_index(p):
                    ix = completion_index(p)
                    assert ix is not None
                    succeeded_indexes.add(ix)
            for p in lost:
                if _phase(p) == "Succeeded" and self._valid_index(p):
                    ix = completion_index(p)
                    assert ix is not None
                    succeeded_indexes.add(ix)
            succeeded = len(succeeded_indexes)
            if self.per_index:
                failed_indexes = self._failed_indexes(status, succeeded_indexes, lost)
                if finish is None:
                    max_failed = spec.get("maxFailedIndexes")
                    if max_failed is not None and len(failed_indexes) > int(max_failed):
                        finish = _Finish(
                            "FailureTarget",
                            "Failed",
                            "MaxFailedIndexesExceeded",
                            "Job has exceeded the specified maximal number of failed indexes",
                        )
                    elif (
                        failed_indexes
                        and len(failed_indexes) + len(succeeded_indexes) >= self.completions
                    ):
                        finish = _Finish(
                            "FailureTarget", "Failed", "FailedIndexes", "Job has failed indexes"
                        )
            if finish is None:
                met = match_success_policy(
                    spec.get("successPolicy"), self.completions, succeeded_indexes
                )
                if met is not None:
                    finish = _Finish("SuccessCriteriaMet", "Complete", "SuccessPolicy", met)

        active = len(active_pods)
        blocked = False
        if finish is not None:
            deleted, deleted_ready = await ctl._delete_pods(active_pods, keep_finalizer=True)
            blocked = deleted != active
            active -= deleted
            terminating += deleted
            ready -= deleted_ready
        else:
            manage_called = False
            if not self.deleting:
                active, terminating, ready = await self._manage(
                    active_pods, terminating, ready, succeeded, succeeded_indexes, failed_indexes
                )
                manage_called = True
            if self.completions is None:
                complete = succeeded > 0 and active == 0
            else:
                complete = succeeded >= self.completions and active == 0
            if complete:
                finish = _Finish(
                    "SuccessCriteriaMet",
                    "Complete",
                    "CompletionsReached",
                    "Reached expected number of succeeded pods",
                )
            elif manage_called:
                if self.suspended:
                    ensure_condition(
                        conds, "Suspended", "True", "JobSuspended", "Job suspended", self.now
                    )
                elif ensure_condition(
                    conds, "Suspended", "False", "JobResumed", "Job resumed", self.now
                ):
                    # Resumed Jobs restart their activeDeadlineSeconds clock.
                    status["startTime"] = self.now
                    ctl._started[self.uid] = self.now_wall

        # Decide which pods the status now accounts for, and whose finalizer can go.
        to_release: list[dict[str, Any]] = []
        newly_failed = len(
            [
                p
                for p in lost
                if _phase(p) != "Succeeded"
                and self._valid_index(p)
                and match_pod_failure_policy(self.pfp, p)[1]
            ]
        )
        newly_succeeded = len(
            [p for p in lost if _phase(p) == "Succeeded" and self._valid_index(p)]
        )
        for p in tracked:
            considered_failed = _is_pod_failed(p, self.only_failed)
            if not (
                self.deleting or finish is not None or _phase(p) == "Succeeded" or considered_failed
            ):
                continue
            to_release.append(p)
            if _phase(p) == "Succeeded":
                if not self.indexed:
                    newly_succeeded += 1
            elif considered_failed or (finish is not None and finish.failed):
                if self._valid_index(p) and match_pod_failure_policy(self.pfp, p)[1]:
                    newly_failed += 1
        # Counted by an earlier sync whose finalizer removal failed: release, don't recount.
        to_release += [
            p
            for p in self.pods
            if _has_tracking_finalizer(p) and p["metadata"].get("uid") in counted_uids
        ]
        if not self.indexed:
            succeeded = int(self.old_status.get("succeeded") or 0) + newly_succeeded
        failed = int(self.old_status.get("failed") or 0) + newly_failed

        _omit_zero(status, "active", active)
        status["ready"] = max(ready, 0)
        status["terminating"] = max(terminating, 0)
        _omit_zero(status, "succeeded", succeeded)
        _omit_zero(status, "failed", failed)
        status.setdefault("uncountedTerminatedPods", {})
        if self.indexed:
            if succeeded_indexes:
                status["completedIndexes"] = format_indexes(succeeded_indexes)
            else:
                status.pop("completedIndexes", None)
            if self.per_index:
                status["failedIndexes"] = format_indexes(failed_indexes)
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

        if status != self.old_status:
            await ctl._write_status(self.job, status)
        # The status accounts for these pods now; only then may they go.
        release_uids = [p["metadata"].get("uid", "") for p in to_release]
        ctl._counted.update(release_uids)
        self._record_backoff(new_succeeded, new_failed)
        if to_release:
            results = await asyncio.gather(*(ctl._remove_finalizer(p) for p in to_release))
            for uid, ok in zip(release_uids, results, strict=True):
                if ok:
                    ctl._counted.discard(uid)
            if not all(results):
                ctl._requeue_after(self.ns, self.name, 0.05)

    def _existing_finish(self, conds: Sequence[Mapping[str, Any]]) -> _Finish | None:
        for ctype, final in (("SuccessCriteriaMet", "Complete"), ("FailureTarget", "Failed")):
            c = find_condition(conds, ctype)
            if c is not None and c.get("status") == "True":
                return _Finish(
                    ctype, final, str(c.get("reason") or ""), str(c.get("message") or "")
                )
        return None

    def _deadline_left(self, status: Mapping[str, Any]) -> float | None:
        """Seconds until activeDeadlineSeconds (scaled) runs out; None if not applicable."""
        deadline = self.spec.get("activeDeadlineSeconds")
        if deadline is None or self.suspended or not status.get("startTime"):
            return None
        started = self.ctl._started.get(self.uid)
        if started is None:
            started = parse_rfc3339(status["startTime"])
        return started + float(deadline) * self.ctl.time_scale - self.now_wall

    def _record_backoff(
        self, new_succeeded: Sequence[Mapping[str, Any]], new_failed: Sequence[Mapping[str, Any]]
    ) -> None:
        if not new_succeeded and not new_failed:
            return
        record = self.ctl._backoff.setdefault(self.uid, _Backoff())
        if new_succeeded:
            record.failures = 0
        if new_failed:
            record.failures += len(new_failed)
            record.last_failure = self.now_wall

    def _failed_indexes(
        self, status: Mapping[str, Any], succeeded: set[int], lost: Sequence[Mapping[str, Any]]
    ) -> set[int]:
        """backoffLimitPerIndex: an index fails once its failures exceed the limit, or a
        FailIndex rule matches. Failure counts travel on the replacement pod's annotation."""
        assert self.completions is not None
        limit = int(self.spec.get("backoffLimitPerIndex") or 0)
        out = parse_indexes(status.get("failedIndexes"), self.completions)
        memory = self.ctl._index_failures.setdefault(self.uid, {})
        for p in (*self.pods, *lost):
            if not self._valid_index(p) or not _is_pod_failed(p, self.only_failed):
                continue
            ix = completion_index(p)
            assert ix is not None
            if ix in succeeded:
                continue
            _msg, counts, action = match_pod_failure_policy(self.pfp, p)
            fails = _int_annotation(p, INDEX_FAILURE_COUNT_ANNOTATION) + (1 if counts else 0)
            ignored = _int_annotation(p, INDEX_IGNORED_FAILURE_COUNT_ANNOTATION) + (
                0 if counts else 1
            )
            seen = memory.get(ix, (0, 0, 0.0))
            if (fails, ignored) > seen[:2]:
                memory[ix] = (max(fails, seen[0]), max(ignored, seen[1]), self.now_wall)
            if action == "FailIndex" or fails > limit:
                out.add(ix)
        return out

    async def _manage(
        self,
        active_pods: list[dict[str, Any]],
        terminating: int,
        ready: int,
        succeeded: int,
        succeeded_indexes: set[int],
        failed_indexes: set[int],
    ) -> tuple[int, int, int]:
        """`manageJob`: bring the number of active pods to what the Job wants."""
        ctl = self.ctl
        active = len(active_pods)
        if self.suspended:
            deleted, deleted_ready = await ctl._delete_pods(active_pods, keep_finalizer=False)
            return active - deleted, terminating + deleted, ready - deleted_ready
        if self.completions is None:
            want = active if succeeded > 0 else self.parallelism
        else:
            want = max(min(self.completions - succeeded, self.parallelism), 0)
        to_remove = self._pods_for_removal(active_pods, max(active - want, 0))
        if to_remove:
            to_remove = to_remove[:MAX_POD_CREATE_DELETE_PER_SYNC]
            deleted, deleted_ready = await ctl._delete_pods(to_remove, keep_finalizer=False)
            return active - deleted, terminating + deleted, ready - deleted_ready
        blocking_terminating = terminating if self.only_failed else 0
        diff = want - blocking_terminating - active
        if diff <= 0:
            return active, terminating, ready
        if not self.per_index:
            wait = self._backoff_left()
            if wait > 0:
                ctl._requeue_after(self.ns, self.name, wait)
                return active, terminating, ready
        diff = min(diff, MAX_POD_CREATE_DELETE_PER_SYNC)
        indexes: list[int | None]
        if self.indexed:
            found = self._pending_indexes(diff, active_pods, succeeded_indexes, failed_indexes)
            if self.per_index:
                found, wait = self._indexes_past_backoff(found)
                if not found and wait > 0:
                    ctl._requeue_after(self.ns, self.name, wait)
                    return active, terminating, ready
            indexes = list(found)
        else:
            indexes = [None] * diff
        created = await self._create_pods(indexes)
        return active + created, terminating, ready

    def _backoff_left(self) -> float:
        record = self.ctl._backoff.get(self.uid)
        if record is None or record.failures <= 0:
            return 0.0
        wait = _backoff_delay(record.failures) * self.ctl.time_scale
        return wait - (self.now_wall - record.last_failure)

    def _indexes_past_backoff(self, indexes: list[int]) -> tuple[list[int], float]:
        memory = self.ctl._index_failures.get(self.uid, {})
        ready: list[int] = []
        wait = math.inf
        for ix in indexes:
            fails, _ignored, last = memory.get(ix, (0, 0, 0.0))
            left = _backoff_delay(fails) * self.ctl.time_scale - (self.now_wall - last)
            if fails <= 0 or left <= 0:
                ready.append(ix)
            else:
                wait = min(wait, left)
        return ready, (0.0 if ready else wait)

    def _pods_for_removal(
        self, active_pods: list[dict[str, Any]], at_least: int
    ) -> list[dict[str, Any]]:
        """Surplus pods, and for Indexed Jobs pods with a duplicate or invalid index; the
        least advanced (unscheduled, pending, not ready, newest) go first."""
        remove: list[dict[str, Any]] = []
        keep = active_pods
        if self.indexed:
            keep = []
            by_index: dict[int, list[dict[str, Any]]] = {}
            for p in active_pods:
                if not self._valid_index(p):
                    remove.append(p)
                    continue
                ix = completion_index(p)
                assert ix is not None
                by_index.setdefault(ix, []).append(p)
            for group in by_index.values():
                group.sort(key=_active_pod_rank)
                remove.extend(group[:-1])
                keep.append(group[-1])
        if len(remove) < at_least:
            keep = sorted(keep, key=_active_pod_rank)
            remove.extend(keep[: at_least - len(remove)])
        return remove

    def _pending_indexes(
        self,
        count: int,
        active_pods: Sequence[Mapping[str, Any]],
        succeeded: set[int],
        failed: set[int],
    ) -> list[int]:
        assert self.completions is not None
        taken = set(succeeded) | failed
        for p in active_pods:
            ix = completion_index(p)
            if ix is not None:
                taken.add(ix)
        if self.only_failed:
            for p in self.pods:
                if _deleting(p) and not _terminal(p):
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

    def _pod_for(self, index: int | None) -> dict[str, Any]:
        """A pod from the template, as `CreatePodsWithGenerateName` would build it."""
        job = self.job
        template = self.spec.get("template") or {}
        tmeta = template.get("metadata") or {}
        labels = dict(tmeta.get("labels") or {})
        annotations = dict(tmeta.get("annotations") or {})
        pod_spec = dict(template.get("spec") or {})
        finalizers = list(tmeta.get("finalizers") or [])
        if JOB_TRACKING_FINALIZER not in finalizers:
            finalizers.append(JOB_TRACKING_FINALIZER)
        if index is None:
            generate_name = _truncate_prefix(f"{self.name}-")
        else:
            annotations[COMPLETION_INDEX_ANNOTATION] = str(index)
            labels[COMPLETION_INDEX_ANNOTATION] = str(index)
            pod_spec["hostname"] = f"{self.name}-{index}"
            pod_spec["containers"] = [_with_index_env(c) for c in pod_spec.get("containers") or []]
            if pod_spec.get("initContainers"):
                pod_spec["initContainers"] = [
                    _with_index_env(c) for c in pod_spec["initContainers"]
                ]
            generate_name = _indexed_generate_name(self.name, index)
            if self.per_index:
                fails, ignored, _last = self.ctl._index_failures.get(self.uid, {}).get(
                    index, (0, 0, 0.0)
                )
                annotations[INDEX_FAILURE_COUNT_ANNOTATION] = str(fails)
                if ignored:
                    annotations[INDEX_IGNORED_FAILURE_COUNT_ANNOTATION] = str(ignored)
        meta: dict[str, Any] = {
            "generateName": generate_name,
            "namespace": self.ns,
            "labels": labels,
            "finalizers": finalizers,
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": self.name,
                    "uid": job["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        }
        if annotations:
            meta["annotations"] = annotations
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec}

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
            await self.ctl.core.create(
                self.ctl._pods_rt, self.ns, self._pod_for(index), self.ctl._req()
            )
            return True
        except ApiError as err:
            if err.code == 403 and "being terminated" in err.message:
                return False  # the namespace is going away: nothing to do
            log.info(
                "pod creation failed",
                job=f"{self.ns}/{self.name}",
                index=index,
                code=err.code,
                error=err.message,
            )
            return err
