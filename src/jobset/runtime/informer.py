"""The informer: a reflector feeding an indexed store, and event handlers on top.

client-go's `SharedIndexInformer`: one list+watch per resource however many controllers
read it, a `Store` with indexers and a transform, `add_event_handler` (a handler added late
first receives an add for every cached object), `has_synced` once the first list has been
stored, and optional periodic resync (an update with old == new for every object).

A `watch_decode` parses each watch event line in place of `orjson.loads`: a decoder that
builds only what the transform keeps (the pod cache's does) saves most of the parse of
every event. It gives the event's type and its object as the transform would leave it (the
transform then runs on listed objects only), so both paths cache the same.

Delivery is synchronous on the event loop: handlers are meant to be cheap (map the object to
keys and add them to a workqueue). A handler that raises is logged and skipped; it never
stops the informer.

On a relist the informer diffs the new list against the store and delivers only the
difference: adds for new keys, updates for changed resourceVersions, and deletes for keys
that are gone - with the last state it knew (client-go hands out a
`DeletedFinalStateUnknown` tombstone there; here the last object itself, and
`Informer.last_delete_was_tombstone` tells the two cases apart for whoever cares).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from jobset.runtime.cache import (
    BY_NAMESPACE,
    IndexFunc,
    Store,
    Transform,
    index_by_namespace,
    object_key,
)
from jobset.runtime.client import Client, Object, Resource, WatchDecoder
from jobset.runtime.logging import get_logger
from jobset.runtime.reflector import Reflector
from kubeutil.aio import cancel_and_wait

__all__ = ["EventHandler", "FuncHandler", "Informer"]


class EventHandler(Protocol):
    """client-go's `ResourceEventHandler`."""

    def on_add(self, obj: Object) -> None: ...

    def on_update(self, old: Object, new: Object) -> None: ...

    def on_delete(self, obj: Object) -> None: ...


@dataclass
class FuncHandler:
    """An `EventHandler` from optional functions (`ResourceEventHandlerFuncs`)."""

    add: Callable[[Object], None] | None = None
    update: Callable[[Object, Object], None] | None = None
    delete: Callable[[Object], None] | None = None

    def on_add(self, obj: Object) -> None:
        if self.add is not None:
            self.add(obj)

    def on_update(self, old: Object, new: Object) -> None:
        if self.update is not None:
            self.update(old, new)

    def on_delete(self, obj: Object) -> None:
        if self.delete is not None:
            self.delete(obj)


class Informer:
    """List+watch one resource into an indexed, transformed cache; dispatch events."""

    def __init__(
        self,
        client: Client,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str = "",
        field_selector: str = "",
        transform: Transform | None = None,
        watch_decode: WatchDecoder | None = None,
        indexers: Mapping[str, IndexFunc] | None = None,
        resync_period: float | None = None,
        page_size: int = 500,
        backoff_initial: float = 0.8,
        backoff_max: float = 30.0,
        min_watch_timeout: int = 300,
    ) -> None:
        self.resource = resource
        self.namespace = namespace
        all_indexers: dict[str, IndexFunc] = {BY_NAMESPACE: index_by_namespace}
        all_indexers.update(indexers or {})
        self.store = Store(all_indexers)
        self.transform = transform
        self.resync_period = resync_period
        self.reflector = Reflector(
            client,
            resource,
            self,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            transform=transform,
            decode=watch_decode,
            page_size=page_size,
            backoff_initial=backoff_initial,
            backoff_max=backoff_max,
            min_watch_timeout=min_watch_timeout,
        )
        self._handlers: list[EventHandler] = []
        self._synced = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.last_delete_was_tombstone = False
        self.log = get_logger("informer", resource=str(resource))

    # ------------------------------------------------------------------ public

    def add_event_handler(self, handler: EventHandler) -> None:
        self._handlers.append(handler)
        if self.has_synced():
            for _, obj in self.store.items():
                self._call(handler.on_add, obj)

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        self.store.add_indexers(indexers)

    def has_synced(self) -> bool:
        return self._synced.is_set()

    async def wait_for_sync(self, max_wait: float | None = None) -> bool:
        try:
            await asyncio.wait_for(self._synced.wait(), max_wait)
        except TimeoutError:
            return False
        return True

    def start(self) -> None:
        if self._tasks:
            return
        self._tasks.append(
            asyncio.create_task(self.reflector.run(), name=f"reflector {self.resource}")
        )
        if self.resync_period:
            self._tasks.append(
                asyncio.create_task(self._resync_loop(), name=f"resync {self.resource}")
            )

    async def stop(self) -> None:
        await cancel_and_wait(*self._tasks)
        self._tasks.clear()

    @property
    def running(self) -> bool:
        return bool(self._tasks) and not any(t.done() for t in self._tasks)

    # ------------------------------------------------------------------ sink

    def replace(self, objects: list[Object], resource_version: str) -> None:
        """A full list: store it, and deliver the difference from what was cached."""
        seen: set[str] = set()
        for obj in objects:
            key = object_key(obj)
            seen.add(key)
            old = self.store.put(key, obj)
            if old is None:
                self._dispatch_add(obj)
            elif _rv(old) != _rv(obj):
                self._dispatch_update(old, obj)
        for key in [k for k in self.store.keys() if k not in seen]:
            gone = self.store.remove(key)
            if gone is not None:
                self.last_delete_was_tombstone = True
                self._dispatch_delete(gone)
        if not self._synced.is_set():
            self.log.info("synced", objects=len(self.store), resource_version=resource_version)
            self._synced.set()

    def apply(self, event_type: str, obj: Object) -> None:
        key = object_key(obj)
        if event_type == "DELETED":
            self.store.remove(key)
            self.last_delete_was_tombstone = False
            self._dispatch_delete(obj)
            return
        old = self.store.put(key, obj)
        if old is None:
            self._dispatch_add(obj)
        else:
            self._dispatch_update(old, obj)

    # ------------------------------------------------------------------ dispatch

    def _dispatch_add(self, obj: Object) -> None:
        for h in self._handlers:
            self._call(h.on_add, obj)

    def _dispatch_update(self, old: Object, new: Object) -> None:
        for h in self._handlers:
            self._call2(h.on_update, old, new)

    def _dispatch_delete(self, obj: Object) -> None:
        for h in self._handlers:
            self._call(h.on_delete, obj)

    def _call(self, fn: Callable[[Object], None], obj: Object) -> None:
        try:
            fn(obj)
        except Exception:
            self.log.exception("event handler failed", key=object_key(obj))

    def _call2(self, fn: Callable[[Object, Object], None], old: Object, new: Object) -> None:
        try:
            fn(old, new)
        except Exception:
            self.log.exception("event handler failed", key=object_key(new))

    async def _resync_loop(self) -> None:
        assert self.resync_period
        await self._synced.wait()
        while True:
            await asyncio.sleep(self.resync_period)
            for _, obj in self.store.items():
                self._dispatch_update(obj, obj)


def _rv(obj: Object) -> str:
    return str(obj.get("metadata", {}).get("resourceVersion", ""))
