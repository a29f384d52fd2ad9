"""A `ChildIndex` kept up to date Job by Job reads as `classify` over the same Jobs: the
lists in name order, the counts, the suspended Jobs and the existing indices - after any
sequence of Jobs put and removed and of JobSet changes (restarts, replicas, RestartJob
targets) that reclassify them all."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from jobset.api import constants as c
from jobset.controllers.childindex import ChildIndex
from jobset.controllers.classify import classify, replicated_job_statuses
from jobset.controllers.jobcache import job_record
from jobset.controllers.jobfacts import facts_of
from jobset.controllers.jobs import indices_of

from .helpers import child, jobset, rjob

_STATES = ("active", "succeeded", "failed")


def _job(js: dict[str, Any], draw: Any, rjob_name: str, index: int) -> dict[str, Any]:
    job = child(
        js,
        rjob_name,
        index,
        state=draw(st.sampled_from(_STATES)),
        ready=draw(st.integers(0, 2)),
        active=draw(st.integers(0, 2)),
        suspend=draw(st.sampled_from((None, True, False))),
        failed_at=draw(st.integers(0, 3)),
        labels={
            c.RESTART_ATTEMPT_KEY: draw(st.sampled_from(("0", "1", "2", "x"))),
            c.JOB_RESTART_ATTEMPT_KEY: draw(st.sampled_from(("0", "1", "y"))),
        },
    )
    if draw(st.booleans()):
        # Names `job_name` does not write: no index, or none of this JobSet's.
        odd = (f"js-{rjob_name}-0{index}", f"js-q{rjob_name}{index}", f"other-{rjob_name}-{index}")
        job["metadata"]["name"] = draw(st.sampled_from(odd))
    return job_record(job) if draw(st.booleans()) else job


def _jobset(restarts: int, replicas: tuple[int, int], targets: list[int]) -> dict[str, Any]:
    status: dict[str, Any] = {"restarts": restarts}
    status["replicatedJobsStatus"] = [{"name": "a", "jobRestarts": targets}]
    return jobset(rjob("a", replicas[0]), rjob("b", replicas[1]), status=status)


def _same(index: ChildIndex, js: dict[str, Any], jobs: list[dict[str, Any]], rj: bool) -> None:
    fresh = classify(js, jobs, restart_job=rj)
    for bucket in ("active", "succeeded", "failed", "previous"):
        assert getattr(index, bucket) == getattr(fresh, bucket), bucket
    assert replicated_job_statuses(js, index, restart_job=rj) == replicated_job_statuses(
        js, fresh, restart_job=rj
    )
    suspended: dict[str, list[dict[str, Any]]] = {}
    for job in fresh.active:
        if facts_of(job).suspended:
            suspended.setdefault(facts_of(job).rjob or "", []).append(job)
    assert index.suspended_active() == suspended
    want = indices_of("js", fresh.all(), {"js-a-7", "js-b-1"})
    got = index.existing_indices({"js-a-7", "js-b-1"})
    assert {k: set(v) for k, v in got.items()} == want
    assert {k: set(v) for k, v in index.existing_indices().items()} == indices_of("js", jobs)
    assert index.current_count() == fresh.current_count()
    assert index.names() == fresh.names()


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_an_index_kept_up_to_date_reads_as_classify(data: st.DataObject) -> None:
    draw = data.draw
    index = ChildIndex()
    held: dict[str, dict[str, Any]] = {}
    restart_job = False
    js = _jobset(0, (3, 2), [0, 0, 0])
    for _ in range(draw(st.integers(1, 12))):
        op = draw(st.sampled_from(("put", "put", "put", "remove", "jobset")))
        if op == "put":
            rjob_name = draw(st.sampled_from(("a", "b")))
            index_of = draw(st.integers(0, 4))
            key = f"default/{rjob_name}-{index_of}"
            held[key] = _job(js, draw, rjob_name, index_of)
            index.put(key, held[key])
        elif op == "remove" and held:
            key = draw(st.sampled_from(sorted(held)))
            del held[key]
            index.remove(key)
        else:
            restart_job = draw(st.booleans())
            replicas = (draw(st.integers(1, 4)), draw(st.integers(1, 3)))
            targets = draw(st.lists(st.integers(0, 2), max_size=4))
            js = _jobset(draw(st.integers(0, 2)), replicas, targets)
        assert index.work(js, restart_job=restart_job) in (index.pending, len(held))
        index.classify(js, restart_job=restart_job)
        assert index.pending == 0 and index.work(js, restart_job=restart_job) == 0
        _same(index, js, list(held.values()), restart_job)


def test_only_the_jobs_changed_are_classified_again() -> None:
    js = jobset(rjob("w", 50))
    jobs = {f"default/js-w-{i}": job_record(child(js, "w", i)) for i in range(50)}
    index = ChildIndex()
    for key, job in jobs.items():
        index.put(key, job)
    assert index.work(js) == 50
    index.classify(js)
    index.put("default/js-w-3", job_record(child(js, "w", 3, state="failed")))
    index.remove("default/js-w-4")
    assert index.work(js) == 2
    # A new restart reclassifies all: every Job is now previous.
    restarted = {**js, "status": {"restarts": 1}}
    assert index.work(restarted) == 49
    index.classify(restarted)
    assert len(index.previous) == 49 and not index.active and not index.failed
