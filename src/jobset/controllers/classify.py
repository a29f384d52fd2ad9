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
from typing import Any, Final, Protocol

from jobset.api.types import replicas
from jobset.controllers.jobfacts import FAILED, JobFacts, facts_of

__all__ = [
    "ACTIVE",
    "BUCKETS",
    "PREVIOUS",
    "ChildLists",
    "Children",
    "Tally",
    "all_jobs_ready",
    "bucket_of",
    "classify",
    "count_job",
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


ACTIVE: Final = "active"
SUCCEEDED: Final = "succeeded"
FAILED_BUCKET: Final = "failed"
PREVIOUS: Final = "previous"
BUCKETS: Final = (ACTIVE, SUCCEEDED, FAILED_BUCKET, PREVIOUS)

# Counts by the ReplicatedJob label: [ready, succeeded, failed, active, suspended], where
# ready, active and suspended count active Jobs only (`count_job`).
Tally = dict[str, list[int]]
_READY, _SUCCEEDED, _FAILED, _ACTIVE, _SUSPENDED = range(5)


class ChildLists(Protocol):
    """The child Jobs of one JobSet by state, each list in name order: `Children`, or the
    incrementally kept `childindex.ChildIndex`."""

    @property
    def active(self) -> list[Job]: ...

    @property
    def succeeded(self) -> list[Job]: ...

    @property
    def failed(self) -> list[Job]: ...

    @property
    def previous(self) -> list[Job]: ...

    def all(self) -> Iterable[Job]: ...

    def names(self) -> set[str]: ...

    def current_count(self) -> int: ...

    def tally(self) -> Tally: ...


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

    def current_count(self) -> int:
        """Active, succeeded and failed Jobs (previous ones excluded)."""
        return len(self.active) + len(self.succeeded) + len(self.failed)

    def tally(self) -> Tally:
        """Counts by the ReplicatedJob label (`count_job`)."""
        out: Tally = {}
        for bucket, jobs in ((ACTIVE, self.active), (SUCCEEDED, self.succeeded)):
            for job in jobs:
                count_job(out, facts_of(job), bucket, 1)
        for job in self.failed:
            count_job(out, facts_of(job), FAILED_BUCKET, 1)
        return out


def count_job(tally: Tally, facts: JobFacts, bucket: str, sign: int) -> None:
    """Add (`sign` 1) or take away (-1) one current Job of `bucket` in `tally`."""
    row = tally.get(facts.rjob or "")
    if row is None:
        row = tally[facts.rjob or ""] = [0, 0, 0, 0, 0]
    if bucket == ACTIVE:
        if facts.ready:
            row[_READY] += sign
        if facts.active:
            row[_ACTIVE] += sign
        if facts.suspended:
            row[_SUSPENDED] += sign
    elif bucket == SUCCEEDED:
        row[_SUCCEEDED] += sign
    else:
        row[_FAILED] += sign


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
    facts: JobFacts,
    restart_job: bool,
    counts: Mapping[str, int],
    restarts: int,
    targets: Mapping[str, Sequence[int]],
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
    found = targets.get(rjob_name, ())  # a ReplicatedJob not in the spec has no targets
    if per_job is None or index >= len(found) or index < 0:
        return True
    return per_job < found[index]


def bucket_of(
    facts: JobFacts,
    restart_job: bool,
    counts: Mapping[str, int],
    restarts: int,
    targets: Mapping[str, Sequence[int]],
) -> str:
    """The state of one child Job: `counts` are the replicas by ReplicatedJob name,
    `restarts` the JobSet's, `targets` the per-Job restart targets by ReplicatedJob name
    (`job_restarts`; read only with `restart_job`)."""
    if _is_previous(facts, restart_job, counts, restarts, targets):
        return PREVIOUS
    kind = facts.finished
    if kind is None:
        return ACTIVE
    return FAILED_BUCKET if kind == FAILED else SUCCEEDED


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
    targets = {n: job_restarts(js, status, n) for n in counts} if restart_job else {}
    restarts = int(status.get("restarts") or 0)
    out = Children()
    lists = {ACTIVE: out.active, SUCCEEDED: out.succeeded, FAILED_BUCKET: out.failed}
    lists[PREVIOUS] = out.previous
    pairs = [(facts_of(job), job) for job in jobs]
    pairs.sort(key=_name_of_facts)
    for facts, job in pairs:
        lists[bucket_of(facts, restart_job, counts, restarts, targets)].append(job)
    return out


def replicated_job_statuses(
    js: Mapping[str, Any], children: ChildLists, *, restart_job: bool = False
) -> list[dict[str, Any]]:
    """`status.replicatedJobsStatus`, in spec order, counted as upstream counts it.

    - ready: active Jobs with `status.ready + status.succeeded >= min(parallelism,
      completions)` (all their pods are up or done);
    - active: active Jobs with at least one active pod; suspended: active Jobs with
      `spec.suspend`; succeeded / failed: current Jobs finished that way.
    Previous Jobs are not counted. With RestartJob, the per-Job restart counters of the
    current status are carried over (the failure policy may bump them afterwards).
    """
    tally = children.tally()
    order: list[str] = []
    replicas_of: dict[str, int] = {}
    for rjob in (js.get("spec") or {}).get("replicatedJobs") or []:
        name = str(rjob.get("name") or "")
        if name not in replicas_of:
            order.append(name)
        replicas_of[name] = replicas(rjob)

    existing = {
        str(s.get("name")): s for s in (js.get("status") or {}).get("replicatedJobsStatus") or []
    }
    out: list[dict[str, Any]] = []
    for name in order:
        row = tally.get(name) or (0, 0, 0, 0, 0)
        entry: dict[str, Any] = {
            "name": name,
            "ready": row[_READY],
            "succeeded": row[_SUCCEEDED],
            "failed": row[_FAILED],
            "active": row[_ACTIVE],
            "suspended": row[_SUSPENDED],
        }
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
