"""Rate limiters: the client's token bucket and the workqueue's per-item limiters.

Mirrors client-go: `flowcontrol.NewTokenBucketRateLimiter` (QPS/burst for every request)
and `workqueue.DefaultControllerRateLimiter()` = max(per-item exponential 5 ms → 1000 s,
overall bucket of 10 qps / burst 100).

Hand-written rather than taken from a library (aiolimiter and friends) because the workqueue
needs *reservation* semantics - `when(item)` must return how long to wait and commit the
token now, like golang.org/x/time/rate's `Reserve()` - which the asyncio limiters on PyPI do
not expose, and the client's bucket must be fair between reconciles, which none offers.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import Final, Protocol, TypeVar

__all__ = [
    "HEAVY_BURST_FRACTION",
    "USAGE_WINDOW",
    "BucketRateLimiter",
    "FairTokenBucket",
    "ItemExponentialFailureRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "TokenBucket",
    "api_flow",
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
        self._refill()
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def _refill(self) -> float:
        """Add what has accrued since the last call (up to `burst`); the balance now."""
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        return self._tokens

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


# Which flow the requests of the running task belong to (a reconcile's request key; None for
# everything else: informers, status probes). Tasks started inside inherit it.
_FLOW: contextvars.ContextVar[Hashable] = contextvars.ContextVar("api_flow", default=None)


@contextmanager
def api_flow(flow: Hashable) -> Iterator[None]:
    """Count the API requests made inside (and in tasks started inside) as `flow`'s."""
    token = _FLOW.set(flow)
    try:
        yield
    finally:
        _FLOW.reset(token)


# The share of the burst a heavy flow may spend at once, which is also how many tokens make a
# flow heavy (`FairTokenBucket`); and how long a flow's use of the bucket is remembered
# (seconds; exponential decay).
HEAVY_BURST_FRACTION: Final = 0.1
USAGE_WINDOW: Final = 1.0


def _decayed(used: float, at: float, now: float) -> float:
    """A flow's token count `used` as of `at`, decayed to `now` over `USAGE_WINDOW`."""
    return used * math.exp((at - now) / USAGE_WINDOW)


