"""In-memory object storage with one global resourceVersion, watch history and fan-out.

Stored objects are treated as immutable: a write replaces the dict, it never edits one
in place. That lets reads (get, list, watch) hand out stored dicts without copying, and
lets each watch event be encoded once and shared by every watcher it matches.
"""

from __future__ import annotations

import asyncio
import bisect
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
from sortedcontainers import SortedList

from kubesim.machinery.selectors import FieldSelector, LabelSelector

ResourceKey = tuple[str, str]  # (group, plural)
ObjectKey = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped

_RANGE_CHUNK = 256

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"


@dataclass(slots=True)
class WatchEvent:
    """One change, as every watcher of the resource sees it. Encoded lazily, at most once."""

    type: str
    obj: dict[str, Any]
    rv: int
    old: dict[str, Any] | None = None
    _encoded: bytes | None = None

    def encoded(self) -> bytes:
        if self._encoded is None:
            self._encoded = orjson.dumps({"type": self.type, "object": self.obj}) + b"\n"
        return self._encoded


def object_key(obj: dict[str, Any]) -> ObjectKey:
    meta = obj["metadata"]
    return (meta.get("namespace", ""), meta["name"])


class Watcher:
    """A subscriber to one resource, with the filters of its watch request.

    Events are queued without bound checks on the hot path; a watcher that falls
    more than `max_backlog` events behind is closed, as the real API server drops
    slow watchers, and its client relists.
    """

    def __init__(
        self,
        namespace: str | None,
        labels: LabelSelector | None,
        fields: FieldSelector | None,
        max_backlog: int = 100_000,
    ) -> None:
        self.namespace = namespace
        self.labels = labels
        self.fields = fields
        self.max_backlog = max_backlog
        self.queue: deque[WatchEvent] = deque()
        self.wakeup = asyncio.Event()
        self.closed = False
        self.overflowed = False

    def _matches(self, obj: dict[str, Any]) -> bool:
        meta = obj["metadata"]
        if self.namespace is not None and meta.get("namespace", "") != self.namespace:
            return False
        if self.labels is not None and not self.labels.matches(meta.get("labels")):
            return False
        return self.fields is None or self.fields.matches(obj)

    def offer(self, ev: WatchEvent) -> None:
        if self.closed:
            return
        now = self._matches(ev.obj)
        if ev.type == MODIFIED and ev.old is not None:
            before = self._matches(ev.old)
            if before and not now:
                ev = WatchEvent(DELETED, ev.obj, ev.rv)
            elif now and not before:
                ev = WatchEvent(ADDED, ev.obj, ev.rv)
            elif not now:
                return
        elif not now:
            return
        self.queue.append(ev)
        if len(self.queue) > self.max_backlog:
            self.overflowed = True
            self.close()
        self.wakeup.set()

    def close(self) -> None:
        self.closed = True
        self.wakeup.set()


@dataclass
class ResourceStore:
    """The objects of one resource, their keys in sorted order, and recent history."""

    history_size: int
    objects: dict[ObjectKey, dict[str, Any]] = field(default_factory=dict)
    # Sorted for lists in key order; a SortedList inserts in O(log n) where a list's insort
    # moves every later key (tens of thousands of Events, each inserted at a random place).
    keys: SortedList[ObjectKey] = field(default_factory=SortedList)
    history: deque[WatchEvent] = field(default_factory=deque)
    compacted_rv: int = 0
    watchers: set[Watcher] = field(default_factory=set)

    def record(self, ev: WatchEvent) -> None:
        self.history.append(ev)
        while len(self.history) > self.history_size:
            self.compacted_rv = self.history.popleft().rv
        for w in list(self.watchers):
            w.offer(ev)

    def compact(self, keep_after_rv: int) -> None:
        """Forget history up to `keep_after_rv`: watches from older versions get 410 Gone."""
        while self.history and self.history[0].rv <= keep_after_rv:
            self.compacted_rv = self.history.popleft().rv
        self.compacted_rv = max(self.compacted_rv, keep_after_rv)

    def events_since(self, rv: int) -> list[WatchEvent] | None:
        """History after `rv`, or None when it has been compacted away (410 Gone)."""
        if rv < self.compacted_rv:
            return None
        idx = bisect.bisect_right([e.rv for e in self.history], rv) if self.history else 0
        return list(self.history)[idx:]

    def range(
        self, namespace: str | None, start_after: ObjectKey | None = None
    ) -> Iterator[dict[str, Any]]:
        """Objects in key order, optionally in one namespace, after a continue key."""
        keys = self.keys
        if namespace is not None:
            lo = keys.bisect_left((namespace, ""))
            hi = keys.bisect_left((namespace + "\x00", ""))
        else:
            lo, hi = 0, len(keys)
        if start_after is not None:
            lo = max(lo, keys.bisect_right(start_after))
        objects = self.objects
        # By position, a slice of keys at a time: the caller may write while it iterates
        # (positions then shift, as they did in a plain list), and may stop after a page.
        while lo < min(hi, len(keys)):
            chunk = keys[lo : min(lo + _RANGE_CHUNK, hi)]
            for key in chunk:
                obj = objects.get(key)
                if obj is not None:
                    yield obj
            lo += len(chunk)


