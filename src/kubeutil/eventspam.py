"""client-go's event spam filter (`EventSourceObjectSpamFilter`, tools/record/events_cache.go).

Both the controller's event recorder and the simulated components' event sink put it in front
of their writes: a token bucket per source and involved object, burst 25 then one event per
5 minutes, for the 4096 most recently used keys. An object failing in a loop then costs the
API server at most a burst of events and a trickle after it, whatever its reasons and messages.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Final

__all__ = ["SPAM_BURST", "SPAM_CACHE_SIZE", "SPAM_QPS", "SpamFilter"]

# client-go's defaults: defaultSpamBurst, defaultSpamQPS, maxLruCacheEntries.
SPAM_BURST: Final = 25
SPAM_QPS: Final = 1.0 / 300.0
SPAM_CACHE_SIZE: Final = 4096


@dataclass
class _Bucket:
    tokens: float
    at: float


class SpamFilter:
    """A token bucket per key: `allow(key)` takes a token, refilled at `qps` up to `burst`.

    Buckets of the `cache_size` most recently used keys are kept; a forgotten key starts with
    a full bucket again, as in client-go's LRU. `now` defaults to `clock()` (a caller with its
    own time base, such as the simulator's scaled clock, passes it).
    """

    def __init__(
        self,
        *,
        burst: int = SPAM_BURST,
        qps: float = SPAM_QPS,
        cache_size: int = SPAM_CACHE_SIZE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.burst = burst
        self.qps = qps
        self.cache_size = cache_size
        self.clock = clock
        self._buckets: OrderedDict[Hashable, _Bucket] = OrderedDict()

    def allow(self, key: Hashable, now: float | None = None) -> bool:
        if now is None:
            now = self.clock()
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(float(self.burst), now)
            while len(self._buckets) > self.cache_size:
                self._buckets.popitem(last=False)
        else:
            elapsed = max(0.0, now - bucket.at)
            bucket.tokens = min(float(self.burst), bucket.tokens + elapsed * self.qps)
            bucket.at = now
            self._buckets.move_to_end(key)
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return True
        return False
