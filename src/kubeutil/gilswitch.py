"""A short interpreter-lock switch interval for an asyncio process that also runs CPU-bound
work in worker threads.

The controller plans a tenant-sized JobSet (thousands of Jobs, or of failure-rule
patterns) in a worker thread so that its event loop keeps serving everyone else
(`jobset_controller.PLAN_IN_THREAD_JOBS`); the simulated API server handles large request
bodies in worker threads (a large JobSet's validation and managedFields). But the loop
gives the interpreter lock away at every socket call and every `select`, and while such a
thread is runnable the loop then waits for the lock to come back: up to one switch interval
(`sys.getswitchinterval()`, 5 ms by default) per call. A request that crosses a dozen socket
calls on a loop - an admission review, a Job create - so took much longer whenever a
large JobSet was being planned or stored: the convoy effect of the GIL
(docs/decisions/0003-plan-in-a-thread.md).

A shorter interval bounds that wait; the worker thread pays a few more lock handoffs, which
is little next to what it saves the loop. The interval is process-wide state, so only a process that owns its interpreter sets
it - `jobset controller` and `jobset dev` through `ManagerOptions.switch_interval`, `jobset
sim` around its serving - never a manager or a `SimCluster` inside someone else's process (a
test's), and the previous value is restored on exit.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Final

__all__ = ["LOOP_SWITCH_INTERVAL", "favour_the_loop"]

LOOP_SWITCH_INTERVAL: Final = 0.0005  # seconds


@contextlib.contextmanager
def favour_the_loop(interval: float = LOOP_SWITCH_INTERVAL) -> Iterator[float]:
    """Run the body with the interpreter's switch interval set to `interval` (seconds);
    yields the previous interval, which is restored on exit."""
    if not interval > 0:
        raise ValueError(f"switch interval: must be a positive number of seconds, not {interval}")
    previous = sys.getswitchinterval()
    sys.setswitchinterval(interval)
    try:
        yield previous
    finally:
        sys.setswitchinterval(previous)
