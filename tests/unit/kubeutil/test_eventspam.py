"""kubeutil.eventspam.SpamFilter: client-go's token bucket per event source and object."""

from __future__ import annotations

from kubeutil.eventspam import SpamFilter
from tests.clock import FakeClock


def test_token_bucket_refills_at_qps_up_to_burst() -> None:
    f = SpamFilter(burst=2, qps=1.0, cache_size=2)
    assert f.allow("a", 0.0) and f.allow("a", 0.0)
    assert not f.allow("a", 0.5)
    assert f.allow("a", 1.0)
    f.allow("b", 1.0)
    f.allow("c", 1.0)  # evicts "a": a forgotten key starts full again
    assert f.allow("a", 1.0) and f.allow("a", 1.0)


def test_forgets_the_least_recently_used_keys() -> None:
    clock = FakeClock()
    spam = SpamFilter(burst=1, cache_size=2, clock=clock)
    assert spam.allow("a") and not spam.allow("a")
    assert spam.allow("b") and spam.allow("c")  # "a" is forgotten: a full bucket again
    assert spam.allow("a") and not spam.allow("c")


def test_time_comes_from_the_clock_unless_given() -> None:
    clock = FakeClock(now=0.0)
    spam = SpamFilter(burst=1, qps=1.0, clock=clock)
    assert spam.allow("a") and not spam.allow("a")
    clock.now = 1.0
    assert spam.allow("a")
    assert spam.allow("a", now=2.0)  # a caller's own time base wins
