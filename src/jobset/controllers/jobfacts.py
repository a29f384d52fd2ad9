"""What a reconcile pass reads of each child Job, parsed once per cached Job record.

Every pass over a JobSet sorts, classifies and counts all of its Jobs, and finds which
indices exist. Parsing each Job on every pass (read the labels, parse three integer labels,
walk the conditions, read the counts, split the name) made a pass over a large JobSet long,
and the pass repeats every time the JobSet is requeued while its Jobs are
created. Planned in a worker thread (as such a JobSet is), that work holds the interpreter
lock, and every socket call of the event loop meanwhile waits up to a switch interval for
it: the other tenants' admissions and reconciles slowed for as long as the plan ran
(docs/reliability.md, "Adversarial JobSets next to normal ones").

A cached Job never changes: an update replaces the whole record (`jobcache.job_record`
builds a new one per event, and cached objects are shared read-only). So the parse is done
once per record and kept on it: `CachedJob` is the record's dict with one slot, which
`jobcache.job_record` fills as it builds the record - on the event loop, a few microseconds
per Job event, instead of in the planning thread on every pass. `facts_of` reads it; a
plain dict (a Job read from anywhere else) is parsed each time, with the same result.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, NamedTuple

from jobset.api import constants as c

__all__ = ["CachedJob", "JobFacts", "facts_of", "job_facts", "split_job_name"]

COMPLETE = "Complete"
FAILED = "Failed"


class JobFacts(NamedTuple):
    """One Job as classify, the counts and the creation planning read it."""

    name: str
    # The ReplicatedJob label (None when missing) and the integer labels (None when missing
    # or not an integer).
    rjob: str | None
    job_index: int | None  # the job-index label
    attempt: int | None
    job_attempt: int | None
    has_job_attempt: bool  # the job-restart-attempt label is present (maybe unparsable)
    finished: str | None  # "Complete" / "Failed" when that condition is True
    ready: bool  # status.ready + status.succeeded >= min(parallelism, completions)
    active: bool  # status.active > 0
    suspended: bool  # spec.suspend
    # The name as `split_job_name` splits it.
    name_head: str
    name_index: int | None


class CachedJob(dict[str, Any]):
    """A cached Job record (a dict shaped like the Job) that keeps its parsed facts.

    Only for records nobody modifies after creation: the facts are never recomputed.
    """

    __slots__ = ("facts",)
    facts: JobFacts


def split_job_name(name: str) -> tuple[str, int | None]:
    """A Job name split at its last "-": (`<jobset>-<rjob>`, index) when the part after the
    dash is an index as `job_name` writes it (ASCII digits, no leading zero), so that each
    name gives at most one (ReplicatedJob, index) and distinct names distinct pairs;
    (head, None) otherwise, and ("", None) for a name without a dash."""
    head, sep, tail = name.rpartition("-")
    if sep and tail.isascii() and tail.isdigit() and (len(tail) == 1 or tail[0] != "0"):
        return head, int(tail)
    return head, None


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _int(value: Any) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _pods_needed(job: Mapping[str, Any]) -> int:
    """The pods a Job needs up or done to count as ready: min(parallelism, completions),
    parallelism defaulting to 1."""
    spec = _map(job.get("spec"))
    parallelism = _int(spec.get("parallelism"))
    pods = 1 if parallelism is None else parallelism
    completions = _int(spec.get("completions"))
    if completions is not None and completions < pods:
        pods = completions
    return pods


def _finished(status: Mapping[str, Any]) -> str | None:
    conditions = status.get("conditions")
    for cond in conditions if isinstance(conditions, list) else ():
        if not isinstance(cond, Mapping):
            continue
        if cond.get("type") in (COMPLETE, FAILED) and cond.get("status") == "True":
            return str(cond["type"])
    return None


def job_facts(job: Mapping[str, Any]) -> JobFacts:
    """Parse what a pass reads of `job` (a Job or a cached record of one). Never raises on
    a field of the wrong type (the Job cache's transform calls it on every event): such a
    field reads as absent."""
    meta = _map(job.get("metadata"))
    labels = _map(meta.get("labels"))
    status = _map(job.get("status"))
    name = str(meta.get("name"))
    head, name_index = split_job_name(name)
    job_index = _int(labels.get(c.JOB_INDEX_KEY))
    if name_index is not None and name_index == job_index:
        name_index = job_index  # one int object for both: kept for every cached Job
    rjob = labels.get(c.REPLICATED_JOB_NAME_KEY)
    return JobFacts(
        name=name,
        rjob=None if rjob is None else str(rjob),
        job_index=job_index,
        attempt=_int(labels.get(c.RESTART_ATTEMPT_KEY)),
        job_attempt=_int(labels.get(c.JOB_RESTART_ATTEMPT_KEY)),
        has_job_attempt=c.JOB_RESTART_ATTEMPT_KEY in labels,
        finished=_finished(status),
        ready=(_int(status.get("succeeded")) or 0) + (_int(status.get("ready")) or 0)
        >= _pods_needed(job),
        active=(_int(status.get("active")) or 0) > 0,
        suspended=bool(_map(job.get("spec")).get("suspend")),
        # `<jobset>-<rjob>`, the same for every Job of a ReplicatedJob: one shared copy.
        name_head=sys.intern(head),
        name_index=name_index,
    )


def facts_of(job: Mapping[str, Any]) -> JobFacts:
    """The Job's facts: those kept on a `CachedJob` (parsed and kept on first use if it has
    none yet), parsed each time for any other mapping."""
    facts: JobFacts | None = getattr(job, "facts", None)
    if facts is None:
        facts = job_facts(job)
        if isinstance(job, CachedJob):
            job.facts = facts
    return facts
