"""The workqueue: client-go's `workqueue.TypedRateLimitingInterface`, on asyncio.

Semantics (client-go `util/workqueue/queue.go`, `delaying_queue.go`,
`rate_limiting_queue.go`):

- an item is in the queue at most once (`dirty` set): adding it again before a worker takes
  it is a no-op;
- an item being processed is never handed to a second worker: adding it meanwhile marks it
  dirty, and `done()` puts it back in the queue - so a key added 100 times while processing
  is processed exactly once more afterwards;
- `add_after` adds after a delay; a later `add_after` for an item already waiting keeps the
  earlier time;
- `add_rate_limited` = `add_after(item, rate_limiter.when(item))` (per-item exponential
  backoff combined with an overall token bucket by default), `forget` resets the item's
  backoff after success, `num_requeues` reports it;
- `shutdown()` refuses new adds and wakes idle workers; items already queued are still
  handed out, so workers drain the queue; `shutdown_with_drain()` also waits for items in
  flight to be `done()`. Delayed items not yet due are dropped.

Metrics are controller-runtime's `workqueue_*` series for this queue's name.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from jobset.runtime.metrics import RuntimeMetrics
from jobset.runtime.ratelimit import RateLimiter, default_controller_rate_limiter

__all__ = ["ShutDown", "WorkQueue"]

T = TypeVar("T", bound=Hashable)


class ShutDown(Exception):
    """`get()` on a queue that is shut down and empty: the worker should exit."""


class WorkQueue(Generic[T]):
    """A deduplicating, delaying, rate-limited queue of hashable items."""

    def __init__(
        self,
        name: str = "",
        *,
        rate_limiter: RateLimiter[T] | None = None,
        metrics: RuntimeMetrics | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.rate_limiter: RateLimiter[T] = rate_limiter or default_controller_rate_limiter()
        self._clock = clock
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._added_at: dict[T, float] = {}
        self._started_at: dict[T, float] = {}
        self._delayed: dict[T, tuple[float, asyncio.TimerHandle]] = {}
        self._getters: deque[asyncio.Future[None]] = deque()
        self._idle: asyncio.Event | None = None
        self._shutting_down = False
        self._metrics = metrics
        if metrics is not None:
            labels = (name, name)
            self._m_depth = metrics.workqueue_depth.labels(*labels)
            self._m_adds = metrics.workqueue_adds_total.labels(*labels)
            self._m_queue_dur = metrics.workqueue_queue_duration_seconds.labels(*labels)
            self._m_work_dur = metrics.workqueue_work_duration_seconds.labels(*labels)
            self._m_retries = metrics.workqueue_retries_total.labels(*labels)
            metrics.workqueue_unfinished_work_seconds.labels(*labels).set_function(
                self.unfinished_work_seconds
            )
            metrics.workqueue_longest_running_processor_seconds.labels(*labels).set_function(
                self.longest_running_processor_seconds
            )

    # ------------------------------------------------------------------ adding

    def add(self, item: T) -> None:
        if self._shutting_down or item in self._dirty:
            return
        if self._metrics is not None:
            self._m_adds.inc()
        self._dirty.add(item)
        self._added_at.setdefault(item, self._clock())
        if item in self._processing:
            return  # re-queued by done()
        self._queue.append(item)
        self._set_depth()
        self._wake_one()

    def add_after(self, item: T, delay: float) -> None:
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(item)
            return
        when = self._clock() + delay
        existing = self._delayed.get(item)
        if existing is not None:
            if existing[0] <= when:
                return
            existing[1].cancel()
        handle = asyncio.get_running_loop().call_later(delay, self._delay_expired, item)
        self._delayed[item] = (when, handle)

    def _delay_expired(self, item: T) -> None:
        self._delayed.pop(item, None)
        self.add(item)

    def add_rate_limited(self, item: T) -> None:
        if self._metrics is not None:
            self._m_retries.inc()
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: T) -> None:
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self.rate_limiter.num_requeues(item)

    # ------------------------------------------------------------------ processing

    async def get(self) -> T:
        """The next item, marked as processing; raises `ShutDown` once shut down and empty."""
        while not self._queue:
            if self._shutting_down:
                raise ShutDown(self.name)
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._getters.append(fut)
            try:
                await fut
            except asyncio.CancelledError:
                if fut.done() and not fut.cancelled():
                    self._wake_one()  # pass the wake-up on: we will not take the item
                raise
        item = self._queue.popleft()
        now = self._clock()
        added = self._added_at.pop(item, None)
        if self._metrics is not None and added is not None:
            self._m_queue_dur.observe(now - added)
        self._processing.add(item)
        self._started_at[item] = now
        self._dirty.discard(item)
        self._set_depth()
        return item

    def done(self, item: T) -> None:
        """Processing of `item` finished; if it was added meanwhile, queue it again."""
        self._processing.discard(item)
        started = self._started_at.pop(item, None)
        if self._metrics is not None and started is not None:
            self._m_work_dur.observe(self._clock() - started)
        if item in self._dirty:
            self._queue.append(item)
            self._set_depth()
            self._wake_one()
        if not self._processing and self._idle is not None:
            self._idle.set()

    # ------------------------------------------------------------------ shutdown

    def shutdown(self) -> None:
        """Refuse new adds, drop pending delayed adds, wake every idle worker."""
        self._shutting_down = True
        for _, handle in self._delayed.values():
            handle.cancel()
        self._delayed.clear()
        while self._getters:
            fut = self._getters.popleft()
            if not fut.done():
                fut.set_result(None)

    async def shutdown_with_drain(self, max_wait: float | None = None) -> bool:
        """Shut down, then wait until the queue is empty and nothing is in flight.

        Returns False if `max_wait` seconds passed first.
        """
        self.shutdown()
        loop = asyncio.get_running_loop()
        deadline = None if max_wait is None else loop.time() + max_wait
        while self._processing or self._queue:
            self._idle = asyncio.Event()
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                return False
            try:
                await asyncio.wait_for(self._idle.wait(), remaining)
            except TimeoutError:
                return False
        return True

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    # ------------------------------------------------------------------ introspection

    def __len__(self) -> int:
        return len(self._queue)

    @property
    def processing(self) -> frozenset[T]:
        return frozenset(self._processing)

    def waiting_delayed(self) -> int:
        return len(self._delayed)

    def unfinished_work_seconds(self) -> float:
        now = self._clock()
        return sum(now - t for t in self._started_at.values())

    def longest_running_processor_seconds(self) -> float:
        if not self._started_at:
            return 0.0
        return self._clock() - min(self._started_at.values())

    def _set_depth(self) -> None:
        if self._metrics is not None:
            self._m_depth.set(len(self._queue))

    def _wake_one(self) -> None:
        while self._getters:
            fut = self._getters.popleft()
            if not fut.done():
                fut.set_result(None)
                return
