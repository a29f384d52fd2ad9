"""The loop every controller of this package shares: a store listener that only enqueues
keys, a client-go style work queue, and a few workers that sync one key at a time."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Collection, Hashable, Iterable
from typing import Any, Final, Generic, TypeVar

import structlog

from kubesim.apiserver.core.apicore import ApiCore
from kubesim.apiserver.core.request import Request, component_request
from kubesim.apiserver.core.store import ResourceKey, WatchEvent
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.base.workqueue import WorkQueue
from kubesim.machinery.errors import ApiError

log = structlog.get_logger("sim.controllers")

K = TypeVar("K", bound=Hashable)

PODS: Final[ResourceKey] = ("", "pods")


def meta_key(obj: dict[str, Any]) -> tuple[str, str]:
    meta = obj["metadata"]
    return (str(meta.get("namespace", "")), str(meta["name"]))


def controller_ref(obj: dict[str, Any]) -> dict[str, Any] | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


class Controller(Generic[K]):
    """Subclasses say which keys an event concerns (`keys_for`) and how to sync one key
    (`sync`, returning a delay after which to sync it again, or None)."""

    name = "controller"
    workers = 2

    def __init__(self, core: ApiCore) -> None:
        self.core = core
        self._queue: WorkQueue[K] | None = None
        self._tasks: list[asyncio.Task[None]] = []

    def rt(self, group: str, plural: str) -> ResourceType:
        found = next(
            (r for r in self.core.registry.all() if r.group == group and r.plural == plural),
            None,
        )
        assert found is not None, (group, plural)
        return found

    def req(self) -> Request:
        return component_request(self.name)

    # ------------------------------------------------------------------ for subclasses

    def watched(self) -> Collection[ResourceKey] | None:
        """The resources whose events `keys_for` looks at (None: all of them). The store
        calls a controller that declares them on their writes only (`Store.subscribe`),
        sparing it the rest, the Events above all."""
        return None

    def keys_for(self, rkey: ResourceKey, ev: WatchEvent) -> Iterable[K]:
        raise NotImplementedError

    def initial_keys(self) -> Iterable[K]:
        raise NotImplementedError

    def hold(self, key: K) -> float:
        """Seconds an event's sync of `key` waits, so that more events join it (0: none)."""
        return 0.0

    async def sync(self, key: K) -> float | None:
        raise NotImplementedError

    # ------------------------------------------------------------------ lifecycle

    def enqueue(self, key: K, delay: float = 0.0) -> None:
        if self._queue is not None:
            self._queue.add_after(key, delay)

    def start(self) -> None:
        self._queue = WorkQueue()
        watched = self.watched()
        if watched is None:
            self.core.store.listeners.append(self._on_event)
        else:
            self.core.store.subscribe(self._on_event, frozenset(watched))
        for key in self.initial_keys():
            self._queue.add(key)
        self._tasks = [
            asyncio.create_task(self._worker(), name=f"sim-{self.name}-{i}")
            for i in range(self.workers)
        ]

    async def stop(self) -> None:
        with contextlib.suppress(ValueError):
            self.core.store.listeners.remove(self._on_event)
        self.core.store.unsubscribe(self._on_event)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        if self._queue is not None:
            self._queue.close()

    def _on_event(self, rkey: ResourceKey, ev: WatchEvent) -> None:
        queue = self._queue
        if queue is None:
            return
        try:
            for key in self.keys_for(rkey, ev):
                queue.add_after(key, self.hold(key))
        except Exception:  # a listener must never break the write that triggered it
            log.exception("controller event handling failed", controller=self.name)

    async def _worker(self) -> None:
        queue = self._queue
        assert queue is not None
        while True:
            key = await queue.get()
            try:
                again = await self.sync(key)
                queue.forget(key)
                if again is not None:
                    queue.add_after(key, again)
            except ApiError as err:
                if err.code == 409:
                    queue.add(key)  # stale read: redo from the fresh state
                elif err.code == 404:
                    queue.forget(key)
                else:
                    log.warning("sync failed", controller=self.name, key=key, error=str(err))
                    queue.add_rate_limited(key)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("sync crashed", controller=self.name, key=key)
                queue.add_rate_limited(key)
            finally:
                queue.done(key)
