"""Level `jobs` of the simulated Job controller: Jobs advance by status alone, no pods.

Each completion slot (index) of a Job runs its pod template's program for its duration (times
`--time-scale`), at most `parallelism` at a time, and succeeds, fails and is retried after the
pod back-off, or restarts in place, with the limits and conditions of level `pods`
(backoffLimit, backoffLimitPerIndex, podFailurePolicy on exit codes, activeDeadlineSeconds,
successPolicy, suspend). `StatusOnly` is this mode as a strategy `JobController` is
constructed with: it owns the runs, their start times and its random source, and reaches the
controller only through `JobStatusPort` (requeue a Job, write its status). `StatusOnlySync` is
one sync of one Job: it advances the Job's `Run` to now (`SlotSim`) and writes the status
when something a client could see changed.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from kubesim.clock import now_rfc3339, parse_rfc3339
from kubesim.controllers.jobpolicy import (
    COMPLETION_INDEX_ANNOTATION,
    Finish,
    backoff_delay,
    ensure_condition,
    format_indexes,
    match_pod_failure_policy,
    match_success_policy,
    omit_zero,
    parse_indexes,
    spec_int,
    with_index_env,
)
from kubesim.programs.programs import Program, program_for

__all__ = ["JobStatusPort", "Run", "SlotSim", "StatusOnly", "StatusOnlySync"]

# How long a simulated pod takes to start at level `jobs`, before --time-scale.
JOBS_LEVEL_START_DELAY: Final = 1.0
# The kubelet's first container restart back-off, for restartPolicy OnFailure at level `jobs`.
CRASH_LOOP_BACKOFF: Final = 10.0


@dataclass
class Run:
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


def program_for_slot(job: Mapping[str, Any], run: Run, slot: int) -> Program:
    """The program the pod of `slot` would run (cached on the run, up to 4096 slots)."""
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
        container = with_index_env(container)
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


class JobStatusPort(Protocol):
    """What the status-only mode asks of the Job controller running it."""

    def requeue_after(self, ns: str, name: str, delay: float) -> None:
        """Sync the Job `ns/name` again after `delay` seconds."""

    async def write_status(self, job: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        """Write `status` as the Job's status subresource; the written Job."""


class StatusOnly:
    """Level `jobs` as the Job controller's sync strategy: its state is the simulated run of
    each Job, keyed by namespace and name, and the precise start times by Job uid."""

    def __init__(self, time_scale: float = 1.0, rng: random.Random | None = None) -> None:
        self.time_scale = max(float(time_scale), 0.0)
        self.rng = rng or random.Random(0)
        self.runs: dict[tuple[str, str], Run] = {}
        # Precise start times (status.startTime has whole seconds only), per Job uid.
        self.started: dict[str, float] = {}

    async def sync(self, port: JobStatusPort, job: dict[str, Any]) -> None:
        """Advance `job`'s simulated pods to now and write what changed."""
        await StatusOnlySync(self, port, job).run()

    def forget(self, key: tuple[str, str]) -> None:
        """The Job `key` is gone or finished: drop its run."""
        self.runs.pop(key, None)

    def job_gone(self, uid: str) -> None:
        """The Job with `uid` was deleted: drop its start time."""
        self.started.pop(uid, None)


