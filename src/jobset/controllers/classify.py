"""Sort a JobSet's child Jobs into previous / active / succeeded / failed, and count them.

A Job belongs to the current run when its `restart-attempt` label equals
`status.restarts` (and, with the RestartJob feature, its `job-restart-attempt` label equals
the per-Job target in `replicatedJobsStatus[].jobRestarts`). Older Jobs are *previous*: they
are deleted and recreated under the current attempt - which is how a restart works without
ever renaming a Job. Current Jobs are active, succeeded or failed by their `Complete` /
`Failed` condition being True.

A Job whose `job-index` is not below its ReplicatedJob's `replicas` is *previous* too: it is
what an elastic scale-down (this project's ElasticReplicas gate) leaves behind, so it is
deleted, never counted and never recreated. Without that gate `replicas` cannot change and
no such Job exists.

One deliberate difference from upstream: a child Job whose attempt labels cannot be parsed
makes upstream return an error on every pass (the JobSet is stuck, retried with backoff).
Here it is classified as previous - deleted and recreated with correct labels - so a
hand-edited label cannot wedge a JobSet.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jobset.api.types import replicas
from jobset.controllers.jobfacts import FAILED, JobFacts, facts_of

__all__ = [
    "Children",
    "all_jobs_ready",
    "classify",
    "failed_condition",
    "finished_type",
    "fit_to_replicas",
    "job_restarts",
    "job_restarts_count_towards_max",
    "replicated_job_statuses",
    "rjob_name_of",
    "statuses_equal",
]

Job = dict[str, Any]


@dataclass
class Children:
    """The child Jobs of one JobSet, by state (each Job is in exactly one list)."""

    active: list[Job] = field(default_factory=list)
    succeeded: list[Job] = field(default_factory=list)
    failed: list[Job] = field(default_factory=list)
    previous: list[Job] = field(default_factory=list)

    def all(self) -> Iterable[Job]:
        yield from self.active
        yield from self.succeeded
        yield from self.failed
        yield from self.previous

    def names(self) -> set[str]:
        return {facts_of(j).name for j in self.all()}


def rjob_name_of(job: Mapping[str, Any]) -> str:
    """The ReplicatedJob a child Job was stamped from ("" when the label is missing)."""
    return facts_of(job).rjob or ""


def finished_type(job: Mapping[str, Any]) -> str | None:
    """ "Complete" or "Failed" when that Job condition is True, else None (still active)."""
    return facts_of(job).finished


def failed_condition(job: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The Job's `Failed=True` condition, if any."""
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") == FAILED and cond.get("status") == "True":
            return cond  # type: ignore[no-any-return]
    return None


def _rjob_replicas(js: Mapping[str, Any], rjob_name: str) -> int:
    for rjob in (js.get("spec") or {}).get("replicatedJobs") or []:
        if rjob.get("name") == rjob_name:
            return replicas(rjob)
    return 0


def _per_job_counts(
    js: Mapping[str, Any], status: Mapping[str, Any], rjob_name: str, key: str
) -> list[int]:
    count = _rjob_replicas(js, rjob_name)
    for rjs in status.get("replicatedJobsStatus") or []:
        if rjs.get("name") == rjob_name:
            values = rjs.get(key) or []
            if values:
                return fit_to_replicas([int(v) for v in values], count)
            break
    return [0] * count


def fit_to_replicas(values: list[int], count: int) -> list[int]:
    """A per-Job list cut or padded with zeros to `count` entries: after an elastic change
    of replicas the new indexes start at zero restarts and removed ones are dropped."""
    if len(values) >= count:
        return values[:count]
    return values + [0] * (count - len(values))


def job_restarts(js: Mapping[str, Any], status: Mapping[str, Any], rjob_name: str) -> list[int]:
    """Per-Job restart targets of a ReplicatedJob (zeros when never restarted)."""
    return _per_job_counts(js, status, rjob_name, "jobRestarts")


def job_restarts_count_towards_max(
    js: Mapping[str, Any], status: Mapping[str, Any], rjob_name: str
) -> list[int]:
    """Per-Job restarts that count toward maxRestarts (zeros when none)."""
    return _per_job_counts(js, status, rjob_name, "jobRestartsCountTowardsMax")


def _is_previous(
    js: Mapping[str, Any],
    status: Mapping[str, Any],
    facts: JobFacts,
    restart_job: bool,
    counts: Mapping[str, int],
    restarts: int,
) -> bool:
    attempt = facts.attempt
    if attempt is None:
        return True
    if attempt < restarts:
        return True
    rjob_name, index = facts.rjob, facts.job_index
    if index is not None and rjob_name is not None and index >= counts.get(rjob_name, index + 1):
        return True  # beyond replicas: left by an elastic scale-down
    if not restart_job:
        return False
    if not rjob_name or index is None:
        return True
    if not facts.has_job_attempt:
        # Created before the feature was on: kept, as upstream does for compatibility.
        return False
    per_job = facts.job_attempt
    targets = job_restarts(js, status, rjob_name)
    if per_job is None or index >= len(targets) or index < 0:
        return True
    return per_job < targets[index]


