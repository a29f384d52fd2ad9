"""Leader election on a `coordination.k8s.io/v1` Lease, as client-go's `tools/leaderelection`.

The state machine is client-go's `tryAcquireOrRenew`:

- no Lease: create it with us as holder (AlreadyExists means someone else was faster);
- a Lease held by someone else whose record we have seen change less than
  `leaseDurationSeconds` ago (measured on *our* clock from when *we* observed the change, so
  clock skew between candidates does not matter): stand by;
- otherwise (expired, released, or ours): update it with us as holder - optimistic
  concurrency on resourceVersion makes two candidates racing for it safe (one gets 409).

Timings default to client-go's: 15 s lease, 10 s renew deadline, 2 s retry period. A leader
that cannot renew within the renew deadline stops leading (its controllers stop) before the
lease can expire for the others. A follower only reads the Lease: it does no writes at all.

One difference on purpose: a waiting candidate wakes up when the lease it observed will
expire instead of sleeping a full jittered retry period past it, so a leader that died is
replaced within the lease duration plus one retry period (client-go's jitter can add up to
2.2 retry periods). Retry waits are jittered downwards (90-100 %) to keep that bound.

On a graceful stop the leader releases the lease (holder "" and a 1 s duration, client-go's
`ReleaseOnCancel`), so a successor takes over at once instead of after the lease duration.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from jobset.runtime.client import LEASES, ApiError, Client, Object
from jobset.runtime.logging import get_logger
from jobset.runtime.metrics import RuntimeMetrics

__all__ = [
    "LeaderElectionConfig",
    "LeaderElectionRecord",
    "LeaderElector",
    "LeaseLock",
    "ResourceLock",
]

State = Literal["unknown", "standby", "leading", "lost", "stopped"]


@dataclass(frozen=True)
class LeaderElectionConfig:
    lease_name: str
    lease_namespace: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = True

    def __post_init__(self) -> None:
        # client-go's NewLeaderElector checks, with its jitter factor 1.2.
        if self.lease_duration <= self.renew_deadline:
            raise ValueError("lease duration must be greater than the renew deadline")
        if self.renew_deadline <= 1.2 * self.retry_period:
            raise ValueError("renew deadline must be greater than 1.2 x retry period")
        if self.retry_period <= 0:
            raise ValueError("retry period must be positive")
        if not self.identity:
            raise ValueError("leader election identity must not be empty")


@dataclass(frozen=True)
class LeaderElectionRecord:
    """The Lease spec fields leader election reads and writes."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str = ""
    renew_time: str = ""
    lease_transitions: int = 0

    @classmethod
    def from_spec(cls, spec: Object) -> LeaderElectionRecord:
        return cls(
            holder_identity=str(spec.get("holderIdentity") or ""),
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=str(spec.get("acquireTime") or ""),
            renew_time=str(spec.get("renewTime") or ""),
            lease_transitions=int(spec.get("leaseTransitions") or 0),
        )

    def to_spec(self) -> Object:
        spec: Object = {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "leaseTransitions": self.lease_transitions,
        }
        if self.acquire_time:
            spec["acquireTime"] = self.acquire_time
        if self.renew_time:
            spec["renewTime"] = self.renew_time
        return spec


class ResourceLock(Protocol):
    """client-go's `resourcelock.Interface`: where the record lives."""

    async def get(self) -> LeaderElectionRecord | None:
        """The current record, or None if the lock object does not exist."""
        ...

    async def create(self, record: LeaderElectionRecord) -> None:
        """Create the lock object; raises ApiError (409 AlreadyExists) if it exists."""
        ...

    async def update(self, record: LeaderElectionRecord) -> None:
        """Replace the record of the object last returned by get(); 409 if it changed."""
        ...

    def describe(self) -> str: ...


