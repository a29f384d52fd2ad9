"""Garbage-collector pauses, measured.

CPython's cyclic collector stops the one event loop for as long as a collection takes, and a
full (generation 2) collection walks every tracked object of the process. The controller's
heap is mostly what never dies - imported modules (kubernetes_asyncio's models alone are
tens of thousands of objects) and the informer caches filled at start-up - so each full
collection re-walks it, on the loop every webhook answer and lease renewal waits for.

`GcPauses` times every collection from `gc.callbacks` into `python_gc_duration_seconds`
(by generation; Go binaries export `go_gc_duration_seconds` the same way). What keeps the
pauses short is `kubeutil.gcfreeze`, which the manager uses in a process of its own
(`ManagerOptions.gc_freeze`, set by `jobset controller`).
"""

from __future__ import annotations

import time
from typing import Any

from prometheus_client import Histogram

from kubeutil.gcfreeze import GcCallback

__all__ = ["GcPauses"]


class GcPauses(GcCallback):
    """Observes every garbage collection's duration into `histogram` (label generation)."""

    def __init__(self, histogram: Histogram) -> None:
        super().__init__()
        self.histogram = histogram
        self._started = 0.0
        self.max_pause = 0.0  # the longest seen, for logs and tests

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        pause = time.perf_counter() - self._started
        self.max_pause = max(self.max_pause, pause)
        self.histogram.labels(str(info.get("generation", ""))).observe(pause)
