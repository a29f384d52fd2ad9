"""Controller workers: dedup while processing, error backoff, results, mapping to owners."""

from __future__ import annotations

import argparse
import asyncio
import itertools
from typing import Any

import pytest
import structlog

from jobset.runtime.controller import (
    Controller,
    EnqueueHandler,
    Request,
    Result,
    TerminalError,
    enqueue_object,
    enqueue_owner,
    is_terminal,
)
from jobset.runtime.metrics import RuntimeMetrics
from jobset.runtime.options import ManagerOptions, add_runtime_flags
from jobset.runtime.ratelimit import ItemExponentialFailureRateLimiter
from tests.eventually import eventually

KEY = Request("ns", "a")


async def test_key_added_100_times_while_processing_is_processed_exactly_twice() -> None:
    release, started = asyncio.Event(), asyncio.Event()
    calls: list[Request] = []
    running = 0
    max_running = 0

    async def reconcile(req: Request) -> Result:
        nonlocal running, max_running
        calls.append(req)
        started.set()
        running += 1
        max_running = max(max_running, running)
        if len(calls) == 1:
            await release.wait()
        running -= 1
        return Result()

    ctrl = Controller("c", reconcile, concurrency=4)
    ctrl.start()
    ctrl.queue.add(KEY)
    await asyncio.wait_for(started.wait(), 5)
    for _ in range(100):
        ctrl.queue.add(KEY)
    await asyncio.sleep(0.05)
    assert len(calls) == 1  # four idle workers, yet nobody takes the key concurrently
    release.set()
    await asyncio.sleep(0.1)
    assert await ctrl.stop(grace_period=1)
    assert calls == [KEY, KEY]
    assert max_running == 1


async def test_errors_back_off_exponentially_and_are_logged_with_the_key() -> None:
    loop = asyncio.get_running_loop()
    times: list[float] = []
    succeeded = asyncio.Event()

    async def reconcile(req: Request) -> Result:
        times.append(loop.time())
        if len(times) <= 5:
            raise RuntimeError("boom")
        succeeded.set()
        return Result()

    m = RuntimeMetrics()
    ctrl = Controller(
        "c",
        reconcile,
        rate_limiter=ItemExponentialFailureRateLimiter(0.02, 10.0),
        metrics=m,
    )
    with structlog.testing.capture_logs() as logs:
        ctrl.start()
        ctrl.queue.add(KEY)
        await asyncio.wait_for(succeeded.wait(), 10)
        await ctrl.stop(grace_period=1)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    for i, gap in enumerate(gaps):
        assert gap >= 0.02 * 2**i * 0.9, gaps  # 20, 40, 80, 160, 320 ms at least
    errors = [e for e in logs if e["event"] == "Reconciler error"]
    assert len(errors) == 5 and all(e["key"] == "ns/a" for e in errors)
    assert ctrl.queue.num_requeues(KEY) == 0  # forgotten after the success
    assert m.reconcile_errors_total.labels("c")._value.get() == 5
    assert m.reconcile_total.labels("c", "error")._value.get() == 5
    assert m.reconcile_total.labels("c", "success")._value.get() == 1
    assert m.reconcile_panics_total.labels("c")._value.get() == 5  # not API errors


async def test_requeue_after_and_requeue() -> None:
    loop = asyncio.get_running_loop()
    times: list[float] = []
    third = asyncio.Event()

    async def reconcile(req: Request) -> Result:
        times.append(loop.time())
        if len(times) == 1:
            return Result(requeue_after=0.15)
        if len(times) == 2:
            return Result(requeue=True)
        third.set()
        return Result()

    m = RuntimeMetrics()
    ctrl = Controller("c", reconcile, metrics=m)
    ctrl.start()
    ctrl.queue.add(KEY)
    await asyncio.wait_for(third.wait(), 10)
    await ctrl.stop(grace_period=1)
    assert times[1] - times[0] >= 0.14
    assert m.reconcile_total.labels("c", "requeue_after")._value.get() == 1
    assert m.reconcile_total.labels("c", "requeue")._value.get() == 1
    assert m.active_workers.labels("c")._value.get() == 0
    assert m.max_concurrent_reconciles.labels("c")._value.get() == 1


async def test_stop_cancels_work_past_the_grace_period() -> None:
    async def reconcile(req: Request) -> Result:
        await asyncio.sleep(60)
        return Result()

    ctrl = Controller("c", reconcile)
    ctrl.start()
    ctrl.queue.add(KEY)
    await asyncio.sleep(0.02)
    assert await ctrl.stop(grace_period=0.05) is False


