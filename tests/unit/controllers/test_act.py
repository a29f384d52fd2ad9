"""Executing a plan: a bounded pool that builds Job bodies lazily, its error semantics, and
the status write a creating pass leaves to the next pass - against a fake client, with the
caches filled by hand as the watches would fill them."""

from __future__ import annotations

import asyncio
import copy
import itertools
import time
from typing import Any

import orjson
import pytest

from jobset.controllers import childindex, classify, jobset_controller
from jobset.controllers import jobs as jobs_module
from jobset.controllers import plan as plan_module
from jobset.controllers.fairshare import DEFAULT_SLICE_SECONDS, CreationSlice
from jobset.controllers.jobcache import job_record
from jobset.controllers.jobfacts import facts_of
from jobset.controllers.jobset_controller import ActionError, JobSetController
from jobset.controllers.plan import PlanInput, plan
from jobset.runtime import Manager, ManagerOptions, Request
from jobset.runtime.cache import object_key
from jobset.runtime.client import JOBS, ApiError, Object, Resource
from jobset.runtime.metrics import RuntimeMetrics, new_registry
from kubesim.apiserver.http.tables import partial_object_metadata

from .helpers import NS, jobset, rjob

_uids = itertools.count(1)


def _answer(obj: Object, metadata_only: bool) -> Object:
    """What the API server answers a write: the object, or its PartialObjectMetadata (as the
    simulated API server builds it)."""
    return partial_object_metadata(copy.deepcopy(obj)) if metadata_only else obj


class FakeClient:
    """Records writes; a created Job may be handed to the Job cache as a watch would."""

    def __init__(self) -> None:
        self.metrics = None
        self.failing_since: float | None = None
        self.created: list[str] = []
        self.status_writes: list[dict[str, Any]] = []
        self.metadata_only: list[bool] = []  # per status write: answered with metadata only
        self.fail: dict[str, Exception] = {}
        self.exists: set[str] = set()
        self.finished_creates = 0

    def with_budget(self, qps: float, burst: int) -> FakeClient:
        return self  # one fake serves every concern (events, webhooks...)

    async def create(self, res: Resource, obj: Object, namespace: str | None = None) -> Object:
        await asyncio.sleep(0)  # a request: other workers run meanwhile
        if res == JOBS:
            name = str(obj["metadata"]["name"])
            try:
                if name in self.fail:
                    raise self.fail[name]
                if name in self.exists:
                    raise ApiError(409, "AlreadyExists", f'jobs "{name}" already exists')
                self.created.append(name)
            finally:
                self.finished_creates += 1
        return copy.deepcopy(obj)

    async def create_raw(
        self, res: Resource, obj: Object | bytes, namespace: str | None = None
    ) -> bytes:
        parsed = orjson.loads(obj) if isinstance(obj, bytes) else obj  # bodies come encoded
        return orjson.dumps(await self.create(res, parsed, namespace))

    async def update_status(
        self, res: Resource, obj: Object, *, metadata_only: bool = False
    ) -> Object:
        self.status_writes.append(copy.deepcopy(obj["status"]))
        self.metadata_only.append(metadata_only)
        return _answer(obj, metadata_only)


def _controller(client: FakeClient, max_parallelism: int = 5) -> JobSetController:
    options = ManagerOptions(metrics_port=None, health_port=None)
    manager = Manager(client, options, RuntimeMetrics(new_registry(process_metrics=False)))  # type: ignore[arg-type]
    return JobSetController(manager, max_parallelism=max_parallelism)


def _observe_created(ctl: JobSetController, client: FakeClient, js: Object) -> None:
    """What the Job watch would deliver: the created Jobs, as the server stored them."""
    for name in client.created:
        body = jobs_module.construct_job(
            js, js["spec"]["replicatedJobs"][0], int(name.rsplit("-", 1)[1])
        )
        body["metadata"].update(uid=f"uid-{next(_uids)}", resourceVersion="1")
        ctl.jobs.store.put(object_key(body), job_record(body))


