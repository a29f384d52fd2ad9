"""The reflector gives the event loop back during a burst of events, so other tasks are not starved.

aiohttp answers `readline()` from its buffer without suspending, so a burst of buffered
watch events reaches the reflector as an iterator that never suspends. A fake client
(in-memory, because a real socket cannot be made to deliver a burst deterministically)
yields such a burst and such list pages; a ticker task counts how often it ran. Without the
reflector's periodic yield the ticker would not run at all until the burst is handled. Not a
timing: the assertion is on interleaving.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from jobset.runtime.client import Object, Resource
from jobset.runtime.reflector import YIELD_EVERY, Reflector

BURST = YIELD_EVERY * 20
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")


def _cm(i: int) -> Object:
    return {"metadata": {"name": f"cm{i}", "namespace": "ns", "resourceVersion": str(i + 1)}}


class BurstClient:
    """A list of `BURST` items in one page, then a watch of `BURST` ADDED events, all
    available at once (no suspension between them), then the watch blocks."""

    def __init__(self) -> None:
        self.watch_done = asyncio.Event()

    async def list(self, *args: Any, **kwargs: Any) -> Object:
        return {"items": [_cm(i) for i in range(BURST)], "metadata": {"resourceVersion": "1"}}

    @contextlib.asynccontextmanager
    async def watch(self, *args: Any, **kwargs: Any) -> AsyncIterator[AsyncIterator[Object]]:
        async def events() -> AsyncIterator[Object]:
            for i in range(BURST, 2 * BURST):
                yield {"type": "ADDED", "object": _cm(i)}
            self.watch_done.set()
            await asyncio.Event().wait()  # the stream stays open, quiet

        yield events()


class Sink:
    def __init__(self, ticks: list[int]) -> None:
        self.ticks = ticks
        self.seen_at_tick: list[int] = []  # the ticker's count when each object arrived

    def replace(self, objects: list[Object], resource_version: str) -> None:
        self.seen_at_tick.append(self.ticks[0])

    def apply(self, event_type: str, obj: Object) -> None:
        self.seen_at_tick.append(self.ticks[0])


async def test_other_tasks_run_during_a_burst_of_list_items_and_watch_events() -> None:
    ticks = [0]
    prepared_at: list[int] = []

    def transform(obj: Object) -> Object:
        prepared_at.append(ticks[0])
        return obj

    async def ticker() -> None:
        while True:
            ticks[0] += 1
            await asyncio.sleep(0)

    client = BurstClient()
    sink = Sink(ticks)
    reflector = Reflector(client, CONFIGMAPS, sink, transform=transform)  # type: ignore[arg-type]
    tick_task = asyncio.create_task(ticker())
    run = asyncio.create_task(reflector.run())
    try:
        await asyncio.wait_for(client.watch_done.wait(), 30)
    finally:
        run.cancel()
        tick_task.cancel()
        await asyncio.gather(run, tick_task, return_exceptions=True)

    listed, watched = prepared_at[:BURST], prepared_at[BURST:]
    assert len(watched) == BURST
    # The ticker ran between items of the one list page and between events of the burst:
    # about once per YIELD_EVERY items, never more than YIELD_EVERY items in one stretch.
    for items in (listed, watched):
        assert items[-1] - items[0] >= BURST // YIELD_EVERY - 2, (items[0], items[-1])
        longest = max(sum(1 for t in items if t == tick) for tick in set(items))
        assert longest <= YIELD_EVERY, longest
