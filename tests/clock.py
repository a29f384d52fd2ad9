"""A clock for tests of code that takes `clock: Callable[[], float]` (expectations, TTL
caches, rate limiters, leader election): it stands still until the test moves it."""

from __future__ import annotations


class FakeClock:
    """Monotonic seconds that change only when the test sets or adds to `now`."""

    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
