"""The reflector: keeps a local store in step with the API server by list + watch.

Behaviour follows client-go's `tools/cache/reflector.go`:

- a paginated list (`limit` + `continue`); when a continue token expires (410) the list is
  restarted without pagination, as client-go's pager falls back to a full list;
- then a watch from the list's resourceVersion, with bookmarks so that the resourceVersion
  stays fresh even when nothing of ours changes (a later resume then does not hit 410);
- a watch that ends cleanly (server timeout, a proxy closing it) is resumed from the last
  resourceVersion seen: nothing is lost, the server replays from there;
- `410 Gone` (too old resourceVersion, as an HTTP status or an ERROR event) or a broken
  stream (connection reset, unparsable data) leads to a fresh list; the sink diffs it against
  what it has, so an object deleted while nobody watched is still reported deleted;
- failures back off exponentially with jitter (client-go: 800 ms doubling to 30 s), reset
  once a watch has been established again.

The reflector owns no store: it feeds a `ReflectorSink` (the informer), which owns the store,
the diffing and the event handlers.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any, Protocol

import aiohttp
import orjson

from jobset.runtime.client import ApiError, Client, Object, Resource, WatchDecoder
from jobset.runtime.logging import get_logger

__all__ = ["YIELD_EVERY", "Reflector", "ReflectorSink"]

# Items handled between two returns to the event loop, in a list's pages and in a watch
# stream. aiohttp's `readline()` answers from its buffer without suspending, so a burst of
# buffered watch events (a large JobSet's Jobs created in a burst) would otherwise be
# transformed and dispatched in one stretch, every other task - webhook answers, lease
# renewals, other tenants' reconciles - waiting behind it.
YIELD_EVERY = 64


class ReflectorSink(Protocol):
    def replace(self, objects: list[Object], resource_version: str) -> None:
        """The complete current state, from a (re)list."""
        ...

    def apply(self, event_type: str, obj: Object) -> None:
        """One watch event: ADDED, MODIFIED or DELETED."""
        ...


class _Relist(Exception):
    """Internal: the watch cannot be resumed; list again."""


class Reflector:
    """List + watch one resource (optionally one namespace / selector) into a sink."""

    def __init__(
        self,
        client: Client,
        resource: Resource,
        sink: ReflectorSink,
        *,
        namespace: str | None = None,
        label_selector: str = "",
        field_selector: str = "",
        transform: Callable[[Object], Object] | None = None,
        decode: WatchDecoder | None = None,
        page_size: int = 500,
        min_watch_timeout: int = 300,
        backoff_initial: float = 0.8,
        backoff_max: float = 30.0,
        name: str = "",
    ) -> None:
        self.client = client
        self.resource = resource
        self.sink = sink
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.transform = transform
        self.decode = decode
        self.page_size = page_size
        self.min_watch_timeout = min_watch_timeout
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.name = name or str(resource)
        self.last_sync_resource_version = ""
        self.lists = 0  # completed lists, initial one included
        self.watches = 0  # watches established
        self._need_list = True
        self._backoff = backoff_initial
        self.log = get_logger("reflector", resource=self.name)

    async def run(self) -> None:
        """List and watch until cancelled; never returns normally."""
        while True:
            try:
                await self._list_and_watch()
            except asyncio.CancelledError:
                raise
            except _Relist as why:
                self.log.info(
                    "relisting", reason=str(why), resource_version=self.last_sync_resource_version
                )
            except Exception as exc:  # keep going whatever the server does
                self._need_list = True
                self.log.warning("list/watch failed", error=repr(exc))
            delay = self._backoff * (0.5 + random.random() / 2)
            self._backoff = min(self._backoff * 2, self.backoff_max)
            await asyncio.sleep(delay)

    async def _list_and_watch(self) -> None:
        if self._need_list:
            objects, rv = await self._list()
            self.sink.replace(objects, rv)
            self.last_sync_resource_version = rv
            self._need_list = False
            self.lists += 1
        while True:
            await self._watch_once()

    async def _list(self) -> tuple[list[Object], str]:
        limit = self.page_size
        objects: list[Object] = []
        token = ""
        while True:
            try:
                page = await self.client.list(
                    self.resource,
                    self.namespace,
                    label_selector=self.label_selector,
                    field_selector=self.field_selector,
                    limit=limit,
                    continue_token=token,
                )
            except ApiError as err:
                if err.gone and token:
                    # The continue token expired mid-list: start over with one full list.
                    self.log.info("continue token expired, listing without pagination")
                    objects, token, limit = [], "", 0
                    continue
                raise
            for n, item in enumerate(page.get("items") or (), 1):
                objects.append(self._prepare(item))
                if n % YIELD_EVERY == 0:
                    await asyncio.sleep(0)
            meta = page.get("metadata") or {}
            token = meta.get("continue") or ""
            if not token:
                return objects, str(meta.get("resourceVersion") or "")

    def _prepare(self, obj: Object, *, decoded: bool = False) -> Object:
        # List items carry no apiVersion/kind; watch objects do. Make them uniform.
        obj.setdefault("apiVersion", self.resource.api_version)
        obj.setdefault("kind", self.resource.kind)
        if decoded or self.transform is None:
            return obj  # a watch decoder leaves its objects as the transform would
        return self.transform(obj)

    async def _watch_once(self) -> None:
        # client-go: a random timeout in [min, 2*min) spreads re-watches of many informers.
        timeout = int(self.min_watch_timeout * (1 + random.random()))
        try:
            async with self.client.watch(
                self.resource,
                self.namespace,
                resource_version=self.last_sync_resource_version,
                timeout_seconds=timeout,
                allow_bookmarks=True,
                label_selector=self.label_selector,
                field_selector=self.field_selector,
                decode=self.decode,
            ) as events:
                self.watches += 1
                established = True
                handled = 0
                async for event in events:
                    self._handle(event, established)
                    established = False
                    handled += 1
                    if handled % YIELD_EVERY == 0:
                        await asyncio.sleep(0)
        except ApiError as err:
            if err.gone:
                self._need_list = True
                raise _Relist(f"watch: {err.message or 'gone'}") from None
            raise
        except (
            aiohttp.ClientPayloadError,
            aiohttp.ClientConnectionError,
            orjson.JSONDecodeError,
            TimeoutError,
        ) as exc:
            self._need_list = True
            raise _Relist(f"watch stream broken: {exc!r}") from None
        # A clean end (server-side timeout, or a cut): resume from the last resourceVersion.

    def _handle(self, event: dict[str, Any], first: bool) -> None:
        etype = event.get("type")
        obj = event.get("object") or {}
        if etype == "ERROR":
            code = obj.get("code")
            if code == 410:
                self._need_list = True
                raise _Relist(f"watch: {obj.get('message') or 'gone'}")
            raise ApiError.from_status(int(code or 500), obj)
        if first:
            self._backoff = self.backoff_initial  # the server answers again: reset backoff
        rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        if etype == "BOOKMARK":
            if rv:
                self.last_sync_resource_version = rv
            return
        if etype not in ("ADDED", "MODIFIED", "DELETED"):
            self.log.warning("unknown watch event type", type=etype)
            return
        self.sink.apply(etype, self._prepare(obj, decoded=self.decode is not None))
        if rv:
            self.last_sync_resource_version = rv