Listener = Callable[[ResourceKey, WatchEvent], None]


class Store:
    """All resources, the global resourceVersion, and uid / owner indexes for the GC."""

    def __init__(self, history_size: int = 50_000) -> None:
        self.rv = 1
        self.history_size = history_size
        self.resources: dict[ResourceKey, ResourceStore] = {}
        self.by_uid: dict[str, tuple[ResourceKey, ObjectKey]] = {}
        self.dependents: dict[str, set[tuple[ResourceKey, ObjectKey]]] = {}
        self.listeners: list[Listener] = []
        # Listeners of some resources only (`subscribe`), called after `listeners`.
        self.scoped: dict[ResourceKey, list[Listener]] = {}
        self.journal: Callable[[ResourceKey, WatchEvent], None] | None = None

    def resource(self, rkey: ResourceKey) -> ResourceStore:
        rs = self.resources.get(rkey)
        if rs is None:
            rs = self.resources[rkey] = ResourceStore(self.history_size)
        return rs

    def next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def get(self, rkey: ResourceKey, okey: ObjectKey) -> dict[str, Any] | None:
        rs = self.resources.get(rkey)
        return rs.objects.get(okey) if rs else None

    def get_by_uid(self, uid: str) -> tuple[ResourceKey, dict[str, Any]] | None:
        loc = self.by_uid.get(uid)
        if loc is None:
            return None
        obj = self.get(*loc)
        return (loc[0], obj) if obj is not None else None

    def put(self, rkey: ResourceKey, obj: dict[str, Any], rv: int) -> WatchEvent:
        """Store `obj` (its metadata.resourceVersion already set to `rv`) and notify."""
        rs = self.resource(rkey)
        okey = object_key(obj)
        old = rs.objects.get(okey)
        rs.objects[okey] = obj
        if old is None:
            rs.keys.add(okey)
            ev = WatchEvent(ADDED, obj, rv)
            self._index(rkey, okey, obj)
        else:
            ev = WatchEvent(MODIFIED, obj, rv, old)
            meta, old_meta = obj["metadata"], old["metadata"]
            same_uid = meta.get("uid") == old_meta.get("uid")
            same_owners = meta.get("ownerReferences") == old_meta.get("ownerReferences")
            # Most updates keep both (a status write): then the indexes stand as they are.
            if not (same_uid and same_owners):
                self._unindex(rkey, okey, old)
                self._index(rkey, okey, obj)
        self._emit(rkey, rs, ev)
        return ev

    def remove(self, rkey: ResourceKey, obj: dict[str, Any], rv: int) -> WatchEvent:
        """Delete the object; `obj` is its final state (resourceVersion = `rv`)."""
        rs = self.resource(rkey)
        okey = object_key(obj)
        old = rs.objects.pop(okey, None)
        if old is not None:
            rs.keys.discard(okey)
            self._unindex(rkey, okey, old)
        ev = WatchEvent(DELETED, obj, rv)
        self._emit(rkey, rs, ev)
        return ev

    def drop_resource(self, rkey: ResourceKey) -> None:
        rs = self.resources.pop(rkey, None)
        if rs is None:
            return
        for w in rs.watchers:
            w.close()
        for okey, obj in rs.objects.items():
            self._unindex(rkey, okey, obj)

    def _emit(self, rkey: ResourceKey, rs: ResourceStore, ev: WatchEvent) -> None:
        rs.record(ev)
        if self.journal is not None:
            self.journal(rkey, ev)
        for listener in self.listeners:
            listener(rkey, ev)
        for listener in self.scoped.get(rkey, ()):
            listener(rkey, ev)

    def subscribe(self, listener: Listener, rkeys: Iterable[ResourceKey]) -> None:
        """Call `listener` on every write of the resources `rkeys` (and of no other)."""
        for rkey in rkeys:
            self.scoped.setdefault(rkey, []).append(listener)

    def unsubscribe(self, listener: Listener) -> None:
        for scoped in self.scoped.values():
            while listener in scoped:
                scoped.remove(listener)

    def _index(self, rkey: ResourceKey, okey: ObjectKey, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        uid = meta.get("uid")
        if uid:
            self.by_uid[uid] = (rkey, okey)
        for ref in meta.get("ownerReferences") or ():
            owner = ref.get("uid")
            if owner:
                self.dependents.setdefault(owner, set()).add((rkey, okey))

    def _unindex(self, rkey: ResourceKey, okey: ObjectKey, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        uid = meta.get("uid")
        if uid and self.by_uid.get(uid) == (rkey, okey):
            del self.by_uid[uid]
        for ref in meta.get("ownerReferences") or ():
            owner = ref.get("uid")
            deps = self.dependents.get(owner) if owner else None
            if deps is not None:
                deps.discard((rkey, okey))
                if not deps:
                    del self.dependents[owner]
