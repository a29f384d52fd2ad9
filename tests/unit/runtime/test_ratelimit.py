"""Rate limiters: client-go's defaults, with a fake clock where time matters."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from jobset.runtime.ratelimit import (
    HEAVY_BURST_FRACTION,
    USAGE_WINDOW,
    BucketRateLimiter,
    FairTokenBucket,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    TokenBucket,
    api_flow,
    default_controller_rate_limiter,
)
from tests.clock import FakeClock


def test_exponential_per_item_5ms_to_1000s() -> None:
    rl: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter()
    delays = [rl.when("a") for _ in range(20)]
    assert delays[:4] == pytest.approx([0.005, 0.01, 0.02, 0.04])
    assert delays[-1] == 1000.0
    assert all(b >= a for a, b in itertools.pairwise(delays))
    assert rl.when("b") == pytest.approx(0.005)  # per item
    assert rl.num_requeues("a") == 20
    rl.forget("a")
    assert rl.when("a") == pytest.approx(0.005)
    for _ in range(500):  # no overflow however long an item keeps failing
        rl.when("c")
    assert rl.when("c") == 1000.0


def test_token_bucket_burst_then_rate() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=10, burst=3, clock=clock)
    assert [bucket.reserve() for _ in range(3)] == [0, 0, 0]
    assert bucket.reserve() == pytest.approx(0.1)
    assert bucket.reserve() == pytest.approx(0.2)  # reservations queue up
    clock.now += 1.0
    assert bucket.reserve() == 0  # refilled (7 tokens worth, capped at burst)


def test_token_bucket_disabled() -> None:
    bucket = TokenBucket(qps=0, burst=0)
    assert all(bucket.reserve() == 0 for _ in range(1000))


def test_default_controller_rate_limiter_is_max_of_item_and_bucket() -> None:
    rl = default_controller_rate_limiter()
    assert isinstance(rl, MaxOfRateLimiter)
    # burst 100 keeps the bucket out of the way at first: the per-item backoff decides
    assert rl.when("x") == pytest.approx(0.005)
    assert rl.when("x") == pytest.approx(0.01)
    clock = FakeClock()
    limited: MaxOfRateLimiter[str] = MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.001, 1.0),
        BucketRateLimiter(TokenBucket(10, 1, clock=clock)),
    )
    assert limited.when("a") == pytest.approx(0.001)
    assert limited.when("b") == pytest.approx(0.1)  # the overall bucket dominates
    limited.forget("a")
    assert limited.num_requeues("a") == 0


async def test_cancelled_waits_give_their_tokens_back() -> None:
    # A flood of waiters that are then abandoned (cancelled reconciles, timed-out webhook
    # requests) must not leave the bucket in debt for requests that are never sent.
    bucket = TokenBucket(qps=1.0, burst=1)
    assert bucket.reserve() == 0.0  # the burst is spent
    waiters = [asyncio.create_task(bucket.wait()) for _ in range(30)]
    await asyncio.sleep(0)  # each has reserved its token and is sleeping
    for w in waiters:
        w.cancel()
    await asyncio.gather(*waiters, return_exceptions=True)
    # Only the one real reservation remains: the next caller waits about a second, not 31.
    assert bucket.reserve() <= 2.0


def test_refund_never_exceeds_the_burst() -> None:
    clock = FakeClock(0.0)
    bucket = TokenBucket(qps=1.0, burst=2, clock=clock)
    bucket.refund()
    bucket.refund()
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 1.0]


# FairTokenBucket: waiters served round-robin over flows (api_flow), not first come.


async def _take(bucket: FairTokenBucket, flow: str, order: list[str]) -> None:
    with api_flow(flow):
        await bucket.wait()
    order.append(flow)


async def test_fair_bucket_goes_at_once_while_tokens_last() -> None:
    bucket = FairTokenBucket(qps=1, burst=3)
    assert [await bucket.wait() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.waiting() == 0


async def test_a_new_flow_waits_behind_one_request_per_flow_not_the_big_backlog() -> None:
    bucket = FairTokenBucket(qps=500, burst=1)
    order: list[str] = []
    big = [asyncio.ensure_future(_take(bucket, "big", order)) for _ in range(40)]
    await asyncio.sleep(0)  # the big flow's 40 are in line first
    small = [asyncio.ensure_future(_take(bucket, "small", order)) for _ in range(3)]
    await asyncio.gather(*big, *small)
    # FIFO would serve "small" after all 40; round-robin alternates with the big flow.
    positions = [i for i, flow in enumerate(order) if flow == "small"]
    assert positions[-1] <= 7, order
    assert order.count("big") == 40 and bucket.waiting() == 0


async def test_requests_outside_any_flow_take_turns_as_one_flow() -> None:
    bucket = FairTokenBucket(qps=500, burst=1)
    order: list[str] = []
    big = [asyncio.ensure_future(_take(bucket, "big", order)) for _ in range(20)]
    await asyncio.sleep(0)

    async def no_flow() -> None:
        await bucket.wait()
        order.append("none")

    await asyncio.gather(*big, no_flow())
    assert order.index("none") <= 3, order


async def test_a_cancelled_waiter_leaves_the_line() -> None:
    bucket = FairTokenBucket(qps=50, burst=1)
    await bucket.wait()  # the burst is spent
    order: list[str] = []
    first = asyncio.ensure_future(_take(bucket, "a", order))
    second = asyncio.ensure_future(_take(bucket, "b", order))
    await asyncio.sleep(0)
    assert bucket.waiting() == 2
    first.cancel()
    await asyncio.gather(first, return_exceptions=True)
    assert bucket.waiting() == 1
    await second
    assert order == ["b"]


async def test_the_long_run_rate_is_the_buckets() -> None:
    clock_start = asyncio.get_running_loop().time()
    bucket = FairTokenBucket(qps=200, burst=1)
    order: list[str] = []
    await asyncio.gather(*(_take(bucket, f"f{i % 3}", order) for i in range(21)))
    # 20 tokens beyond the burst at 200/s cannot come in under 0.1 s.
    assert asyncio.get_running_loop().time() - clock_start >= 0.095
    assert sorted(order) == sorted(f"f{i % 3}" for i in range(21))


# FairTokenBucket's headroom: the burst but its top tenth. Only light flows may spend it; a
# heavy flow gets the top tenth, then tokens as they accrue.


async def _backlogged(
    bucket: FairTokenBucket, flow: str, count: int, order: list[str]
) -> list[asyncio.Task[None]]:
    """`count` requests of `flow`, started and run until the flow waits in line."""
    tasks = [asyncio.ensure_future(_take(bucket, flow, order)) for _ in range(count)]
    await asyncio.sleep(0)
    assert bucket.waiting() > 0
    return tasks


async def test_a_light_flow_goes_at_once_past_a_heavy_backlog() -> None:
    bucket = FairTokenBucket(qps=500, burst=100)
    assert (bucket.heavy_burst, bucket.headroom) == (10, 90)
    order: list[str] = []
    big = await _backlogged(bucket, "big", 300, order)
    # The big flow took the burst down to the headroom and waits above it.
    assert 9 <= order.count("big") <= 11 and bucket.heavy("big")
    with api_flow("small"):
        waited = await asyncio.gather(*(bucket.wait() for _ in range(3)))
    # Round-robin alone would have alternated these with the big flow's 210 waiters.
    assert waited == [0.0, 0.0, 0.0]
    assert not bucket.heavy("small")
    for task in big:
        task.cancel()
    await asyncio.gather(*big, return_exceptions=True)


async def test_light_flows_cannot_starve_a_heavy_one() -> None:
    bucket = FairTokenBucket(qps=1000, burst=100)
    order: list[str] = []
    big = await _backlogged(bucket, "big", 150, order)
    del order[:]
    # 20 light flows of 5 requests each: more than the headroom, so they wait in line too,
    # and then every flow - the heavy one included - takes its turn at each token.
    light = [
        asyncio.ensure_future(_take(bucket, f"light{i}", order))
        for i in range(20)
        for _ in range(5)
    ]
    await asyncio.gather(*light)
    assert order.count("big") >= 3, order
    await asyncio.gather(*big)


async def test_headroom_spent_by_light_flows_is_refilled_before_a_heavy_flow_gets_more() -> None:
    # The long-run rate stays the bucket's: 20 beyond the burst of 20 at 200/s take >= 0.1 s.
    loop = asyncio.get_running_loop()
    start = loop.time()
    bucket = FairTokenBucket(qps=200, burst=20)
    order: list[str] = []
    big = await _backlogged(bucket, "big", 30, order)
    light = [asyncio.ensure_future(_take(bucket, f"light{i}", order)) for i in range(10)]
    await asyncio.gather(*big, *light)
    assert loop.time() - start >= 0.095
    assert len(order) == 40


async def test_a_flows_use_is_forgotten_over_the_usage_window() -> None:
    clock = FakeClock(0.0)
    bucket = FairTokenBucket(qps=1, burst=100, clock=clock)
    with api_flow("a"):
        assert [await bucket.wait() for _ in range(10)] == [0.0] * 10
    assert bucket.heavy("a") and not bucket.heavy("b")
    clock.now += 3 * USAGE_WINDOW  # 10 tokens decay to 0.5
    assert not bucket.heavy("a")


async def test_a_heavy_flow_does_not_spend_the_burst_at_once() -> None:
    # A big pass with a full bucket: its first tenth goes at once (it is light until then),
    # the rest at the bucket's rate. Spending the burst at once queued 450 creations in the
    # API server ahead of every other client's requests.
    bucket = FairTokenBucket(qps=100, burst=100)
    order: list[str] = []
    big = await _backlogged(bucket, "big", 100, order)
    assert 10 <= order.count("big") <= 11
    await asyncio.sleep(0.1)  # about 10 more tokens accrue
    assert 15 <= order.count("big") <= 25, order.count("big")
    for task in big:
        task.cancel()
    await asyncio.gather(*big, return_exceptions=True)
    assert bucket.waiting() == 0


async def test_a_small_burst_has_no_headroom() -> None:
    # Below 10 tokens of burst there is nothing to hold back: plain round-robin, and a flow
    # that took the whole burst still goes as soon as a token is there.
    small = FairTokenBucket(qps=500, burst=9)
    assert (small.headroom, small.heavy_burst) == (0, 0)
    with api_flow("a"):
        assert [await small.wait() for _ in range(9)] == [0.0] * 9
        assert not small.heavy("a")
        assert await asyncio.wait_for(small.wait(), 1.0) < 0.1
    big = FairTokenBucket(qps=500, burst=500)
    assert big.heavy_burst == int(500 * HEAVY_BURST_FRACTION)
    assert big.headroom == 500 - big.heavy_burst