class LeaseLock(ResourceLock):
    """A `coordination.k8s.io/v1` Lease as the lock."""

    def __init__(self, client: Client, namespace: str, name: str) -> None:
        self.client = client
        self.namespace = namespace
        self.name = name
        self._lease: Object | None = None

    async def get(self) -> LeaderElectionRecord | None:
        try:
            self._lease = await self.client.get(LEASES, self.name, self.namespace)
        except ApiError as err:
            if err.not_found:
                self._lease = None
                return None
            raise
        return LeaderElectionRecord.from_spec(self._lease.get("spec") or {})

    async def create(self, record: LeaderElectionRecord) -> None:
        body = {
            "apiVersion": LEASES.api_version,
            "kind": LEASES.kind,
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": record.to_spec(),
        }
        self._lease = await self.client.create(LEASES, body, self.namespace)

    async def update(self, record: LeaderElectionRecord) -> None:
        if self._lease is None:
            raise RuntimeError("update of a lease that was not read first")
        body = {**self._lease, "spec": record.to_spec()}
        self._lease = await self.client.update(LEASES, body)

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"


def now_micro_time() -> str:
    """metav1.MicroTime in RFC 3339 with microseconds."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class _Observed:
    record: LeaderElectionRecord | None = None
    time: float = 0.0  # our clock when we saw this record change
    errors: int = field(default=0)


class LeaderElector:
    """Runs the election; `run()` returns when leadership is lost or the elector stopped."""

    def __init__(
        self,
        config: LeaderElectionConfig,
        lock: ResourceLock,
        *,
        on_started_leading: Callable[[], None] | None = None,
        on_stopped_leading: Callable[[], None] | None = None,
        on_new_leader: Callable[[str], None] | None = None,
        metrics: RuntimeMetrics | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], str] = now_micro_time,
    ) -> None:
        self.config = config
        self.lock = lock
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self.on_new_leader = on_new_leader
        self.metrics = metrics
        self.clock = clock
        self.wall_clock = wall_clock
        self.state: State = "unknown"
        self.observed = _Observed()
        self.leader = ""  # the holder we last saw
        self.became_leader_at: float | None = None
        self.last_observed_ok: float | None = None  # our clock, last successful read
        self._stop = asyncio.Event()
        self.log = get_logger("leaderelection", lease=lock.describe(), identity=config.identity)
        self._set_master(False)

    # ------------------------------------------------------------------ state machine

    def is_leader(self) -> bool:
        rec = self.observed.record
        return rec is not None and rec.holder_identity == self.config.identity

    def lease_duration_seconds(self) -> int:
        return max(1, round(self.config.lease_duration))

    def standing_by(self) -> bool:
        """Following a leader we observed less than a lease duration ago.

        A follower that cannot reach the API server any more does not know whether there
        is a leader; it must not claim to be standing by (readiness relies on this).
        """
        return (
            self.state == "standby"
            and self.last_observed_ok is not None
            and self.clock() - self.last_observed_ok < self.config.lease_duration
        )

    def seconds_until_expiry(self) -> float:
        """How long until the lease we observed expires, on our clock (0 if already)."""
        rec = self.observed.record
        if rec is None:
            return 0.0
        return max(0.0, self.observed.time + rec.lease_duration_seconds - self.clock())

    async def try_acquire_or_renew(self) -> bool:
        """One step of client-go's tryAcquireOrRenew; True if we hold the lease after it."""
        me = self.config.identity
        now = self.wall_clock()
        desired = LeaderElectionRecord(
            holder_identity=me,
            lease_duration_seconds=self.lease_duration_seconds(),
            acquire_time=now,
            renew_time=now,
        )
        current = await self.lock.get()
        self.last_observed_ok = self.clock()
        if current is None:
            try:
                await self.lock.create(desired)
            except ApiError as err:
                if err.status == 409:
                    return False
                raise
            self._observe(desired)
            return True
        if current != self.observed.record:
            self._observe(current)
        held_by_other = current.holder_identity not in ("", me)
        if held_by_other and self.seconds_until_expiry() > 0:
            return False
        if current.holder_identity == me:
            desired = LeaderElectionRecord(
                me,
                desired.lease_duration_seconds,
                current.acquire_time or now,
                now,
                current.lease_transitions,
            )
        else:
            desired = LeaderElectionRecord(
                me, desired.lease_duration_seconds, now, now, current.lease_transitions + 1
            )
        try:
            await self.lock.update(desired)
        except ApiError as err:
            if err.status == 409:
                return False
            raise
        self._observe(desired)
        return True

    def _observe(self, record: LeaderElectionRecord) -> None:
        self.observed.record = record
        self.observed.time = self.clock()
        if record.holder_identity != self.leader:
            self.leader = record.holder_identity
            if record.holder_identity:
                self.log.info("new leader observed", leader=record.holder_identity)
            if self.on_new_leader is not None and record.holder_identity:
                self.on_new_leader(record.holder_identity)

    # ------------------------------------------------------------------ loops

    async def run(self) -> State:
        """Acquire, lead (renewing), and return "lost" or "stopped"."""
        if not await self._acquire():
            self.state = "stopped"
            return self.state
        self.state = "leading"
        self.became_leader_at = self.clock()
        self._set_master(True)
        self.log.info("successfully acquired lease")
        if self.on_started_leading is not None:
            self.on_started_leading()
        lost = await self._renew()
        self._set_master(False)
        if lost:
            self.state = "lost"
            self.log.error("leader election lost")
        else:
            self.state = "stopped"
            if self.config.release_on_cancel:
                await self.release()
        if self.on_stopped_leading is not None:
            self.on_stopped_leading()
        return self.state

    def stop(self) -> None:
        self._stop.set()

    async def _acquire(self) -> bool:
        self.log.info("attempting to acquire leader lease")
        while not self._stop.is_set():
            try:
                # Bound each attempt: the client's own retries must not outlast the election.
                if await asyncio.wait_for(self.try_acquire_or_renew(), self.config.renew_deadline):
                    return True
                self.state = "standby"
            except Exception as exc:
                self.state = "unknown"
                self.log.warning("error retrieving lease", error=repr(exc))
            wait = self.config.retry_period * random.uniform(0.9, 1.0)
            if self.state == "standby" and self.leader and self.leader != self.config.identity:
                wait = min(wait, self.seconds_until_expiry() + 0.01)
            if await self._sleep(wait):
                return False
        return False

    async def _renew(self) -> bool:
        """Renew every retry period until stopped (False) or the renew deadline passes (True)."""
        cfg = self.config
        while not self._stop.is_set():
            deadline = self.clock() + cfg.renew_deadline
            renewed = False
            while not self._stop.is_set():
                remaining = deadline - self.clock()
                if remaining <= 0:
                    break
                try:
                    renewed = await asyncio.wait_for(self.try_acquire_or_renew(), remaining)
                except Exception as exc:
                    self.log.warning("failed to renew lease", error=repr(exc))
                    renewed = False
                if renewed:
                    break
                await self._sleep(min(cfg.retry_period, max(0.0, deadline - self.clock())))
            if self._stop.is_set():
                return False
            if not renewed:
                return True
            if await self._sleep(cfg.retry_period * random.uniform(0.9, 1.0)):
                return False
        return False

    async def _sleep(self, seconds: float) -> bool:
        """Sleep unless stopped; True if stopped."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), seconds)
        return self._stop.is_set()

    async def release(self) -> bool:
        """Give the lease up (if still ours) so that a successor need not wait for expiry."""
        try:
            current = await self.lock.get()
            if current is None or current.holder_identity != self.config.identity:
                return False
            now = self.wall_clock()
            await self.lock.update(LeaderElectionRecord("", 1, now, now, current.lease_transitions))
        except Exception as exc:
            self.log.warning("failed to release lease", error=repr(exc))
            return False
        self.log.info("released lease")
        return True

    def _set_master(self, leading: bool) -> None:
        if self.metrics is not None:
            self.metrics.leader_election_master_status.labels(self.config.lease_name).set(
                1 if leading else 0
            )

    def status(self) -> dict[str, Any]:
        return {"state": self.state, "leader": self.leader, "identity": self.config.identity}
