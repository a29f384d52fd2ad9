"""A pass's share of a reconcile worker: long creations give the worker back when others wait.

The JobSet controller runs `--concurrency` reconcile workers over one work queue, and one
pass of a JobSet creates every Job it misses, so a large JobSet holds its worker until all
are created; with as many large JobSets as workers, every other tenant's JobSet - three Jobs in
another namespace - waits in the queue until one of them has created all of its Jobs.

`CreationSlice` wraps the Jobs a pass is about to create. It hands them out as usual, but
once the pass has been creating for `seconds` and another key is waiting in the queue, it
stops: the pass ends, the JobSet is queued again at the back (behind whoever waits), and the
next pass plans the Jobs still missing (names are deterministic, so nothing is created
twice). The work queue's FIFO order then makes the workers rotate over the waiting JobSets:
fair queueing at the granularity of a time slice, with no cost when nobody waits (a large
JobSet alone is never cut: re-planning it would be wasted).

A cut pass is planned again, and a plan costs in proportion to the Jobs that exist, while
the event loop shares the interpreter with it and every other tenant's requests slow. With
a fixed slice a large JobSet would be re-planned over and over, and other tenants' requests
would wait behind those plans. So a pass's slice lasts at least `PLAN_SLICE_RATIO` times as
long as its own plan took (`slice_seconds`, at most `MAX_PLAN_SLICE_SECONDS`): re-planning stays
a small share of a large JobSet's turn, and a small JobSet keeps the base slice
(docs/decisions/0005-creation-slice.md).

Upstream creates all Jobs of a pass at once and has the same head-of-line blocking; its
controller-runtime queue has no fairness between objects either.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import Final, Generic, TypeVar

__all__ = [
    "DEFAULT_SLICE_SECONDS",
    "MAX_PLAN_SLICE_SECONDS",
    "PLAN_SLICE_RATIO",
    "CreationSlice",
    "slice_seconds",
]

T = TypeVar("T")

# A waiting JobSet starts at most this long after it was queued behind busy workers (plus
# the pass that is cut: one request round trip of each worker's in-flight creations).
DEFAULT_SLICE_SECONDS: Final = 0.5
# ... and a pass's slice lasts at least this many times as long as its plan took,
PLAN_SLICE_RATIO: Final = 50
# ... but that stretch goes no further than this (a plan slowed by something else - a
# starved CPU - must not let one JobSet keep a worker from the others for a minute).
MAX_PLAN_SLICE_SECONDS: Final = 10.0


def slice_seconds(base: float, plan_seconds: float) -> float:
    """The time slice of a pass whose plan took `plan_seconds`: `base`, or
    `PLAN_SLICE_RATIO` times the plan's time when that is longer, up to
    `MAX_PLAN_SLICE_SECONDS`; 0 (never cut) stays 0."""
    if base <= 0:
        return base
    return max(base, min(MAX_PLAN_SLICE_SECONDS, PLAN_SLICE_RATIO * plan_seconds))


class CreationSlice(Generic[T], Iterator[T]):
    """An iterator over `items` that ends early once its time slice is spent and
    `others_waiting()` says another key is queued; `cut` tells whether it did."""

    __slots__ = ("_clock", "_deadline", "_it", "_others_waiting", "_seconds", "cut", "taken")

    def __init__(
        self,
        items: Iterable[T],
        *,
        seconds: float,
        others_waiting: Callable[[], bool],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._it = iter(items)
        self._seconds = seconds
        self._others_waiting = others_waiting
        self._clock = clock
        self._deadline: float | None = None
        self.cut = False
        self.taken = 0

    def __iter__(self) -> CreationSlice[T]:
        return self

    def __next__(self) -> T:
        if self.cut:
            raise StopIteration
        now = self._clock()
        if self._deadline is None:
            self._deadline = now + self._seconds
        elif self._seconds > 0 and now >= self._deadline and self._others_waiting():
            self.cut = True
            raise StopIteration
        item = next(self._it)
        self.taken += 1
        return item