def _name_of_facts(pair: tuple[JobFacts, Job]) -> str:
    return pair[0].name


def classify(js: Mapping[str, Any], jobs: Iterable[Job], *, restart_job: bool = False) -> Children:
    """Bucket the JobSet's child Jobs (already filtered by controller owner UID).

    Jobs are taken in name order so every decision that depends on order (e.g. which of two
    Jobs failing in the same second is "first") is deterministic. Each Job is read through
    its parsed facts (`jobfacts`), once per cached record rather than once per pass.
    """
    status: Mapping[str, Any] = js.get("status") or {}
    counts = {
        str(r.get("name") or ""): replicas(r)
        for r in (js.get("spec") or {}).get("replicatedJobs") or []
    }
    restarts = int(status.get("restarts") or 0)
    out = Children()
    pairs = [(facts_of(job), job) for job in jobs]
    pairs.sort(key=_name_of_facts)
    for facts, job in pairs:
        if _is_previous(js, status, facts, restart_job, counts, restarts):
            out.previous.append(job)
            continue
        kind = facts.finished
        if kind is None:
            out.active.append(job)
        elif kind == FAILED:
            out.failed.append(job)
        else:
            out.succeeded.append(job)
    return out


def replicated_job_statuses(
    js: Mapping[str, Any], children: Children, *, restart_job: bool = False
) -> list[dict[str, Any]]:
    """`status.replicatedJobsStatus`, in spec order, counted as upstream counts it.

    - ready: active Jobs with `status.ready + status.succeeded >= min(parallelism,
      completions)` (all their pods are up or done);
    - active: active Jobs with at least one active pod; suspended: active Jobs with
      `spec.suspend`; succeeded / failed: current Jobs finished that way.
    Previous Jobs are not counted. With RestartJob, the per-Job restart counters of the
    current status are carried over (the failure policy may bump them afterwards).
    """
    counts: dict[str, dict[str, int]] = {}
    order: list[str] = []
    replicas_of: dict[str, int] = {}
    for rjob in (js.get("spec") or {}).get("replicatedJobs") or []:
        name = str(rjob.get("name") or "")
        replicas_of[name] = replicas(rjob)
        if name not in counts:
            order.append(name)
        counts[name] = {"ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0}

    for job in children.active:
        facts = facts_of(job)
        bucket = counts.get(facts.rjob or "")
        if bucket is None:
            continue
        if facts.ready:
            bucket["ready"] += 1
        if facts.active:
            bucket["active"] += 1
        if facts.suspended:
            bucket["suspended"] += 1
    for job in children.succeeded:
        bucket = counts.get(facts_of(job).rjob or "")
        if bucket is not None:
            bucket["succeeded"] += 1
    for job in children.failed:
        bucket = counts.get(facts_of(job).rjob or "")
        if bucket is not None:
            bucket["failed"] += 1

    existing = {
        str(s.get("name")): s for s in (js.get("status") or {}).get("replicatedJobsStatus") or []
    }
    out: list[dict[str, Any]] = []
    for name in order:
        entry: dict[str, Any] = {"name": name, **counts[name]}
        if restart_job and name in existing:
            for key in ("jobRestarts", "jobRestartsCountTowardsMax"):
                values = existing[name].get(key)
                if values:
                    entry[key] = fit_to_replicas([int(v) for v in values], replicas_of[name])
        out.append(entry)
    return out


def _normalized(statuses: Sequence[Mapping[str, Any]] | None) -> list[tuple[Any, ...]]:
    rows = []
    for s in statuses or []:
        rows.append(
            (
                str(s.get("name") or ""),
                int(s.get("ready") or 0),
                int(s.get("succeeded") or 0),
                int(s.get("failed") or 0),
                int(s.get("active") or 0),
                int(s.get("suspended") or 0),
                tuple(int(v) for v in s.get("jobRestarts") or ()),
                tuple(int(v) for v in s.get("jobRestartsCountTowardsMax") or ()),
            )
        )
    return sorted(rows)


def statuses_equal(
    old: Sequence[Mapping[str, Any]] | None, new: Sequence[Mapping[str, Any]] | None
) -> bool:
    """Semantic equality of two replicatedJobsStatus lists: order-free, absent == zero."""
    return _normalized(old) == _normalized(new)


def all_jobs_ready(js: Mapping[str, Any], statuses: Sequence[Mapping[str, Any]]) -> bool:
    """Every Job of the spec is ready or succeeded (upstream's `allJobsReady`)."""
    total = sum(replicas(r) for r in (js.get("spec") or {}).get("replicatedJobs") or [])
    ready = sum(int(s.get("ready") or 0) + int(s.get("succeeded") or 0) for s in statuses)
    return total == ready
