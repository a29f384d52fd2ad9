"""Rate limiters: the client's token bucket and the workqueue's per-item limiters.

Mirrors client-go: `flowcontrol.NewTokenBucketRateLimiter` (QPS/burst for every request)
and `workqueue.DefaultControllerRateLimiter()` = max(per-item exponential 5 ms → 1000 s,
overall bucket of 10 qps / burst 100).

Hand-written rather than taken from a library (aiolimiter and friends) because the workqueue
needs *reservation* semantics - `when(item)` must return how long to wait and commit the
token now, like golang.org/x/time/rate's `Reserve()` - which the asyncio limiters on PyPI do
not expose; the bucket is a dozen lines.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Hashable
from typing import Protocol, TypeVar

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "TokenBucket",
    "default_controller_rate_limiter",
]

Clock = Callable[[], float]
T = TypeVar("T", bound=Hashable)
T_contra = TypeVar("T_contra", bound=Hashable, contravariant=True)


class TokenBucket:
    """A token bucket refilled at `qps` tokens per second, holding at most `burst`.

    `reserve()` always takes a token, letting the balance go negative, and returns how long
    the caller must wait for it: callers are served in order and the long-run rate is `qps`.
    `qps <= 0` disables limiting.
    """

    def __init__(self, qps: float, burst: int, clock: Clock = time.monotonic) -> None:
        if qps > 0 and burst < 1:
            raise ValueError("burst must be at least 1 when qps is set")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()

    def reserve(self) -> float:
        """Take one token; return the delay (seconds) until it is really available."""
        if self.qps <= 0:
            return 0.0
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def refund(self) -> None:
        """Give back the token of a reservation that will not be used.

        A waiter that is cancelled (its reconcile was cancelled, its webhook request timed
        out) must not keep its token: otherwise a burst of abandoned waits pushes the
        balance far below zero and every later caller waits for requests never sent
        (golang.org/x/time/rate's `Reservation.Cancel` restores tokens the same way).
        """
        if self.qps > 0:
            self._tokens = min(float(self.burst), self._tokens + 1.0)

    async def wait(self) -> float:
        """Take a token, sleeping until it is available; returns the time waited.

        Cancelled while sleeping: the token is refunded.
        """
        delay = self.reserve()
        if delay > 0:
            try:
                await asyncio.sleep(delay)
            except asyncio.CancelledError:
                self.refund()
                raise
        return delay


class RateLimiter(Protocol[T_contra]):
    """client-go's `workqueue.TypedRateLimiter`."""

    def when(self, item: T_contra) -> float:
        """How long to wait before `item` may be processed again (records a failure)."""
        ...

    def forget(self, item: T_contra) -> None:
        """Stop tracking `item` (it succeeded)."""
        ...

    def num_requeues(self, item: T_contra) -> int:
        """How many failures `item` has had since it was last forgotten."""
        ...


class ItemExponentialFailureRateLimiter(RateLimiter[T]):
    """base * 2^failures, capped at `max_delay`; per item."""

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._failures: dict[T, int] = {}

    def when(self, item: T) -> float:
        exp = self._failures.get(item, 0)
        self._failures[item] = exp + 1
        if exp > 64:  # 2**64 * base overflows any sane cap: don't compute it
            return self.max_delay
        return min(self.base_delay * 2.0**exp, self.max_delay)

    def forget(self, item: T) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: T) -> int:
        return self._failures.get(item, 0)


class BucketRateLimiter(RateLimiter[T]):
    """An overall token bucket shared by all items (not per item)."""

    def __init__(self, bucket: TokenBucket) -> None:
        self.bucket = bucket

    def when(self, item: T) -> float:
        return self.bucket.reserve()

    def forget(self, item: T) -> None:
        return None

    def num_requeues(self, item: T) -> int:
        return 0


class MaxOfRateLimiter(RateLimiter[T]):
    """The longest delay of several limiters (every limiter sees every call)."""

    def __init__(self, *limiters: RateLimiter[T]) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self.limiters = limiters

    def when(self, item: T) -> float:
        return max(limiter.when(item) for limiter in self.limiters)

    def forget(self, item: T) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def default_controller_rate_limiter(
    base_delay: float = 0.005,
    max_delay: float = 1000.0,
    qps: float = 10.0,
    burst: int = 100,
) -> MaxOfRateLimiter[Hashable]:
    """client-go's DefaultControllerRateLimiter, with its numbers as defaults."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(base_delay, max_delay),
        BucketRateLimiter(TokenBucket(qps, burst)),
    )