class StatusOnlySync:
    """Level `jobs`: advance one Job's simulated pods to now and write what changed.

    The status is written only when something a client could see happens: pods start
    or end, the Job is suspended or resumed, or it finishes.
    """

    def __init__(self, mode: StatusOnly, port: JobStatusPort, job: dict[str, Any]) -> None:
        self.mode = mode
        self.port = port
        self.job = job
        meta = job["metadata"]
        self.ns, self.name = meta.get("namespace", ""), meta["name"]
        self.key = (self.ns, self.name)
        self.uid: str = meta["uid"]
        self.spec: Mapping[str, Any] = job.get("spec") or {}
        self.indexed = self.spec.get("completionMode") == "Indexed"
        self.now_loop, self.now_wall = asyncio.get_running_loop().time(), time.time()
        self.now = now_rfc3339(self.now_wall)
        self.old_status: dict[str, Any] = job.get("status") or {}
        self.status: dict[str, Any] = dict(self.old_status)
        self.conds: list[dict[str, Any]] = [dict(c) for c in self.status.get("conditions") or []]

    async def run(self) -> None:
        if self.spec.get("suspend"):
            await self._suspend()
            return
        changed = self._resume()
        slots = spec_int(self.spec, "completions", spec_int(self.spec, "parallelism", 1))
        run = self._run(slots)
        sim = SlotSim(self.mode.time_scale, self.job, run, slots, self.now_loop)
        finish = sim.advance()
        if finish is None:
            finish = self._check_deadline(run)
        if finish is None and self.now_loop >= run.start_at:
            self._start(sim)
            finish = sim.completion()
        changed = changed or sim.changed or finish is not None
        self._schedule(sim, finish)
        if changed:
            await self._write(run, finish)

    async def _suspend(self) -> None:
        status = self.status
        self.mode.runs.pop(self.key, None)
        ensure_condition(self.conds, "Suspended", "True", "JobSuspended", "Job suspended", self.now)
        status.pop("active", None)
        status.update(ready=0, terminating=0, conditions=self.conds)
        status.setdefault("uncountedTerminatedPods", {})
        if status != self.old_status:
            await self.port.write_status(self.job, status)

    def _resume(self) -> bool:
        """True when the Job was just resumed (its deadline clock restarts)."""
        if not ensure_condition(
            self.conds, "Suspended", "False", "JobResumed", "Job resumed", self.now
        ):
            return False
        self.status["startTime"] = self.now
        self.mode.started[self.uid] = self.now_wall
        return True

    def _run(self, slots: int) -> Run:
        """The Job's run, or a new one from the counts in its status."""
        run = self.mode.runs.get(self.key)
        if run is not None and run.uid == self.uid:
            return run
        status = self.status
        start_delay = (
            JOBS_LEVEL_START_DELAY * self.mode.time_scale * self.mode.rng.uniform(0.8, 1.2)
        )
        run = Run(self.uid, self.now_loop + start_delay)
        if self.indexed:
            run.succeeded = parse_indexes(status.get("completedIndexes"), slots)
            run.failed_slots = parse_indexes(status.get("failedIndexes"), slots)
        else:
            run.succeeded = set(range(min(int(status.get("succeeded") or 0), slots)))
        run.failed = int(status.get("failed") or 0)
        self.mode.runs[self.key] = run
        return run

    def _check_deadline(self, run: Run) -> Finish | None:
        """`activeDeadlineSeconds`: fail the Job once past it, else wake up when it is."""
        left = self._deadline_left()
        if left is None:
            return None
        if left > 0:
            self.port.requeue_after(self.ns, self.name, left)
            return None
        run.failed += len(run.running)
        run.running.clear()
        return Finish(
            "FailureTarget",
            "Failed",
            "DeadlineExceeded",
            "Job was active longer than specified deadline",
        )

    def _deadline_left(self) -> float | None:
        deadline = self.spec.get("activeDeadlineSeconds")
        if deadline is None or not self.status.get("startTime"):
            return None
        started = self.mode.started.get(self.uid) or parse_rfc3339(self.status["startTime"])
        return started + float(deadline) * self.mode.time_scale - self.now_wall

    def _start(self, sim: SlotSim) -> None:
        """Start slots; the first start sets startTime and arms the deadline."""
        if sim.fill() and not self.status.get("startTime"):
            self.status["startTime"] = self.now
            self.mode.started[self.uid] = self.now_wall
            deadline = self.spec.get("activeDeadlineSeconds")
            if deadline is not None:
                self.port.requeue_after(self.ns, self.name, float(deadline) * self.mode.time_scale)

    def _schedule(self, sim: SlotSim, finish: Finish | None) -> None:
        """Forget a finished run, or come back when its next slot ends or may start."""
        if finish is not None:
            self.mode.runs.pop(self.key, None)
            return
        wake = sim.next_wake()
        if not math.isinf(wake):
            self.port.requeue_after(self.ns, self.name, wake - self.now_loop)

    async def _write(self, run: Run, finish: Finish | None) -> None:
        status, conds, now = self.status, self.conds, self.now
        active = len(run.running) if finish is None else 0
        omit_zero(status, "active", active)
        status["ready"] = active
        status["terminating"] = 0
        status.setdefault("uncountedTerminatedPods", {})
        omit_zero(status, "failed", run.failed)
        omit_zero(status, "succeeded", len(run.succeeded))
        if self.indexed and run.succeeded:
            status["completedIndexes"] = format_indexes(run.succeeded)
        if self.indexed and self.spec.get("backoffLimitPerIndex") is not None:
            status["failedIndexes"] = format_indexes(run.failed_slots)
        if finish is not None:
            ensure_condition(conds, finish.interim, "True", finish.reason, finish.message, now)
            ensure_condition(conds, finish.final, "True", finish.reason, finish.message, now)
            if finish.final == "Complete":
                status["completionTime"] = now
        if conds:
            status["conditions"] = conds
        if status != self.old_status:
            await self.port.write_status(self.job, status)


