"""A watch request's event stream, as kube-apiserver writes it.

`ApiHttpServer` parses the request and opens the store's watcher; `WatchStream` writes the
initial events (and the `k8s.io/initial-events-end` bookmark for `sendInitialEvents`), then
each change as it happens, periodic bookmarks when asked for, until the timeout, a fault
(cut after N events, an outage) or the watcher closing ends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from kubesim.apiserver.core.store import Watcher, WatchEvent
from kubesim.apiserver.http import tables
from kubesim.apiserver.registry.events import event as eventsapi
from kubesim.apiserver.registry.resourcetype import ResourceType


def _bool(q: str | None) -> bool:
    return q is not None and q.lower() in ("true", "1", "")


@dataclass(frozen=True)
class WatchOptions:
    """A watch request's query: where to start, what to send, for how long."""

    resource_version: str
    send_initial: bool
    want_table: bool
    want_metadata: bool
    include: str
    bookmarks: bool
    timeout: float

    @classmethod
    def of(cls, request: web.Request) -> WatchOptions:
        q = request.query
        send_initial = _bool(q.get("sendInitialEvents")) if "sendInitialEvents" in q else False
        accept = request.headers.get("Accept", "")
        return cls(
            resource_version="" if send_initial else q.get("resourceVersion", ""),
            send_initial=send_initial,
            want_table=tables.wants_table(accept),
            want_metadata=tables.wants_metadata(accept),
            include=q.get("includeObject", "Metadata"),
            bookmarks=_bool(q.get("allowWatchBookmarks")) if "allowWatchBookmarks" in q else False,
            timeout=float(q.get("timeoutSeconds", "0") or 0) or 1800.0,
        )


def bookmark(rt: ResourceType, rv: int, initial_end: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if initial_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    return {"kind": rt.kind, "apiVersion": rt.group_version, "metadata": meta}


def _line(obj: dict[str, Any]) -> bytes:
    return orjson.dumps(obj) + b"\n"


class WatchStream:
    """Writes one watch's events to its response until something ends the stream."""

    def __init__(
        self,
        resp: web.StreamResponse,
        rt: ResourceType,
        namespace: str | None,
        opts: WatchOptions,
        store_rv: Any,  # () -> the store's current resourceVersion
        faults: Any,
        cut_after: int | None,
        bookmark_interval: float,
    ) -> None:
        self.resp = resp
        self.rt = rt
        self.namespace = namespace
        self.opts = opts
        self.store_rv = store_rv
        self.faults = faults
        self.cut_after = cut_after
        self.bookmark_interval = bookmark_interval
        self.sent = 0

    def encode(self, ev: WatchEvent) -> bytes:
        rt = self.rt
        if self.opts.want_table:
            table = tables.to_table(rt, [ev.obj], self.opts.include, None, with_headers=False)
            return _line({"type": ev.type, "object": table})
        if self.opts.want_metadata:
            return _line({"type": ev.type, "object": tables.partial_object_metadata(ev.obj)})
        if rt.storage is not None:
            return _line({"type": ev.type, "object": eventsapi.to_events_v1(ev.obj)})
        if rt.version != ev.obj.get("apiVersion", "").rpartition("/")[2]:
            return _line({"type": ev.type, "object": {**ev.obj, "apiVersion": rt.group_version}})
        return ev.encoded()

    def _cut(self) -> bool:
        return self.cut_after is not None and self.sent >= self.cut_after

    async def run(self, watcher: Watcher, initial: list[WatchEvent]) -> None:
        with contextlib.suppress(ConnectionResetError, asyncio.CancelledError):
            await self._send_initial(initial)
            await self._follow(watcher)

    async def _send_initial(self, initial: list[WatchEvent]) -> None:
        if self.cut_after is not None:
            initial = initial[: self.cut_after]
        if initial:
            await self.resp.write(b"".join(self.encode(ev) for ev in initial))
            self.sent += len(initial)
        if self.opts.send_initial:
            end = bookmark(self.rt, self.store_rv(), True)
            await self.resp.write(_line({"type": "BOOKMARK", "object": end}))

    async def _follow(self, watcher: Watcher) -> None:
        deadline = time.monotonic() + self.opts.timeout
        next_bookmark = time.monotonic() + self.bookmark_interval
        while not self._cut():
            now = time.monotonic()
            if now >= deadline:
                break
            wait = deadline - now
            if self.opts.bookmarks:
                wait = min(wait, max(0.0, next_bookmark - now))
            if self.faults is not None and self.faults.outages:
                wait = min(wait, 0.5)
                if self.faults.outage_active(
                    "watch", self.rt.group, self.rt.plural, self.namespace or "", now
                ):
                    break  # the server "went away": the stream ends with it
            if not watcher.wakeup.is_set():
                # `timeout` rather than `wait_for`: no task per wait.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wait):
                        await watcher.wakeup.wait()
            # One more turn of the loop before draining, so the writes made meanwhile join
            # this batch: fewer, larger writes for the server and the client to process.
            await asyncio.sleep(0)
            watcher.wakeup.clear()
            await self._drain(watcher)
            if watcher.closed:
                break  # shutdown or a watcher too far behind: the client re-watches
            if self.opts.bookmarks and time.monotonic() >= next_bookmark:
                # The queue is drained, so every change up to the store's current
                # resourceVersion has been sent: that is the bookmark's version.
                mark = bookmark(self.rt, self.store_rv(), False)
                await self.resp.write(_line({"type": "BOOKMARK", "object": mark}))
                next_bookmark = time.monotonic() + self.bookmark_interval

    async def _drain(self, watcher: Watcher) -> None:
        if not watcher.queue:
            return
        batch = []
        while watcher.queue:
            batch.append(self.encode(watcher.queue.popleft()))
            self.sent += 1
            if self._cut():
                break
        await self.resp.write(b"".join(batch))