class FairTokenBucket(TokenBucket):
    """A token bucket whose waiters are served round-robin over flows, not first come, and
    that keeps some headroom for light flows.

    With a plain bucket, a large JobSet's parallel creations keep their reservations ahead of
    everyone, so another tenant's creations wait behind all of them on every request - for as
    long as the big one creates. Here a request that finds tokens and
    nobody waiting goes at once, as before; otherwise it joins its flow's line (`api_flow`,
    the reconcile's key), and one dispatcher hands out each token as it comes to the next
    flow in turn: a flow that just arrived waits behind one request per active flow, not
    behind the big flow's backlog.

    Round-robin alone still makes a small pass pay for the big one: its 3 parallel creations
    alternate with the big flow's, where an idle bucket costs none. So the bucket is kept for light flows - those that took fewer than
    `heavy_burst` tokens (a tenth of the burst) in about the last `USAGE_WINDOW` seconds
    (decaying count) - but for its top `heavy_burst` tokens: a heavy flow is served only
    while the balance stays above the `headroom` below them, a light one whenever a token is
    there. A backlogged big flow then runs at the bucket's rate with the headroom full, and a
    small pass goes at once. The long-run rate is the bucket's, as before: the headroom a
    light flow spends is refilled before a heavy flow gets a token. Once light flows have
    spent the headroom and wait as well, every flow in line takes its turn at each token,
    heavy ones included, so none starves. This is the client-side counterpart of the API
    server's priority and fairness (whose fair queuing also serves a flow with little recent
    use sooner); client-go's bucket is plain FIFO.

    A heavy flow does not get the burst either: spent at once, it would put a large JobSet's
    creations in flight at the API server together, and every other client's requests would
    take their turn among them there, where this bucket's fairness no longer reaches. Paced
    at `qps` from its first `heavy_burst` tokens on, it has few requests in flight. Requests are ordered here, fairly, only while they have not been sent: once at
    the API server, they are served in turn with everyone else's.
    """

    def __init__(self, qps: float, burst: int, clock: Clock = time.monotonic) -> None:
        super().__init__(qps, burst, clock)
        # Below 10 tokens of burst nothing is held back: plain round-robin, every flow light.
        self.heavy_burst = int(burst * HEAVY_BURST_FRACTION)
        self.headroom = burst - self.heavy_burst if self.heavy_burst else 0
        self._lines: OrderedDict[Hashable, deque[asyncio.Future[None]]] = OrderedDict()
        self._dispatcher: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        # flow -> (tokens taken, decayed to `at`, at)
        self._usage: dict[Hashable, tuple[float, float]] = {}
        self._prune_at = 1024

    def waiting(self) -> int:
        """Requests waiting for a token now."""
        return sum(len(line) for line in self._lines.values())

    def heavy(self, flow: Hashable) -> bool:
        """Whether `flow` took `heavy_burst` tokens or more lately: it may not use the
        headroom."""
        if not self.heavy_burst:
            return False
        used, at = self._usage.get(flow, (0.0, 0.0))
        return _decayed(used, at, self._clock()) >= self.heavy_burst

    def _take(self, flow: Hashable) -> None:
        self._tokens -= 1.0
        now = self._clock()
        used, at = self._usage.get(flow, (0.0, now))
        self._usage[flow] = (_decayed(used, at, now) + 1.0, now)
        if len(self._usage) > self._prune_at:  # forget flows whose use has decayed away
            self._usage = {
                f: (u, t) for f, (u, t) in self._usage.items() if _decayed(u, t, now) >= 0.5
            }
            self._prune_at = max(1024, 2 * len(self._usage))

    async def wait(self) -> float:
        if self.qps <= 0:
            return 0.0
        flow = _FLOW.get()
        heavy = self.heavy(flow)
        # At once when nobody it should queue behind waits: for a heavy flow, nobody at all;
        # for a light one, no other light flow (the heavy ones wait above the headroom).
        if self._refill() >= (self.headroom + 1.0 if heavy else 1.0) and not (
            self._lines if heavy else self._light_waiting()
        ):
            self._take(flow)
            return 0.0
        t0 = self._clock()
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._lines.setdefault(flow, deque()).append(fut)
        if self._dispatcher is None or self._dispatcher.done():
            self._wake = asyncio.Event()  # bound to the running loop on first use
            self._dispatcher = asyncio.create_task(self._dispatch(), name="api token dispatcher")
        elif not heavy and self._wake is not None:
            self._wake.set()  # it may be sleeping for the headroom, which this flow may use
        try:
            await fut
        except asyncio.CancelledError:
            if fut.cancelled():
                self._forget(fut)  # never granted: nothing to give back
            else:
                self.refund()  # granted, then cancelled before it was used
            raise
        return self._clock() - t0

    def _forget(self, fut: asyncio.Future[None]) -> None:
        for flow, line in self._lines.items():
            if fut in line:
                line.remove(fut)
                if not line:
                    del self._lines[flow]
                return

    def _light_waiting(self) -> bool:
        return any(not self.heavy(flow) for flow in self._lines)

    def _pop(self, flow: Hashable) -> asyncio.Future[None]:
        """The head of `flow`'s line; the flow goes to the back (or leaves, line empty)."""
        line = self._lines[flow]
        fut = line.popleft()
        if line:
            self._lines.move_to_end(flow)
        else:
            del self._lines[flow]
        return fut

    async def _dispatch(self) -> None:
        while self._lines:
            # Only heavy flows wait: they leave the headroom alone. A light one waits too: the
            # headroom is spent, and every flow in line takes its turn at each token.
            need = 1.0 if self._light_waiting() else self.headroom + 1.0
            balance = self._refill()
            if balance < need:
                # Sleep until the token accrues, or until a light flow joins the lines.
                wake = self._wake
                assert wake is not None  # set before this task was created
                wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), (need - balance) / self.qps)
                continue
            flow = next(iter(self._lines))
            fut = self._pop(flow)
            if not fut.done():  # a waiter cancelled in line is skipped
                self._take(flow)
                fut.set_result(None)


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