class SlotSim:
    """Level `jobs`: one step of a `Run` — slots that ended, limits, and new starts."""

    def __init__(
        self, time_scale: float, job: Mapping[str, Any], run: Run, slots: int, now: float
    ) -> None:
        self.time_scale = time_scale
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
        return program_for_slot(self.job, self.run, slot).duration * self.time_scale

    def advance(self) -> Finish | None:
        """Settle every slot that has ended by now, in the order they ended."""
        run = self.run
        spec = self.spec
        ended = sorted((end, slot) for slot, end in run.running.items() if end <= self.now)
        backoff_limit = spec_int(spec, "backoffLimit", 6)
        policy = spec.get("podFailurePolicy")
        ns = self.job["metadata"].get("namespace", "")
        name = self.job["metadata"]["name"]
        scale = self.time_scale
        for end, slot in ended:
            self.changed = True
            del run.running[slot]
            code = program_for_slot(self.job, run, slot).exit_code
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
                return Finish("FailureTarget", "Failed", "PodFailurePolicy", message)
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
                    action == "FailIndex" or failures > spec_int(spec, "backoffLimitPerIndex", 0)
                ):
                    run.failed_slots.add(slot)
                if run.failed > backoff_limit:
                    run.failed += len(run.running)
                    run.running.clear()
                    return self._backoff_exceeded()
            n = run.slot_failures.get(slot, 0) if self.per_index else run.failures_since_success
            run.retry_at[slot] = end + backoff_delay(n) * scale
        if self.per_index:
            max_failed = spec.get("maxFailedIndexes")
            if max_failed is not None and len(run.failed_slots) > int(max_failed):
                run.failed += len(run.running)
                run.running.clear()
                return Finish(
                    "FailureTarget",
                    "Failed",
                    "MaxFailedIndexesExceeded",
                    "Job has exceeded the specified maximal number of failed indexes",
                )
            if run.failed_slots and len(run.failed_slots) + len(run.succeeded) >= self.slots:
                return Finish("FailureTarget", "Failed", "FailedIndexes", "Job has failed indexes")
        if self.indexed:
            met = match_success_policy(spec.get("successPolicy"), self.slots, run.succeeded)
            if met is not None:
                run.running.clear()
                return Finish("SuccessCriteriaMet", "Complete", "SuccessPolicy", met)
        return None

    def _backoff_exceeded(self) -> Finish:
        return Finish(
            "FailureTarget",
            "Failed",
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit",
        )

    def fill(self) -> bool:
        """Start slots up to `parallelism`; True if any started."""
        run = self.run
        parallelism = spec_int(self.spec, "parallelism", 1)
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

    def completion(self) -> Finish | None:
        run = self.run
        if self.spec.get("completions") is None:
            done = bool(run.succeeded) and not run.running
        else:
            done = len(run.succeeded) >= self.slots and not run.running
        if not done:
            return None
        return Finish(
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