async def test_bodies_are_built_as_they_are_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 300-Job creation holds at most `max_parallelism` bodies at a time (it built all
    300 before the first request)."""
    client = FakeClient()
    ctl = _controller(client, max_parallelism=5)
    built = 0
    most_alive = 0
    original = jobs_module.NewJob  # every body sent, from the template or built in full

    def counting(*args: Any, **kwargs: Any) -> jobs_module.NewJob:
        nonlocal built, most_alive
        built += 1
        most_alive = max(most_alive, built - client.finished_creates)
        return original(*args, **kwargs)

    monkeypatch.setattr(jobs_module, "NewJob", counting)
    js = jobset(rjob("w", 300))
    ctl.jobsets.store.put(object_key(js), js)
    await ctl.reconcile(Request(NS, "js"))
    assert sorted(client.created) == sorted(f"js-w-{i}" for i in range(300))
    assert built == 300
    assert most_alive <= 5


@pytest.mark.parametrize(
    ("plan_sleep", "least"),
    [(0.0, DEFAULT_SLICE_SECONDS), (0.02, 1.0)],
    ids=["quick plan keeps the default slice", "slow plan stretches the slice"],
)
async def test_a_pass_whose_plan_took_long_gets_a_longer_slice(
    monkeypatch: pytest.MonkeyPatch, plan_sleep: float, least: float
) -> None:
    """The creation slice is at least PLAN_SLICE_RATIO times what planning the pass took
    (fairshare.slice_seconds): a 20 ms plan gets at least 1 s; a quick one the default."""
    slices: list[float] = []

    class Recording(CreationSlice[Any]):
        def __init__(self, items: Any, *, seconds: float, **kwargs: Any) -> None:
            slices.append(seconds)
            super().__init__(items, seconds=seconds, **kwargs)

    def slow_plan(inp: PlanInput) -> Any:
        time.sleep(plan_sleep)  # blocking on purpose: what a large plan does
        return plan(inp)

    monkeypatch.setattr(jobset_controller, "CreationSlice", Recording)
    monkeypatch.setattr(jobset_controller, "plan", slow_plan)
    await _first_pass_of_three(FakeClient())
    (seconds,) = slices
    assert seconds >= least
    if not plan_sleep:
        assert seconds == DEFAULT_SLICE_SECONDS  # a 3-Job plan takes well under 10 ms


async def _first_pass_of_three(client: FakeClient) -> tuple[JobSetController, Object]:
    """A 3-Job JobSet's first pass: it creates the 3 Jobs."""
    ctl = _controller(client)
    js = jobset(rjob("w", 3))
    ctl.jobsets.store.put(object_key(js), js)
    await ctl.reconcile(Request(NS, "js"))
    assert len(client.created) == 3
    return ctl, js


async def test_a_creating_pass_leaves_the_counts_to_the_next_pass() -> None:
    client = FakeClient()
    ctl, js = await _first_pass_of_three(client)
    assert client.status_writes == []  # zeros taken before the Jobs existed: not written
    _observe_created(ctl, client, js)
    await ctl.reconcile(Request(NS, "js"))
    assert len(client.status_writes) == 1
    (counts,) = client.status_writes[0]["replicatedJobsStatus"]
    assert counts["name"] == "w" and counts["ready"] == 0 and counts["suspended"] == 0


async def test_status_is_written_when_no_job_was_created_anew() -> None:
    """All creations answered AlreadyExists (a stale cache): no Job event is sure to come,
    so the pass writes its status itself."""
    client = FakeClient()
    client.exists = {f"js-w-{i}" for i in range(3)}
    ctl = _controller(client)
    js = jobset(rjob("w", 3))
    ctl.jobsets.store.put(object_key(js), js)
    await ctl.reconcile(Request(NS, "js"))
    assert client.created == []
    assert len(client.status_writes) == 1


async def test_a_creating_pass_still_writes_condition_changes() -> None:
    """InOrder startup sets a condition in the pass that creates the first Jobs: written."""
    client = FakeClient()
    ctl = _controller(client)
    js = jobset(rjob("a", 2), rjob("b", 2), startupPolicy={"startupPolicyOrder": "InOrder"})
    ctl.jobsets.store.put(object_key(js), js)
    await ctl.reconcile(Request(NS, "js"))
    assert sorted(client.created) == ["js-a-0", "js-a-1"]
    assert len(client.status_writes) == 1
    types = [cond["type"] for cond in client.status_writes[0]["conditions"]]
    assert "StartupPolicyInProgress" in types


async def test_api_errors_are_collected_after_trying_every_job() -> None:
    client = FakeClient()
    client.fail = {
        f"js-w-{i}": ApiError(403, "Forbidden", f"quota exceeded {i}") for i in range(3, 40)
    }
    ctl = _controller(client)
    js = jobset(rjob("w", 50))
    ctl.jobsets.store.put(object_key(js), js)
    with pytest.raises(ActionError) as info:
        await ctl.reconcile(Request(NS, "js"))
    assert len(client.created) == 13  # every other Job was still created
    err = info.value
    assert len(err.errors) == ActionError.MAX_KEPT_ERRORS and err.more == 37 - 10
    assert "quota exceeded" in str(err) and "(and 27 more)" in str(err)
    assert not err.only_conflicts
    assert client.status_writes == []


