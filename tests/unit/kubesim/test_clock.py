"""kubesim.clock: RFC 3339 stamps, formatted once a second and reused within it."""

from __future__ import annotations

import datetime as dt

from hypothesis import given
from hypothesis import strategies as st

from kubesim.clock import now_rfc3339, parse_rfc3339


def _reference(t: float) -> str:
    return dt.datetime.fromtimestamp(t, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@given(st.lists(st.floats(min_value=-1e6, max_value=4e9, allow_nan=False), max_size=20))
def test_stamps_are_the_datetime_formatting_of_the_instant(instants: list[float]) -> None:
    # In any order, so the cached second is sometimes the one asked for and sometimes not.
    for t in instants:
        assert now_rfc3339(t) == _reference(t)


def test_an_instant_that_rounds_up_to_the_next_second_is_stamped_with_it() -> None:
    base = 1_700_000_000
    now_rfc3339(base)  # the cache holds `base`
    assert now_rfc3339(base + 0.9999996) == _reference(base + 1) == "2023-11-14T22:13:21Z"
    assert now_rfc3339(base + 0.9999994) == "2023-11-14T22:13:20Z"


def test_now_round_trips_through_parse() -> None:
    stamp = now_rfc3339()
    assert now_rfc3339(parse_rfc3339(stamp)) == stamp
