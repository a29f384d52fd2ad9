"""A pass reads each cached Job through facts parsed once, when the record is built, and
decides exactly as it did reading the Job itself.

Why it exists (docs/reliability.md, "Adversarial JobSets"): a 16,000-Job JobSet is planned
in a worker thread on every pass, and while it plans the event loop waits for the
interpreter lock after each socket call, slowing every other tenant. Parsing every Job's
labels, conditions and name again on every pass was most of that plan. Work is counted
(calls), never timed.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from jobset.api import constants as c
from jobset.controllers import jobfacts
from jobset.controllers.classify import classify, replicated_job_statuses
from jobset.controllers.jobcache import job_record
from jobset.controllers.jobfacts import CachedJob, facts_of, job_facts
from jobset.controllers.jobs import existing_indices, indices_of
from jobset.controllers.plan import PlanInput, plan

from .helpers import NOW, child, count_calls, jobset, rjob


def _jobs(js: dict[str, Any]) -> list[dict[str, Any]]:
    """Children in every state a pass tells apart, and some it must set aside."""
    out = [
        child(js, "a", 0, state="succeeded", succeeded=1),
        child(js, "a", 1, ready=1, active=1),
        child(js, "a", 2, suspend=True),
        child(js, "b", 0, state="failed", failed_at=5),
        child(js, "b", 1, active=1),
        child(js, "b", 2, restart_job=True, active=1),
    ]
    old = child(js, "b", 3, labels={c.RESTART_ATTEMPT_KEY: "0"})  # a previous attempt
    bad = child(js, "a", 3, labels={c.RESTART_ATTEMPT_KEY: "x"})  # unparsable: previous
    beyond = child(js, "b", 4, labels={c.JOB_INDEX_KEY: "9"})  # beyond replicas
    return [*out, old, bad, beyond]


@pytest.fixture
def js() -> dict[str, Any]:
    obj = jobset(rjob("a", 4), rjob("b", 5), status={"restarts": 1})
    return obj


def _relabel(jobs: list[dict[str, Any]], attempt: str) -> list[dict[str, Any]]:
    for job in jobs:
        labels = job["metadata"]["labels"]
        if labels.get(c.RESTART_ATTEMPT_KEY) not in ("0", "x"):
            labels[c.RESTART_ATTEMPT_KEY] = attempt
    return jobs


def test_a_cached_record_carries_the_facts_of_the_job_it_was_built_from(
    js: dict[str, Any],
) -> None:
    for job in _relabel(_jobs(js), "1"):
        record = job_record(job)
        assert isinstance(record, CachedJob)
        # The same facts as parsing the Job itself, or a plain copy of the record.
        assert record.facts == job_facts(job) == job_facts(dict(record))
        assert facts_of(record) is record.facts


@pytest.mark.parametrize("restart_job", [False, True])
def test_a_pass_over_cached_records_decides_as_over_the_jobs(
    js: dict[str, Any], restart_job: bool
) -> None:
    jobs = _relabel(_jobs(js), "1")
    records = [job_record(copy.deepcopy(j)) for j in jobs]
    features = {c.FEATURE_RESTART_JOB: restart_job}
    by_jobs = plan(PlanInput(jobset=js, jobs=jobs, now=NOW, service_exists=True, features=features))
    by_records = plan(
        PlanInput(jobset=js, jobs=records, now=NOW, service_exists=True, features=features)
    )
    names = [[j["metadata"]["name"] for j in group] for group in _groups(by_jobs.children)]
    assert names == [
        [j["metadata"]["name"] for j in group] for group in _groups(by_records.children)
    ]
    assert by_jobs.status == by_records.status
    assert by_jobs.create_jobs.names() == by_records.create_jobs.names()
    assert [j["metadata"]["name"] for j in by_jobs.delete_jobs] == [
        j["metadata"]["name"] for j in by_records.delete_jobs
    ]
    children = classify(js, records, restart_job=restart_job)
    assert replicated_job_statuses(js, children) == replicated_job_statuses(
        js, classify(js, jobs, restart_job=restart_job)
    )


def _groups(children: Any) -> list[list[dict[str, Any]]]:
    return [children.active, children.succeeded, children.failed, children.previous]


def test_a_pass_over_cached_records_parses_no_job(
    js: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    records = [job_record(j) for j in _relabel(_jobs(js), "1")]
    parsed = count_calls(monkeypatch, jobfacts, "job_facts")
    p = plan(PlanInput(jobset=js, jobs=records, now=NOW, service_exists=True))
    assert p.failure is not None  # the pass went as far as the failure policy
    assert parsed[0] == 0
    # Plain dicts (a Job from anywhere but the cache) are parsed, each time.
    plan(PlanInput(jobset=js, jobs=[dict(r) for r in records], now=NOW, service_exists=True))
    assert parsed[0] >= len(records)


@pytest.mark.parametrize(
    "names",
    [
        {"js-a-0", "js-a-1", "js-a-10", "js-b-0"},
        {"js-a-01", "js-a-", "js-a-x", "js-7", "js--3", "other-a-0", "js-my-rjob-2", "js-a-ⅷ"},
        {"js-a-0", "js-a-2"},
    ],
)
def test_indices_from_facts_equal_the_names_parsed(names: set[str]) -> None:
    jobs = [job_record({"metadata": {"name": n}}) for n in sorted(names)]
    awaited = {"js-a-2", "js-a-3", "js-b-0"}  # overlapping what is cached
    want = existing_indices("js", names | awaited)
    got = indices_of("js", jobs, awaited)
    assert got == {rjob_name: set(indices) for rjob_name, indices in want.items()}


@pytest.mark.parametrize(
    "job",
    [
        {},
        {"metadata": []},
        {"metadata": {"name": "js-a-0", "labels": ["x"]}, "status": "Running"},
        {"metadata": {"labels": {c.JOB_INDEX_KEY: "1.5"}}, "spec": {"parallelism": "many"}},
        {"status": {"conditions": ["Complete", {"type": "Failed", "status": "True"}]}},
        {"status": {"conditions": {"type": "Complete"}, "ready": [1], "active": None}},
    ],
)
def test_a_job_of_any_shape_gets_facts_with_wrong_fields_read_as_absent(
    job: dict[str, Any],
) -> None:
    """The Job cache's transform parses every event: a field of the wrong type must not
    raise there (it would stop the watch), it reads as absent."""
    facts = job_facts(job)
    assert facts.job_index is None and facts.attempt is None
    assert facts.finished in (None, "Failed")
