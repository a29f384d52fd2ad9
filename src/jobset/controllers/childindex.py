"""A JobSet's child Jobs classified, counted and indexed as they change (`ChildIndex`).

A pass reads of its Jobs: which are active, succeeded, failed or previous (`classify`),
the counts per ReplicatedJob (`replicated_job_statuses`), the indices that exist (for the
Jobs to create) and the suspended ones (for a resume). Computed from scratch, that is a
walk and a sort of every Job on every pass, and a large JobSet is passed over again for
nearly every event of its Jobs while they start: the controller's CPU grew with Jobs times
events. A `ChildIndex` keeps all of it up to date record by record: `put` / `remove` note a
changed Job, `classify` re-sorts only those (all of them only when what classification
reads of the JobSet changed: its name, `status.restarts`, replicas, the RestartJob gate and
per-Job restart targets), and the lists in name order are built only when read.

The results are those of `classify.classify` over the same Jobs, by construction: both
classify one Job with `classify.bucket_of` and count it with `classify.count_job`, and a
bucket's list is its Jobs sorted by name (stable: Jobs of equal names keep the order they
were put in). `plan()` builds one from its `jobs` when no index is given.

Not thread-safe: the controller changes an index only between passes, and a pass (maybe in
a planning thread) has it to itself (the work queue never hands one JobSet to two workers).
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable, Mapping
from typing import Any, NamedTuple

from jobset.api.types import name_of, replicas
from jobset.controllers.classify import (
    ACTIVE,
    BUCKETS,
    PREVIOUS,
    Tally,
    bucket_of,
    count_job,
    job_restarts,
)
from jobset.controllers.jobfacts import JobFacts, facts_of
from jobset.controllers.jobs import existing_indices

__all__ = ["ChildIndex"]

Job = dict[str, Any]


def _name(job: Job) -> str:
    return facts_of(job).name


class _Params(NamedTuple):
    """What classifying a Job reads of its JobSet, and all of it as one comparable key."""

    prefix: str  # "<jobset name>-"
    restarts: int
    counts: dict[str, int]  # replicas by ReplicatedJob name
    targets: dict[str, list[int]]  # per-Job restart targets (RestartJob) by name
    key: Hashable

    @classmethod
    def of(cls, js: Mapping[str, Any], restart_job: bool) -> _Params:
        status: Mapping[str, Any] = js.get("status") or {}
        spec_rjobs = (js.get("spec") or {}).get("replicatedJobs") or []
        counts = {str(r.get("name") or ""): replicas(r) for r in spec_rjobs}
        targets = {n: job_restarts(js, status, n) for n in counts} if restart_job else {}
        prefix = f"{name_of(js)}-"
        restarts = int(status.get("restarts") or 0)
        frozen_targets = tuple((n, tuple(t)) for n, t in targets.items())
        key = (prefix, restarts, tuple(counts.items()), restart_job, frozen_targets)
        return cls(prefix, restarts, counts, targets, key)


class ChildIndex:
    """The children of one JobSet by key (the Job cache's "namespace/name"); see above."""

    def __init__(self) -> None:
        self._records: dict[str, Job] = {}
        self._pending: set[str] = set()  # keys put or removed since the last classify
        self._touched: set[str] = set()  # keys whose Job changed in the cache (`touch`)
        self._key: Hashable = None  # what classification read of the JobSet, last time
        self._prefix = ""
        self._restart_job = False
        self._counts: dict[str, int] = {}
        self._targets: dict[str, list[int]] = {}
        # key -> (bucket, facts, job, (ReplicatedJob by name, index) or None)
        self._entries: dict[str, tuple[str, JobFacts, Job, tuple[str, int] | None]] = {}
        self._buckets: dict[str, dict[str, Job]] = {b: {} for b in BUCKETS}
        self._sorted: dict[str, list[Job]] = {}
        self._tally: Tally = {}
        self._suspended: dict[str, dict[str, Job]] = {}
        self._indices: dict[str, dict[int, int]] = {}  # rjob -> index -> Jobs with it
        self._restarts = 0
        self._rjob_of_head: dict[str, str | None] = {}  # a name's head -> its ReplicatedJob

    @classmethod
    def of(cls, jobs: Iterable[Job]) -> ChildIndex:
        index = cls()
        for n, job in enumerate(jobs):
            index.put(str(n), job)
        return index

    # ------------------------------------------------------------------ changes

    def put(self, key: str, job: Job) -> None:
        self._records[key] = job
        self._pending.add(key)

    def remove(self, key: str) -> None:
        if self._records.pop(key, None) is not None or key in self._entries:
            self._pending.add(key)

    def touch(self, key: str) -> None:
        """The cache's Job of this key changed: its owner puts or removes it next pass."""
        self._touched.add(key)

    def touched(self) -> set[str]:
        """The keys touched since the last call, forgotten."""
        found, self._touched = self._touched, set()
        return found

    def keys(self) -> list[str]:
        return list(self._records)

    def __len__(self) -> int:
        return len(self._records)

    @property
    def pending(self) -> int:
        """Jobs changed since the last `classify`."""
        return len(self._pending)

    def work(self, js: Mapping[str, Any], *, restart_job: bool = False) -> int:
        """How many Jobs `classify` would classify again: all of them when what it reads
        of `js` changed, else those changed since."""
        return len(self._records) if _Params.of(js, restart_job).key != self._key else self.pending

    def classify(self, js: Mapping[str, Any], *, restart_job: bool = False) -> None:
        """Bring the classification up to date for `js` (defaulted) as it is now."""
        params = _Params.of(js, restart_job)
        if params.key != self._key:
            self._key, self._prefix, self._restart_job = params.key, params.prefix, restart_job
            self._counts, self._targets = params.counts, params.targets
            self._restarts = params.restarts
            self._rebuild()
        else:
            for k in self._pending:
                self._reclassify(k)
        self._pending = set()

    def _rebuild(self) -> None:
        """Every Job classified anew: `_reclassify` of each into empty tables, in one loop
        (the first pass over a JobSet, and one after a restart, do this for all its Jobs)."""
        self._rjob_of_head = {}
        entries: dict[str, tuple[str, JobFacts, Job, tuple[str, int] | None]] = {}
        buckets: dict[str, dict[str, Job]] = {b: {} for b in BUCKETS}
        tally: Tally = {}
        suspended: dict[str, dict[str, Job]] = {}
        indices: dict[str, dict[int, int]] = {}
        self._buckets, self._tally, self._suspended, self._indices = (
            buckets,
            tally,
            suspended,
            indices,
        )
        self._sorted.clear()
        restart_job, counts, restarts = self._restart_job, self._counts, self._restarts
        targets = self._targets
        for key, job in self._records.items():
            facts = facts_of(job)
            bucket = bucket_of(facts, restart_job, counts, restarts, targets)
            rjob_index = self._rjob_index(facts)
            entries[key] = (bucket, facts, job, rjob_index)
            buckets[bucket][key] = job
            if bucket != PREVIOUS:
                count_job(tally, facts, bucket, 1)
                if bucket == ACTIVE and facts.suspended:
                    suspended.setdefault(facts.rjob or "", {})[key] = job
            if rjob_index is not None:
                held = indices.setdefault(rjob_index[0], {})
                held[rjob_index[1]] = held.get(rjob_index[1], 0) + 1
        self._entries = entries

    def _reclassify(self, key: str) -> None:
        old = self._entries.pop(key, None)
        if old is not None:
            self._account(key, *old, sign=-1)
        job = self._records.get(key)
        if job is None:
            return
        facts = facts_of(job)
        bucket = bucket_of(facts, self._restart_job, self._counts, self._restarts, self._targets)
        entry = (bucket, facts, job, self._rjob_index(facts))
        self._entries[key] = entry
        self._account(key, *entry, sign=1)

    def _rjob_index(self, facts: JobFacts) -> tuple[str, int] | None:
        """(ReplicatedJob, index) as the Job's name gives them (`jobs.indices_of`)."""
        if facts.name_index is None:
            return None
        head = facts.name_head
        try:
            rjob = self._rjob_of_head[head]
        except KeyError:
            found = head[len(self._prefix) :] if head.startswith(self._prefix) else None
            rjob = self._rjob_of_head[head] = found
        return None if rjob is None else (rjob, facts.name_index)

    def _account(
        self,
        key: str,
        bucket: str,
        facts: JobFacts,
        job: Job,
        rjob_index: tuple[str, int] | None,
        *,
        sign: int,
    ) -> None:
        members = self._buckets[bucket]
        if sign > 0:
            members[key] = job
        else:
            del members[key]
        self._sorted.pop(bucket, None)
        if bucket != PREVIOUS:
            count_job(self._tally, facts, bucket, sign)
        if bucket == ACTIVE and facts.suspended:
            rjob = facts.rjob or ""
            self._sorted.pop(f"suspended/{rjob}", None)
            suspended = self._suspended.setdefault(rjob, {})
            if sign > 0:
                suspended[key] = job
            else:
                del suspended[key]
                if not suspended:
                    del self._suspended[rjob]
        if rjob_index is not None:
            rjob, index = rjob_index
            held = self._indices.setdefault(rjob, {})
            n = held.get(index, 0) + sign
            if n:
                held[index] = n
            else:
                del held[index]
                if not held:
                    del self._indices[rjob]

    # ------------------------------------------------------------------ reads

    def _list(self, bucket: str) -> list[Job]:
        found = self._sorted.get(bucket)
        if found is None:
            found = self._sorted[bucket] = sorted(self._buckets[bucket].values(), key=_name)
        return found

    @property
    def active(self) -> list[Job]:
        return self._list(ACTIVE)

    @property
    def succeeded(self) -> list[Job]:
        return self._list("succeeded")

    @property
    def failed(self) -> list[Job]:
        return self._list("failed")

    @property
    def previous(self) -> list[Job]:
        return self._list(PREVIOUS)

    def all(self) -> Iterable[Job]:
        for bucket in BUCKETS:
            yield from self._list(bucket)

    def names(self) -> set[str]:
        return {entry[1].name for entry in self._entries.values()}

    def current_count(self) -> int:
        """Active, succeeded and failed Jobs (previous ones excluded)."""
        return sum(len(self._buckets[b]) for b in BUCKETS if b != PREVIOUS)

    def tally(self) -> Tally:
        """Counts by the ReplicatedJob label (`classify.count_job`)."""
        return self._tally

    def suspended_active(self) -> dict[str, list[Job]]:
        """Active Jobs with `spec.suspend`, by the ReplicatedJob label, in name order."""
        out: dict[str, list[Job]] = {}
        for rjob, members in self._suspended.items():
            cached = self._sorted.get(f"suspended/{rjob}")
            if cached is None:
                cached = sorted(members.values(), key=_name)
                self._sorted[f"suspended/{rjob}"] = cached
            out[rjob] = cached
        return out

    def existing_indices(self, also: Iterable[str] = ()) -> dict[str, Collection[int]]:
        """The indices of every Job (previous included) by ReplicatedJob, as `jobs.indices_of`
        gives them, plus those of the names `also` (Jobs created but not seen yet)."""
        extra = existing_indices(self._prefix[:-1], set(also))
        if not extra:
            return {rjob: held.keys() for rjob, held in self._indices.items()}
        out: dict[str, Collection[int]] = {r: set(held) for r, held in self._indices.items()}
        for rjob, indices in extra.items():
            found = out.get(rjob)
            out[rjob] = indices if found is None else {*found, *indices}
        return out
