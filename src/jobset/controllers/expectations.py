"""Writes this controller made and has not seen in its cache yet ("expectations").

A pass that creates or deletes Jobs is followed at once by another pass - the first Job
event brings it - while the cache may not show the rest of the batch yet. That pass would
see the created Jobs missing and send their creates again (answered AlreadyExists), and
the deleted Jobs not yet deleting and delete them again: harmless, but wasted requests,
and counts of creates and deletes that are not the counts of Jobs.
kube-controller-manager's ReplicaSet and Job controllers avoid this with
`ControllerExpectations`; this is the same idea reduced to what the JobSet controller
needs: per JobSet, the Job names created and the Job uids deleted, each forgotten when the
cache shows it (a created name added or updated; a deleted uid with a deletionTimestamp, or
gone) or after `ttl` seconds.

Correctness never rests on it: an entry that is never observed (a Job deleted before the
watch delivered it) is forgotten after `ttl`, and the controller requeues the JobSet for
that moment (`next_expiry`), so the worst case is a write made `ttl` seconds late, never a
write not made.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

__all__ = ["AWAIT_TTL", "Awaited"]

# kube-controller-manager waits 5 minutes; a JobSet restart should not wait that long for
# a Job that vanished unseen.
AWAIT_TTL: Final = 30.0


class Awaited:
    """Per owner key ("namespace/name"), the items written and not yet observed."""

    def __init__(self, ttl: float = AWAIT_TTL, clock: Callable[[], float] = time.monotonic):
        self.ttl = ttl
        self.clock = clock
        self._awaited: dict[str, dict[str, float]] = {}

    def expect(self, owner: str, item: str) -> None:
        """`item` was written for `owner`: count it as done until it is observed."""
        self._awaited.setdefault(owner, {})[item] = self.clock() + self.ttl

    def observed(self, owner: str, item: str) -> None:
        """The cache shows the write of `item`."""
        items = self._awaited.get(owner)
        if items is not None and items.pop(item, None) is not None and not items:
            del self._awaited[owner]

    def pending(self, owner: str) -> frozenset[str]:
        """The items still awaited (expired ones are dropped)."""
        items = self._awaited.get(owner)
        if not items:
            return frozenset()
        now = self.clock()
        for item in [i for i, deadline in items.items() if deadline <= now]:
            del items[item]
        if not items:
            del self._awaited[owner]
            return frozenset()
        return frozenset(items)

    def next_expiry(self, owner: str) -> float | None:
        """Seconds until the first awaited item of `owner` expires (None: none awaited)."""
        items = self._awaited.get(owner)
        if not items:
            return None
        return max(0.0, min(items.values()) - self.clock())

    def forget(self, owner: str) -> None:
        self._awaited.pop(owner, None)

    def __len__(self) -> int:
        return sum(len(v) for v in self._awaited.values())
