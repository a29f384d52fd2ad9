"""Event-loop lag: how late the one asyncio loop runs what is due.

Every reconcile, webhook answer, probe and lease renewal of the process shares one event
loop, so a pass that computes for a long time without awaiting delays all of them - the
way one tenant could stall every namespace. Nothing else shows it: reconcile durations
measure only the reconcile that blocked, not the ones it held up. This task sleeps for
`interval` and records how much later than asked it woke (`asyncio_event_loop_lag_seconds`),
which is the delay anything due at that moment suffered. The alert
`JobSetControllerEventLoopLagHigh` fires on its p99.
"""

from __future__ import annotations

import asyncio
import time

from prometheus_client import Histogram

from jobset.runtime.logging import get_logger
from kubeutil.aio import cancel_and_wait

__all__ = ["LoopLagMonitor"]


class LoopLagMonitor:
    """Samples the loop's lag every `interval` seconds into `histogram`."""

    # A lag above this is logged (at most once per `LOG_EVERY` seconds).
    WARN_AT = 0.1
    LOG_EVERY = 10.0

    def __init__(self, histogram: Histogram, interval: float = 0.25) -> None:
        self.histogram = histogram
        self.interval = interval
        self.log = get_logger("event-loop")
        self._logged_at = -self.LOG_EVERY
        self.max_lag = 0.0  # the largest lag seen, for logs and tests
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="event loop lag")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)

    async def _run(self) -> None:
        while True:
            t0 = time.perf_counter()
            await asyncio.sleep(self.interval)
            lag = max(0.0, time.perf_counter() - t0 - self.interval)
            self.max_lag = max(self.max_lag, lag)
            self.histogram.observe(lag)
            if lag > self.WARN_AT and t0 - self._logged_at >= self.LOG_EVERY:
                self._logged_at = t0
                self.log.warning("event loop blocked", lag_seconds=round(lag, 3))