async def test_other_exceptions_stop_the_pool_and_propagate() -> None:
    client = FakeClient()
    client.fail = {"js-w-7": RuntimeError("boom")}
    ctl = _controller(client, max_parallelism=4)
    js = jobset(rjob("w", 200))
    ctl.jobsets.store.put(object_key(js), js)
    with pytest.raises(RuntimeError, match="boom"):
        await ctl.reconcile(Request(NS, "js"))
    await asyncio.sleep(0)
    assert len(client.created) < 200  # the other workers were cancelled, not left running
    created = len(client.created)
    await asyncio.sleep(0.05)
    assert len(client.created) == created


async def test_count_changes_are_coalesced_conditions_are_not() -> None:
    client = FakeClient()
    ctl = _controller(client)
    js = jobset(rjob("w", 2))
    ctl.jobsets.store.put(object_key(js), js)
    await ctl.reconcile(Request(NS, "js"))
    _observe_created(ctl, client, js)
    await ctl.reconcile(Request(NS, "js"))
    assert len(client.status_writes) == 1  # the first counts: at once
    js = {**js, "status": client.status_writes[-1]}
    ctl.jobsets.store.put(object_key(js), js)
    jobs = ctl.jobs.store.list()
    ready = [{**j, "status": {"ready": 1, "active": 1}} for j in jobs]
    for job in ready:
        ctl.jobs.store.put(object_key(job), job)
    result = await ctl.reconcile(Request(NS, "js"))
    assert len(client.status_writes) == 1  # new counts within the interval: later
    assert 0 < result.requeue_after <= ctl.counts_interval
    done = [
        {**j, "status": {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}}
        for j in jobs
    ]
    for job in done:
        ctl.jobs.store.put(object_key(job), job)
    await ctl.reconcile(Request(NS, "js"))
    assert len(client.status_writes) == 2  # Completed: at once, with the counts
    assert client.status_writes[-1]["terminalState"] == "Completed"


class _WatchFirstClient(FakeClient):
    """The server stores each Job with a uid, and the watch may deliver it to the cache
    before the create's answer arrives (`watch_first`); `cached_uid` puts an older Job of
    the same name in the cache instead (a deleted Job's replacement racing its watch)."""

    def __init__(self) -> None:
        super().__init__()
        self.ctl: JobSetController | None = None
        self.watch_first = False
        self.cached_uid: str | None = None

    async def create(self, res: Resource, obj: Object, namespace: str | None = None) -> Object:
        made = await super().create(res, obj, namespace)
        made["metadata"].update(uid=f"uid-{next(_uids)}", resourceVersion="1")
        assert self.ctl is not None
        if self.watch_first or self.cached_uid is not None:
            seen = copy.deepcopy(made)
            if self.cached_uid is not None:
                seen["metadata"]["uid"] = self.cached_uid
            self.ctl.jobs.store.put(object_key(seen), job_record(seen))
        return made


@pytest.mark.parametrize(
    ("watch_first", "cached_uid", "awaited"),
    [(False, None, True), (True, None, False), (False, "uid-older", True)],
    ids=["answer first", "watch first", "an older job of that name cached"],
)
async def test_a_created_job_is_awaited_unless_the_cache_shows_it(
    watch_first: bool, cached_uid: str | None, awaited: bool
) -> None:
    """The create's answer is read (for its uid) only when the cache holds a Job of that
    name: the same Job (the watch came first) is not awaited, an older one is."""
    client = _WatchFirstClient()
    ctl = _controller(client)
    client.ctl = ctl
    client.watch_first, client.cached_uid = watch_first, cached_uid
    js = jobset(rjob("w", 1))
    ctl.jobsets.store.put(object_key(js), js)
    body = jobs_module.construct_job(js, js["spec"]["replicatedJobs"][0], 0)
    assert await ctl._create_job(body)
    assert ctl.awaited.pending(f"{NS}/js") == (frozenset({"js-w-0"}) if awaited else frozenset())


class VersioningClient(FakeClient):
    """A status write produces a new resourceVersion, as the API server's does; deletes
    are recorded."""

    def __init__(self) -> None:
        super().__init__()
        self.deleted: list[str] = []

    async def update_status(
        self, res: Resource, obj: Object, *, metadata_only: bool = False
    ) -> Object:
        await super().update_status(res, obj, metadata_only=metadata_only)
        written = copy.deepcopy(obj)
        written["metadata"]["resourceVersion"] = str(int(obj["metadata"]["resourceVersion"]) + 1)
        return _answer(written, metadata_only)

    async def delete(
        self, res: Resource, name: str, namespace: str | None = None, **_: Any
    ) -> None:
        self.deleted.append(name)


