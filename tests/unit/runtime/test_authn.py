"""The pure parts of the secure metrics endpoint's delegated auth: parsing the bearer token
as kube-apiserver does, and the bounded TTL cache that keeps scrapes from costing API calls."""

from __future__ import annotations

import pytest

from jobset.runtime.authn import bearer_token
from jobset.runtime.reviews import TTLCache
from tests.clock import FakeClock


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer abc", "abc"),
        ("bearer abc", "abc"),  # the scheme is case-insensitive
        ("BEARER abc", "abc"),
        ("  Bearer abc  ", "abc"),  # the header is trimmed
        ("Bearer abc extra", "abc"),  # what follows a second space is ignored
        ("Bearer a.b-c_d~e+f/g=", "a.b-c_d~e+f/g="),
    ],
    ids=[
        "bearer",
        "scheme lower case",
        "scheme upper case",
        "header trimmed",
        "extra after a space ignored",
        "token68 characters",
    ],
)
def test_bearer_token_accepted(header: str, token: str) -> None:
    assert bearer_token(header) == token


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "   ",
        "Bearer",  # no token
        "Bearer ",  # empty token (trimmed away)
        "Bearer  abc",  # two spaces: the token is the empty string between them
        "Basic YWxhZGRpbjpvcGVuc2VzYW1l",  # another scheme
        "Token abc",
        "Bearerabc",
        "abc",
    ],
)
def test_bearer_token_rejected(header: str | None) -> None:
    assert bearer_token(header) is None


def test_entries_expire_after_their_own_ttl() -> None:
    clock = FakeClock(1000.0)
    cache: TTLCache[str, bool] = TTLCache(10, clock)
    cache.put("allowed", True, 300)
    cache.put("denied", False, 30)
    clock.now += 29.9
    assert cache.get("allowed") is True and cache.get("denied") is False
    clock.now += 0.1
    assert cache.get("denied") is None  # expired at exactly its ttl
    assert cache.get("allowed") is True
    clock.now += 270
    assert cache.get("allowed") is None
    assert len(cache) == 0  # expired entries are dropped when met


def test_putting_again_restarts_the_ttl() -> None:
    clock = FakeClock(1000.0)
    cache: TTLCache[str, int] = TTLCache(10, clock)
    cache.put("k", 1, 60)
    clock.now += 50
    cache.put("k", 2, 60)
    clock.now += 50
    assert cache.get("k") == 2


def test_size_is_bounded_least_recently_used_first() -> None:
    cache: TTLCache[int, int] = TTLCache(3, FakeClock(1000.0))
    for i in range(3):
        cache.put(i, i, 60)
    assert cache.get(0) == 0  # 0 is now the most recently used
    cache.put(3, 3, 60)
    assert len(cache) == 3
    assert cache.get(1) is None  # the least recently used went
    assert [cache.get(i) for i in (0, 2, 3)] == [0, 2, 3]
    for i in range(100, 1100):  # a flood of distinct keys (random tokens) stays bounded
        cache.put(i, i, 60)
    assert len(cache) == 3


def test_zero_ttl_is_not_stored_and_size_must_be_positive() -> None:
    cache: TTLCache[str, int] = TTLCache(2, FakeClock(1000.0))
    cache.put("k", 1, 0)
    assert cache.get("k") is None and len(cache) == 0
    with pytest.raises(ValueError, match="max_entries must be at least 1"):
        TTLCache(0)
