"""Expectations: writes count as done until the cache shows them, or until they expire."""

from __future__ import annotations

from jobset.controllers.expectations import Awaited
from tests.clock import FakeClock


def test_a_created_name_is_awaited_until_observed() -> None:
    clock = FakeClock()
    exp = Awaited(ttl=30, clock=clock)
    exp.expect("ns/js", "js-a-0")
    exp.expect("ns/js", "js-a-1")
    exp.expect("ns/other", "other-a-0")
    assert exp.pending("ns/js") == {"js-a-0", "js-a-1"}
    exp.observed("ns/js", "js-a-0")
    exp.observed("ns/js", "unknown")  # not awaited: nothing happens
    assert exp.pending("ns/js") == {"js-a-1"}
    exp.observed("ns/js", "js-a-1")
    assert exp.pending("ns/js") == frozenset()
    assert exp.next_expiry("ns/js") is None
    assert len(exp) == 1  # ns/other untouched


def test_an_unseen_name_expires_and_says_when() -> None:
    clock = FakeClock()
    exp = Awaited(ttl=30, clock=clock)
    exp.expect("ns/js", "js-a-0")
    clock.now += 10
    exp.expect("ns/js", "js-a-1")
    assert exp.next_expiry("ns/js") == 20
    clock.now += 20
    # The first one's deadline has come: it is no longer treated as existing.
    assert exp.pending("ns/js") == {"js-a-1"}
    assert exp.next_expiry("ns/js") == 10
    clock.now += 10
    assert exp.pending("ns/js") == frozenset()
    assert len(exp) == 0


def test_expecting_again_renews_the_deadline_and_forget_drops_all() -> None:
    clock = FakeClock()
    exp = Awaited(ttl=30, clock=clock)
    exp.expect("ns/js", "js-a-0")
    clock.now += 25
    exp.expect("ns/js", "js-a-0")  # recreated after a restart
    clock.now += 25
    assert exp.pending("ns/js") == {"js-a-0"}
    exp.forget("ns/js")
    assert exp.pending("ns/js") == frozenset() and len(exp) == 0