def _restarting(
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[JobSetController, VersioningClient, Object, list[int]]:
    """A controller over a JobSet with a failed Job (its next pass restarts it); counts
    the passes that plan."""
    from jobset.controllers import jobset_controller

    from .helpers import child, count_calls

    client = VersioningClient()
    ctl = _controller(client)
    js = jobset(rjob("w", 2), failurePolicy={"maxRestarts": 3})
    ctl.jobsets.store.put(object_key(js), js)
    for job in (child(js, "w", 0, active=1), child(js, "w", 1, state="failed")):
        ctl.jobs.store.put(object_key(job), job_record(job))
    return ctl, client, js, count_calls(monkeypatch, jobset_controller, "plan")


async def test_a_pass_on_the_version_its_own_status_write_replaced_waits_for_the_write(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After a status write, a pass that finds the cache still at the version the write
    replaced neither plans nor writes (it would plan on the old status, and its write would
    fail on the resourceVersion); it waits for the write's watch event."""
    from jobset.controllers.jobset_controller import OWN_WRITE_WAIT

    ctl, client, js, planned = _restarting(monkeypatch)
    await ctl.reconcile(Request(NS, "js"))  # the failure: a restart, written
    assert [w.get("restarts") for w in client.status_writes] == [1]
    assert planned[0] == 1
    # Only the new resourceVersion is read of the answer: the server sends no more.
    assert client.metadata_only == [True]

    # The Job watch is ahead of the JobSet watch: the cache still has restarts 0.
    result = await ctl.reconcile(Request(NS, "js"))
    assert result.requeue_after == OWN_WRITE_WAIT
    assert planned[0] == 1 and len(client.status_writes) == 1 and client.deleted == []

    # The write's watch event arrives: the next pass plans on it (the old Jobs go).
    seen = copy.deepcopy(js)
    seen["status"] = client.status_writes[0]
    seen["metadata"]["resourceVersion"] = str(int(js["metadata"]["resourceVersion"]) + 1)
    ctl.jobsets.store.put(object_key(seen), seen)
    await ctl.reconcile(Request(NS, "js"))
    assert planned[0] == 2
    assert sorted(client.deleted) == ["js-w-0", "js-w-1"]
    assert len(client.status_writes) == 1


async def test_a_newer_version_by_someone_else_ends_the_wait_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ctl, _client, js, planned = _restarting(monkeypatch)
    await ctl.reconcile(Request(NS, "js"))
    newer = copy.deepcopy(js)
    newer["metadata"]["resourceVersion"] = "100"  # not the one the write produced
    ctl.jobsets.store.put(object_key(newer), newer)
    await ctl.reconcile(Request(NS, "js"))
    assert planned[0] == 2


async def test_a_pass_classifies_only_the_jobs_changed_since_the_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A JobSet's Jobs stay classified between passes (`childindex`): after 3 of its 2,000
    Jobs change, the next pass reads those 3 (it read, sorted and counted all 2,000 on
    every pass, and a large JobSet is passed over for nearly every Job event)."""
    client = FakeClient()
    ctl = _controller(client)
    js = jobset(rjob("w", 2000))
    ctl.jobsets.store.put(object_key(js), js)
    await ctl.reconcile(Request(NS, "js"))
    _observe_created(ctl, client, js)
    await ctl.reconcile(Request(NS, "js"))
    js = {**js, "status": client.status_writes[-1]}
    ctl.jobsets.store.put(object_key(js), js)
    await ctl.reconcile(Request(NS, "js"))
    reads = [0]
    original = facts_of

    def counting(job: Any) -> Any:
        reads[0] += 1
        return original(job)

    for module in (classify, childindex, jobs_module, plan_module):
        monkeypatch.setattr(module, "facts_of", counting, raising=False)
    changed = sorted(ctl.jobs.store.keys())[:3]
    for key in changed:
        job = dict(ctl.jobs.store.get(key) or {})
        ctl.jobs.store.put(key, job_record({**job, "status": {"ready": 1, "active": 1}}))
    await ctl.reconcile(Request(NS, "js"))
    assert reads[0] == 3
    # ... and what it planned is what a pass over all 2,000 Jobs plans.
    fresh = plan(PlanInput(jobset=js, jobs=ctl.jobs.store.list(), now=ctl.clock()))
    last = plan(
        PlanInput(
            jobset=js,
            jobs=[],
            now=ctl.clock(),
            child_index=ctl._child_indexes["default/js"][1],
        )
    )
    assert last.status["replicatedJobsStatus"] == fresh.status["replicatedJobsStatus"]
    assert last.status["replicatedJobsStatus"][0]["ready"] == 3