def owned(kind: str, api_version: str, controller: bool = True) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "child",
            "namespace": "ns",
            "ownerReferences": [
                {
                    "apiVersion": api_version,
                    "kind": kind,
                    "name": "parent",
                    "uid": "u",
                    "controller": controller,
                }
            ],
        }
    }


def test_mappers() -> None:
    to_owner = enqueue_owner("JobSet", "jobset.x-k8s.io")
    assert list(to_owner(owned("JobSet", "jobset.x-k8s.io/v1alpha2"))) == [Request("ns", "parent")]
    assert list(to_owner(owned("JobSet", "other.io/v1"))) == []
    assert list(to_owner(owned("Job", "jobset.x-k8s.io/v1alpha2"))) == []
    assert list(to_owner(owned("JobSet", "jobset.x-k8s.io/v1alpha2", controller=False))) == []
    assert list(enqueue_owner("ConfigMap")(owned("ConfigMap", "v1"))) == [Request("ns", "parent")]
    assert list(enqueue_object()(owned("X", "v1"))) == [Request("ns", "child")]


async def test_update_enqueues_old_and_new_owner() -> None:
    ctrl = Controller("c", lambda r: asyncio.sleep(0, Result()))
    handler = EnqueueHandler(ctrl.queue, enqueue_owner("ConfigMap"))
    old = owned("ConfigMap", "v1")
    new = owned("ConfigMap", "v1")
    new["metadata"]["ownerReferences"][0]["name"] = "adopter"
    handler.on_update(old, new)
    got = {await ctrl.queue.get(), await ctrl.queue.get()}
    assert got == {Request("ns", "parent"), Request("ns", "adopter")}


async def test_a_pass_over_its_budget_is_cut_logged_counted_and_requeued() -> None:
    """--reconcile-timeout: the pass is cancelled at its next await, the key comes back with
    backoff, and the next pass runs (here: succeeds)."""
    calls: list[int] = []
    cut = False
    succeeded = asyncio.Event()

    async def reconcile(req: Request) -> Result:
        nonlocal cut
        calls.append(len(calls))
        if len(calls) == 1:
            try:
                await asyncio.Event().wait()  # never set: only the budget ends this pass
            except asyncio.CancelledError:
                cut = True
                raise
        succeeded.set()
        return Result()

    m = RuntimeMetrics()
    ctrl = Controller(
        "c",
        reconcile,
        rate_limiter=ItemExponentialFailureRateLimiter(0.01, 1.0),
        metrics=m,
        reconcile_timeout=0.05,
    )
    with structlog.testing.capture_logs() as logs:
        ctrl.start()
        ctrl.queue.add(KEY)
        await asyncio.wait_for(succeeded.wait(), 10)
        assert await ctrl.stop(grace_period=1)
    assert cut and calls == [0, 1]
    (timeout,) = [e for e in logs if e["event"] == "Reconciler timeout"]
    assert timeout["key"] == "ns/a" and timeout["timeout"] == 0.05
    assert timeout["log_level"] == "error"
    assert m.reconcile_timeouts_total.labels("c")._value.get() == 1
    assert m.reconcile_errors_total.labels("c")._value.get() == 1
    assert m.reconcile_panics_total.labels("c")._value.get() == 0
    assert m.reconcile_total.labels("c", "error")._value.get() == 1
    assert m.reconcile_total.labels("c", "success")._value.get() == 1
    assert m.workqueue_retries_total.labels("c", "c")._value.get() == 1  # rate-limited


async def test_a_timeout_error_of_the_reconciler_is_an_ordinary_error() -> None:
    """A TimeoutError the pass raises itself (a request's) is not the budget running out."""
    done = asyncio.Event()

    async def reconcile(req: Request) -> Result:
        if not done.is_set():
            done.set()
            raise TimeoutError("request timed out")
        return Result()

    m = RuntimeMetrics()
    ctrl = Controller("c", reconcile, metrics=m, reconcile_timeout=30)
    with structlog.testing.capture_logs() as logs:
        ctrl.start()
        ctrl.queue.add(KEY)
        await asyncio.wait_for(done.wait(), 5)
        await asyncio.sleep(0.05)
        await ctrl.stop(grace_period=1)
    assert [e["event"] for e in logs if e.get("log_level") == "error"] == ["Reconciler error"]
    assert m.reconcile_timeouts_total.labels("c")._value.get() == 0
    assert m.reconcile_errors_total.labels("c")._value.get() == 1


