"""Timers and work queues for the simulated controllers and kubelets.

One event-loop timer (`TimerHeap`) and a few worker tasks reading a `WorkQueue` serve any
number of objects, where a task or a timer per object would not scale to the benchmarks'
tens of thousands of Jobs and pods. The queue has client-go's workqueue semantics.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

import structlog

__all__ = ["TimerHeap", "WorkQueue"]

log = structlog.get_logger("sim.workqueue")

K = TypeVar("K", bound=Hashable)


class TimerHeap(Generic[K]):
    """Deadlines for many keys behind a single event-loop timer.

    `schedule` keeps, per key, either the earliest deadline (work-queue "add after"
    semantics) or the latest call's (a state machine moving its next step). Superseded heap
    entries are skipped when they surface, so rescheduling is O(log n) with no search.
    """

    def __init__(self, fire: Callable[[K], None]) -> None:
        self._fire = fire
        self._heap: list[tuple[float, int, K]] = []
        self._due: dict[K, float] = {}
        self._seq = itertools.count()
        self._handle: asyncio.TimerHandle | None = None
        self._armed_for = math.inf

    def __len__(self) -> int:
        return len(self._due)

    def schedule(self, key: K, delay: float, *, earliest: bool = True) -> None:
        """Fire `key` after `delay` seconds (never if infinite)."""
        if math.isinf(delay) or math.isnan(delay):
            if not earliest:
                self._due.pop(key, None)
            return
        loop = asyncio.get_running_loop()
        when = loop.time() + max(delay, 0.0)
        current = self._due.get(key)
        if current is not None and earliest and current <= when:
            return
        self._due[key] = when
        heapq.heappush(self._heap, (when, next(self._seq), key))
        self._arm(loop)

    def cancel(self, key: K) -> None:
        self._due.pop(key, None)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._armed_for = math.inf
        self._heap.clear()
        self._due.clear()

    def _arm(self, loop: asyncio.AbstractEventLoop) -> None:
        heap = self._heap
        while heap and self._due.get(heap[0][2]) != heap[0][0]:
            heapq.heappop(heap)
        if not heap:
            return
        when = heap[0][0]
        if self._handle is not None:
            if self._armed_for <= when:
                return
            self._handle.cancel()
        self._armed_for = when
        self._handle = loop.call_at(when, self._on_timer)

    def _on_timer(self) -> None:
        self._handle = None
        self._armed_for = math.inf
        loop = asyncio.get_running_loop()
        now = loop.time()
        heap = self._heap
        while heap and heap[0][0] <= now:
            when, _, key = heapq.heappop(heap)
            if self._due.get(key) == when:
                del self._due[key]
                try:
                    self._fire(key)
                except Exception:  # a broken callback must not stop every other timer
                    log.exception("timer callback failed", key=str(key))
        self._arm(loop)


class WorkQueue(Generic[K]):
    """client-go's workqueue semantics: a key queued many times is processed once, never by
    two workers at the same time, and again if it was queued while being processed."""

    def __init__(self) -> None:
        self._ready: deque[K] = deque()
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._wakeup = asyncio.Event()
        self._failures: dict[K, int] = {}
        self.timers: TimerHeap[K] = TimerHeap(self.add)

    def __len__(self) -> int:
        return len(self._dirty)

    def add(self, key: K) -> None:
        if key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._processing:
            self._ready.append(key)
            self._wakeup.set()

    def add_after(self, key: K, delay: float) -> None:
        if delay <= 0:
            self.add(key)
        else:
            self.timers.schedule(key, delay)

    def add_rate_limited(self, key: K) -> None:
        """Retry with per-key exponential back-off (50 ms doubling to 30 s), so a persistent
        error (a webhook denying pods, say) does not spin."""
        n = self._failures.get(key, 0)
        self._failures[key] = n + 1
        self.add_after(key, min(0.05 * 2**n, 30.0))

    def forget(self, key: K) -> None:
        self._failures.pop(key, None)

    async def get(self) -> K:
        while not self._ready:
            self._wakeup.clear()
            await self._wakeup.wait()
        key = self._ready.popleft()
        self._dirty.discard(key)
        self._processing.add(key)
        return key

    def done(self, key: K) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._ready.append(key)
            self._wakeup.set()

    def close(self) -> None:
        self.timers.close()
