"""A tenant-sized pass does not hold the event loop: other tasks run while it plans.

Proved by a plan that can only finish once another task on the loop has run (it waits for
an event that task sets): planned on the loop, it would wait in vain. Not a timing.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import orjson
import pytest

from jobset.controllers import jobs as jobs_module
from jobset.controllers import jobset_controller
from jobset.controllers.jobcache import job_record
from jobset.controllers.jobset_controller import (
    PLAN_IN_THREAD_JOBS,
    PLAN_IN_THREAD_PATTERNS,
    JobSetController,
)
from jobset.controllers.plan import Plan, PlanInput
from jobset.runtime import Manager, ManagerOptions, Request
from jobset.runtime.cache import object_key
from jobset.runtime.client import Object, Resource
from jobset.runtime.metrics import RuntimeMetrics, new_registry

from .helpers import NS, jobset, rjob


class FakeClient:
    def __init__(self) -> None:
        self.metrics = None
        self.failing_since: float | None = None
        self.created: list[str] = []

    def with_budget(self, qps: float, burst: int) -> FakeClient:
        return self

    async def create(self, res: Resource, obj: Object, namespace: str | None = None) -> Object:
        await asyncio.sleep(0)
        self.created.append(str(obj["metadata"]["name"]))
        return obj

    async def create_raw(
        self, res: Resource, obj: Object | bytes, namespace: str | None = None
    ) -> bytes:
        parsed = orjson.loads(obj) if isinstance(obj, bytes) else obj  # bodies come encoded
        return orjson.dumps(await self.create(res, parsed, namespace))

    async def update_status(
        self, res: Resource, obj: Object, *, metadata_only: bool = False
    ) -> Object:
        return obj


def _controller() -> JobSetController:
    options = ManagerOptions(metrics_port=None, health_port=None)
    manager = Manager(FakeClient(), options, RuntimeMetrics(new_registry(process_metrics=False)))  # type: ignore[arg-type]
    return JobSetController(manager)


def _with_jobs(ctl: JobSetController, replicas: int, patterns: int = 0) -> None:
    rules = [
        {"name": f"r{i}", "action": "FailJobSet", "onJobFailureMessagePatterns": [f"^m{i}$"]}
        for i in range(patterns)
    ]
    js = jobset(rjob("w", replicas), **({"failurePolicy": {"rules": rules}} if rules else {}))
    ctl.jobsets.store.put(object_key(js), js)
    for i in range(replicas):
        body = jobs_module.construct_job(js, js["spec"]["replicatedJobs"][0], i)
        body["metadata"].update(uid=f"uid-{i}", resourceVersion="1")
        body["status"] = {"active": 1, "ready": 1}
        ctl.jobs.store.put(object_key(body), job_record(body))


def _gated_plan(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, list[str]]:
    """`plan` that waits (at most 10 s) for `gate`; records the thread it ran on."""
    gate = threading.Event()
    threads: list[str] = []
    original = jobset_controller.plan

    def gated(inp: PlanInput) -> Plan:
        threads.append(threading.current_thread().name)
        if threading.current_thread() is not threading.main_thread():
            assert gate.wait(10), "no other task ran while the pass planned"
        return original(inp)

    monkeypatch.setattr(jobset_controller, "plan", gated)
    return gate, threads


async def test_other_tasks_run_while_a_tenant_sized_jobset_is_planned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ctl = _controller()
    _with_jobs(ctl, PLAN_IN_THREAD_JOBS)
    gate, threads = _gated_plan(monkeypatch)
    ran: list[Any] = []

    async def other_tenant() -> None:
        ran.append("other")
        gate.set()

    passing = asyncio.create_task(ctl.reconcile(Request(NS, "js")))
    await asyncio.sleep(0)  # the pass starts and reaches its plan
    other = asyncio.create_task(other_tenant())
    await asyncio.wait_for(passing, 20)
    await other
    assert ran == ["other"]
    assert threads and threads[0] != threading.main_thread().name


async def test_a_small_jobset_is_planned_on_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    ctl = _controller()
    _with_jobs(ctl, 3)
    _, threads = _gated_plan(monkeypatch)
    await ctl.reconcile(Request(NS, "js"))
    assert threads == [threading.main_thread().name]


async def test_a_failure_policy_of_many_patterns_is_planned_off_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """3 Jobs, but a policy whose message patterns a failed Job is matched against one by
    one: planned in a thread like a tenant-sized JobSet."""
    ctl = _controller()
    _with_jobs(ctl, 3, patterns=PLAN_IN_THREAD_PATTERNS)
    gate, threads = _gated_plan(monkeypatch)
    gate.set()  # what runs meanwhile is the first test's concern; here: where it plans
    await asyncio.wait_for(ctl.reconcile(Request(NS, "js")), 20)
    assert threads and threads[0] != threading.main_thread().name