async def test_no_budget_when_the_timeout_is_zero() -> None:
    async def reconcile(req: Request) -> Result:
        await asyncio.sleep(0.1)
        return Result()

    m = RuntimeMetrics()
    ctrl = Controller("c", reconcile, metrics=m, reconcile_timeout=0)
    ctrl.start()
    ctrl.queue.add(KEY)
    await asyncio.sleep(0.2)
    assert await ctrl.stop(grace_period=1)
    assert m.reconcile_total.labels("c", "success")._value.get() == 1
    assert m.reconcile_timeouts_total.labels("c")._value.get() == 0


def test_reconcile_timeout_flag_reaches_the_manager_options() -> None:
    parser = argparse.ArgumentParser()
    add_runtime_flags(parser)
    assert ManagerOptions.from_args(parser.parse_args([])).reconcile_timeout == 60.0
    args = parser.parse_args(["--reconcile-timeout", "2.5"])
    assert ManagerOptions.from_args(args).reconcile_timeout == 2.5
    with pytest.raises(ValueError, match="--reconcile-timeout"):
        ManagerOptions.from_args(parser.parse_args(["--reconcile-timeout", "-1"]))


async def test_a_terminal_error_is_logged_and_counted_but_not_requeued() -> None:
    """controller-runtime's reconcile.TerminalError: an error, and a terminal one, without a
    retry; the key's next event reconciles it again."""
    calls: list[Request] = []
    passed = asyncio.Event()

    async def reconcile(req: Request) -> Result:
        calls.append(req)
        passed.set()
        try:
            raise ValueError("spec.replicatedJobs[0].replicas: must be 0 or more")
        except ValueError as err:
            raise TerminalError("the JobSet cannot be reconciled as it is") from err

    m = RuntimeMetrics()
    ctrl = Controller(
        "c", reconcile, rate_limiter=ItemExponentialFailureRateLimiter(0.001, 0.01), metrics=m
    )
    with structlog.testing.capture_logs() as logs:
        ctrl.start()
        ctrl.queue.add(KEY)
        await asyncio.wait_for(passed.wait(), 10)
        await eventually(lambda: not ctrl.queue.processing, within=10)
        assert len(ctrl.queue) == 0 and ctrl.queue.waiting_delayed() == 0  # nothing requeued
        passed.clear()
        ctrl.queue.add(KEY)  # an event of the object
        await asyncio.wait_for(passed.wait(), 10)
        await ctrl.stop(grace_period=1)
    assert calls == [KEY, KEY]
    errors = [e for e in logs if e["event"] == "Reconciler error"]
    assert len(errors) == 2
    assert all(e["key"] == "ns/a" and e["terminal"] is True for e in errors), errors
    assert m.terminal_reconcile_errors_total.labels("c")._value.get() == 2
    assert m.reconcile_errors_total.labels("c")._value.get() == 2
    assert m.reconcile_total.labels("c", "error")._value.get() == 2
    assert m.reconcile_panics_total.labels("c")._value.get() == 0  # deliberate, not a crash
    assert m.workqueue_retries_total.labels("c", "c")._value.get() == 0


async def test_ordinary_errors_are_not_terminal_and_the_series_starts_at_zero() -> None:
    failed = asyncio.Event()

    async def reconcile(req: Request) -> Result:
        if not failed.is_set():
            failed.set()
            raise RuntimeError("boom")
        return Result()

    m = RuntimeMetrics()
    ctrl = Controller("c", reconcile, metrics=m)
    assert m.terminal_reconcile_errors_total.labels("c")._value.get() == 0  # exported at 0
    with structlog.testing.capture_logs() as logs:
        ctrl.start()
        ctrl.queue.add(KEY)
        await eventually(
            lambda: m.reconcile_total.labels("c", "success")._value.get(), within=10
        )  # retried
        await ctrl.stop(grace_period=1)
    assert [e.get("terminal") for e in logs if e["event"] == "Reconciler error"] == [None]
    assert m.terminal_reconcile_errors_total.labels("c")._value.get() == 0
    assert m.reconcile_errors_total.labels("c")._value.get() == 1


def test_a_group_is_terminal_when_every_member_is() -> None:
    terminal, other = TerminalError("bad spec"), RuntimeError("connection reset")
    assert is_terminal(terminal)
    assert is_terminal(ExceptionGroup("pass", [terminal, ExceptionGroup("sub", [terminal])]))
    assert not is_terminal(ExceptionGroup("pass", [terminal, other]))  # retry for the other
    assert not is_terminal(other)
    assert not is_terminal(RuntimeError("wrapping"))  # a cause is not the error itself
