"""Short garbage-collector pauses for a long-running asyncio process: survivors of each full
collection are frozen.

Go's collector runs beside the program; CPython 3.11's stops the one event loop for each
collection, and a full one walks every tracked object. A simulated API server storing tens
of thousands of Jobs, or a controller caching them, then pauses for long enough to answer
nobody meanwhile, which shows up as every other client's latency.

`GcFreezer` freezes (`gc.freeze()`) what survives each full collection, so the next walks
only what was created since. A frozen object is still freed
as soon as its reference count drops - the store's objects are acyclic JSON, replaced or
deleted whole - but a reference cycle that was alive at a freeze (an in-flight request's
objects) is never examined again. So every `reclaim_seconds` (10 minutes) `reclaim()`
unfreezes everything and collects once: one full pause, rarely, instead of one every few
seconds. Used by the processes that own their heap - `jobset controller`, `jobset sim`,
`jobset dev` - not by a manager or `SimCluster` inside someone else's process (a test's).

With survivors frozen, a full collection costs what survived since the previous one, so
the freezer also makes full collections more frequent: every `FULL_EVERY` (2) collections
of the middle generation instead of CPython's 10. The same objects are walked once each,
in shorter pauses (docs/decisions/0002-gc-freezing.md).
"""

from __future__ import annotations

import asyncio
import gc
from typing import Any, Final

__all__ = ["FULL_EVERY", "RECLAIM_SECONDS", "GcCallback", "GcFreezer"]

RECLAIM_SECONDS: Final = 600.0
# A full collection every this many middle-generation ones (CPython's default is 10).
FULL_EVERY: Final = 2


class GcCallback:
    """A `gc.callbacks` entry that can be installed and removed (idempotently)."""

    def __init__(self) -> None:
        self._installed = False

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        raise NotImplementedError

    def install(self) -> None:
        if not self._installed:
            gc.callbacks.append(self._callback)
            self._installed = True

    def uninstall(self) -> None:
        if self._installed:
            gc.callbacks.remove(self._callback)
            self._installed = False


class GcFreezer(GcCallback):
    """Freezes the survivors of every full collection once installed; `run()` reclaims
    every `reclaim_seconds`."""

    def __init__(
        self, reclaim_seconds: float = RECLAIM_SECONDS, full_every: int = FULL_EVERY
    ) -> None:
        super().__init__()
        if full_every < 1:
            raise ValueError(f"full_every must be at least 1, not {full_every}")
        self.reclaim_seconds = reclaim_seconds
        self.full_every = full_every
        self.freezes = 0  # full collections whose survivors were frozen
        self.reclaims = 0
        self._thresholds: tuple[int, int, int] | None = None  # to restore on uninstall

    def install(self) -> None:
        """Freeze after every full collection, and collect fully every `full_every`
        middle-generation collections."""
        if self._thresholds is None:
            self._thresholds = gc.get_threshold()
            young, middle, _ = self._thresholds
            gc.set_threshold(young, middle, self.full_every)
        super().install()

    def uninstall(self) -> None:
        """Stop freezing; the collector's thresholds are what they were before."""
        super().uninstall()
        if self._thresholds is not None:
            gc.set_threshold(*self._thresholds)
            self._thresholds = None

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "stop" and info.get("generation") == 2:
            gc.freeze()
            self.freezes += 1

    def collect_and_freeze(self) -> None:
        """A full collection now, whose survivors the callback freezes: for after start-up,
        when the imports and the cluster's components are what the heap holds."""
        gc.collect()

    def reclaim(self) -> int:
        """Unfreeze everything and collect it once (the survivors are frozen again by the
        callback); returns the objects collected."""
        gc.unfreeze()
        collected = gc.collect()
        self.reclaims += 1
        return collected

    def report(self) -> dict[str, Any]:
        """What `/debug/gc` of `jobset sim` shows."""
        return {
            "freezes": self.freezes,
            "reclaims": self.reclaims,
            "frozenObjects": gc.get_freeze_count(),
            "thresholds": list(gc.get_threshold()),
            "collections": [g["collections"] for g in gc.get_stats()],
        }

    async def run(self) -> None:
        """Reclaim every `reclaim_seconds`, until cancelled."""
        while True:
            await asyncio.sleep(self.reclaim_seconds)
            self.reclaim()
