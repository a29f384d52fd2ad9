"""The agent's retry delays: client-go's reflector backoff.

Every worker pod runs an agent, so an agent that retries at once multiplies one broken
answer of the API server by the number of pods. client-go's reflector waits between
list-and-watch attempts with `wait.NewExponentialBackoffManager(800ms, 30s, 2m, 2.0, 1.0)`:
an initial 0.8 s doubling up to 30 s, each delay stretched by a random factor in [1, 2)
(jitter 1.0), and back to 0.8 s once two minutes passed since the last backoff began (the
watch has been healthy that long). Hand-written: a few lines, and the agent keeps its
imports small (start-up time, `apiclient.py`).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Final

__all__ = ["Backoff"]

INITIAL: Final = 0.8
CAP: Final = 30.0
FACTOR: Final = 2.0
JITTER: Final = 1.0
RESET_AFTER: Final = 120.0


class Backoff:
    """`next()` is the delay before the next attempt (seconds)."""

    def __init__(
        self,
        initial: float = INITIAL,
        cap: float = CAP,
        factor: float = FACTOR,
        jitter: float = JITTER,
        reset_after: float = RESET_AFTER,
        clock: Callable[[], float] = time.monotonic,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.initial, self.cap, self.factor = initial, cap, factor
        self.jitter, self.reset_after = jitter, reset_after
        self.clock, self.rand = clock, rand
        self._base = initial
        self._last: float | None = None

    def next(self) -> float:
        now = self.clock()
        if self._last is not None and now - self._last > self.reset_after:
            self._base = self.initial
        self._last = now
        base = self._base
        self._base = min(base * self.factor, self.cap)
        return base + self.rand() * self.jitter * base

    def reset(self) -> None:
        """Start again from the initial delay (the attempt succeeded)."""
        self._base = self.initial
        self._last = None
