"""Workqueue semantics (client-go's queue, delaying queue and rate-limiting queue)."""

from __future__ import annotations

import asyncio

import pytest

from jobset.runtime.metrics import RuntimeMetrics
from jobset.runtime.ratelimit import ItemExponentialFailureRateLimiter
from jobset.runtime.workqueue import ShutDown, WorkQueue


async def test_items_are_deduplicated_and_fifo() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    for item in ("a", "b", "a", "c", "b"):
        q.add(item)
    assert len(q) == 3
    assert [await q.get() for _ in range(3)] == ["a", "b", "c"]


async def test_item_added_while_processing_is_processed_again_afterwards_once() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    q.add("k")
    item = await q.get()
    for _ in range(100):
        q.add("k")
    assert len(q) == 0  # not handed out while it is being processed
    getter = asyncio.create_task(q.get())
    await asyncio.sleep(0.01)
    assert not getter.done()  # a second worker does not get it concurrently
    q.done(item)
    assert await asyncio.wait_for(getter, 1) == "k"
    q.done("k")
    assert len(q) == 0 and not q.processing


async def test_add_after_keeps_the_earliest_time() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    q.add_after("x", 0.05)
    q.add_after("x", 5.0)  # later: ignored
    assert q.waiting_delayed() == 1
    assert await asyncio.wait_for(q.get(), 1) == "x"
    q.add_after("y", 5.0)
    q.add_after("y", 0.01)  # earlier: wins
    assert await asyncio.wait_for(q.get(), 1) == "y"


async def test_rate_limited_adds_back_off_and_forget_resets() -> None:
    q: WorkQueue[str] = WorkQueue("t", rate_limiter=ItemExponentialFailureRateLimiter(0.01, 1.0))
    loop = asyncio.get_running_loop()
    delays = []
    for _ in range(4):
        t0 = loop.time()
        q.add_rate_limited("k")
        await q.get()
        delays.append(loop.time() - t0)
        q.done("k")
    assert q.num_requeues("k") == 4
    for i, d in enumerate(delays):
        assert d >= 0.01 * 2**i * 0.9, delays
    q.forget("k")
    assert q.num_requeues("k") == 0


async def test_shutdown_drains_queued_and_in_flight_items() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    q.add("a")
    q.add("b")
    q.add_after("later", 10)
    a = await q.get()
    drained = asyncio.create_task(q.shutdown_with_drain(5))
    await asyncio.sleep(0.01)
    q.add("refused")
    assert not drained.done()
    assert await q.get() == "b"  # queued items are still handed out
    q.done("b")
    await asyncio.sleep(0.01)
    assert not drained.done()  # "a" is still in flight
    q.done(a)
    assert await asyncio.wait_for(drained, 1) is True
    with pytest.raises(ShutDown):
        await q.get()
    assert q.waiting_delayed() == 0


async def test_shutdown_wakes_idle_workers() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    workers = [asyncio.create_task(q.get()) for _ in range(3)]
    await asyncio.sleep(0.01)
    q.shutdown()
    for w in workers:
        with pytest.raises(ShutDown):
            await asyncio.wait_for(w, 1)


async def test_drain_times_out_when_work_never_finishes() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    q.add("stuck")
    await q.get()
    assert await q.shutdown_with_drain(0.05) is False


async def test_metrics() -> None:
    m = RuntimeMetrics()
    q: WorkQueue[str] = WorkQueue("wq", metrics=m)
    q.add("a")
    q.add("a")
    q.add("b")
    assert m.workqueue_depth.labels("wq", "wq")._value.get() == 2
    assert m.workqueue_adds_total.labels("wq", "wq")._value.get() == 2
    await q.get()
    await asyncio.sleep(0.02)
    assert q.longest_running_processor_seconds() >= 0.02
    q.add_rate_limited("c")
    assert m.workqueue_retries_total.labels("wq", "wq")._value.get() == 1
    q.done("a")
    assert q.unfinished_work_seconds() == 0
