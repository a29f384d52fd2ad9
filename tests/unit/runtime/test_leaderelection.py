"""The leader-election state machine (client-go's tryAcquireOrRenew) with a fake clock and an
in-memory lock that behaves like a Lease: optimistic concurrency on a version."""

from __future__ import annotations

import asyncio

import pytest

from jobset.runtime.client import ApiError
from jobset.runtime.leaderelection import (
    LeaderElectionConfig,
    LeaderElectionRecord,
    LeaderElector,
)
from tests.clock import FakeClock


class SharedLease:
    def __init__(self) -> None:
        self.record: LeaderElectionRecord | None = None
        self.version = 0
        self.writes = 0


class FakeLock:
    """One candidate's view of the shared lease: update fails if it changed since get()."""

    def __init__(self, shared: SharedLease) -> None:
        self.shared = shared
        self.read_version = -1

    async def get(self) -> LeaderElectionRecord | None:
        self.read_version = self.shared.version
        record = self.shared.record
        await asyncio.sleep(0)  # let a racing candidate run between our read and write
        return record

    async def create(self, record: LeaderElectionRecord) -> None:
        if self.shared.record is not None:
            raise ApiError(409, "AlreadyExists", "exists")
        self._write(record)

    async def update(self, record: LeaderElectionRecord) -> None:
        if self.read_version != self.shared.version:
            raise ApiError(409, "Conflict", "the object has been modified")
        self._write(record)

    def _write(self, record: LeaderElectionRecord) -> None:
        self.shared.record = record
        self.shared.version += 1
        self.shared.writes += 1
        self.read_version = self.shared.version

    def describe(self) -> str:
        return "fake"


def elector(identity: str, shared: SharedLease, clock: FakeClock) -> LeaderElector:
    cfg = LeaderElectionConfig("lease", "ns", identity, 15, 10, 2)
    stamp = iter(range(10**6))
    return LeaderElector(cfg, FakeLock(shared), clock=clock, wall_clock=lambda: f"t{next(stamp)}")


async def test_acquire_standby_expiry_and_takeover() -> None:
    shared, clock = SharedLease(), FakeClock(1000.0)
    a, b = elector("a", shared, clock), elector("b", shared, clock)
    assert await a.try_acquire_or_renew()  # creates the lease
    assert shared.record is not None and shared.record.holder_identity == "a"
    assert shared.record.lease_duration_seconds == 15

    writes = shared.writes
    assert not await b.try_acquire_or_renew()  # held: stand by
    assert shared.writes == writes  # a follower does not write
    assert b.leader == "a"

    clock.now += 14
    assert not await b.try_acquire_or_renew()  # not expired yet (observed 14 s ago)
    assert await a.try_acquire_or_renew()  # a renews: the record changes
    clock.now += 14
    assert not await b.try_acquire_or_renew()  # b saw a change 0 s ago: not expired
    clock.now += 15.1
    assert await b.try_acquire_or_renew()  # a stopped renewing 15+ s ago (on b's clock)
    assert shared.record.holder_identity == "b"
    assert shared.record.lease_transitions == 1
    assert not await a.try_acquire_or_renew()  # a lost it


async def test_renewal_keeps_acquire_time_and_transitions() -> None:
    shared, clock = SharedLease(), FakeClock(1000.0)
    a = elector("a", shared, clock)
    assert await a.try_acquire_or_renew()
    first = shared.record
    assert first is not None
    clock.now += 2
    assert await a.try_acquire_or_renew()
    assert shared.record is not None
    assert shared.record.acquire_time == first.acquire_time
    assert shared.record.renew_time != first.renew_time
    assert shared.record.lease_transitions == first.lease_transitions


async def test_released_lease_is_taken_at_once() -> None:
    shared, clock = SharedLease(), FakeClock(1000.0)
    a, b = elector("a", shared, clock), elector("b", shared, clock)
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()
    assert await a.release()
    assert shared.record is not None and shared.record.holder_identity == ""
    assert await b.try_acquire_or_renew()


async def test_racing_candidates_only_one_wins() -> None:
    shared, clock = SharedLease(), FakeClock(1000.0)
    a, b, c = (elector(i, shared, clock) for i in "abc")
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()
    assert not await c.try_acquire_or_renew()
    clock.now += 16  # a stopped renewing: expired for both b and c
    # The fake lock yields between get() and update(): both read the same version, both
    # write, and optimistic concurrency lets exactly one of them win.
    results = await asyncio.gather(b.try_acquire_or_renew(), c.try_acquire_or_renew())
    assert sorted(results) == [False, True]
    assert shared.record is not None
    assert shared.record.holder_identity == ("b" if results[0] else "c")
    assert shared.record.lease_transitions == 1


async def test_standing_by_is_only_claimed_while_the_lease_is_observed() -> None:
    shared, clock = SharedLease(), FakeClock(1000.0)
    a, b = elector("a", shared, clock), elector("b", shared, clock)
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()
    b.state = "standby"
    assert b.standing_by()
    clock.now += 16  # no successful read for longer than a lease duration
    assert not b.standing_by()


def test_config_validation_matches_client_go() -> None:
    with pytest.raises(ValueError):
        LeaderElectionConfig("l", "n", "me", lease_duration=10, renew_deadline=10)
    with pytest.raises(ValueError):
        LeaderElectionConfig("l", "n", "me", renew_deadline=2, retry_period=2)
    with pytest.raises(ValueError):
        LeaderElectionConfig("l", "n", "")
