"""Kubernetes Events (core/v1), recorded without ever blocking a reconcile.

client-go's `tools/record`: `recorder.event(obj, type, reason, message)` only puts the event
on a bounded in-memory queue (full queue: the event is dropped and counted, as the
broadcaster's `DropIfChannelFull`); a background task writes them. Repeats of the same
event (same object, type, reason, message and source) within the cache window are
aggregated like client-go's `EventCorrelator`/`eventLogger`: the existing Event is patched
with `count + 1` and a new `lastTimestamp` instead of creating a new object - that is what
`kubectl describe` shows as "(x5 over 2m)".

Before any of that, client-go's `EventSourceObjectSpamFilter` (`kubeutil.eventspam`, shared
with the simulator): a token bucket per source and involved object (burst 25, then one event per 5 minutes; 4096 objects remembered, least
recently used forgotten), whatever the type, reason or message. An object that fails or
restarts in a loop - and tenants choose what their JobSets do - costs the API server at
most 25 events at once and 12 an hour after that, instead of one per reconcile; what is
filtered is counted in `event_recorder_dropped_total{reason="spam"}`.

core/v1 rather than events.k8s.io/v1 because `kubectl describe` and most tooling read both,
and the core form carries `count` directly (the only thing aggregation needs).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from jobset.runtime.client import EVENTS, ApiError, Client, Object
from jobset.runtime.logging import get_logger
from kubeutil.aio import cancel_and_wait
from kubeutil.eventspam import SpamFilter

if TYPE_CHECKING:
    from jobset.runtime.metrics import RuntimeMetrics

__all__ = ["NORMAL", "WARNING", "EventRecorder"]

NORMAL = "Normal"
WARNING = "Warning"


@dataclass
class _Pending:
    involved: Object
    type: str
    reason: str
    message: str
    at: str


@dataclass
class _Seen:
    name: str
    namespace: str
    count: int
    first: str
    last_write: float


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class EventRecorder:
    """Non-blocking event recording with a per-object spam filter and aggregation of repeats.

    `spam_filter` is client-go's (burst 25, one per 5 minutes per object; pass one with a
    fake clock in tests). `metrics` counts dropped events by reason (`spam`: filtered;
    `queue_full`: the writer is behind).
    """

    def __init__(
        self,
        client: Client,
        component: str,
        *,
        host: str = "",
        queue_size: int = 1000,
        cache_size: int = 4096,
        aggregation_window: float = 600.0,
        spam_filter: SpamFilter | None = None,
        metrics: RuntimeMetrics | None = None,
    ) -> None:
        self.client = client
        self.component = component
        self.host = host or os.uname().nodename
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue(maxsize=queue_size)
        self._seen: OrderedDict[tuple[str, ...], _Seen] = OrderedDict()
        self._cache_size = cache_size
        self._window = aggregation_window
        self._task: asyncio.Task[None] | None = None
        self.spam_filter = spam_filter if spam_filter is not None else SpamFilter()
        self._dropped_metric = None if metrics is None else metrics.event_recorder_dropped_total
        self.dropped = 0  # the queue was full
        self.filtered = 0  # the spam filter refused
        self.written = 0
        self.log = get_logger("events", component=component)

    # ------------------------------------------------------------------ recording

    def event(self, obj: Object, type_: str, reason: str, message: str) -> None:
        """Record an event about `obj`; returns at once, whatever the API server does."""
        meta = obj.get("metadata", {})
        # client-go's spam key: source (component, host: one per recorder) + involved object.
        spam_key = (
            obj.get("kind", ""),
            meta.get("namespace", ""),
            meta.get("name", ""),
            meta.get("uid", ""),
            obj.get("apiVersion", ""),
        )
        if not self.spam_filter.allow(spam_key):
            self.filtered += 1
            self._count_drop("spam")
            return
        involved = {
            "apiVersion": obj.get("apiVersion", ""),
            "kind": obj.get("kind", ""),
            "name": meta.get("name", ""),
            "namespace": meta.get("namespace", ""),
            "uid": meta.get("uid", ""),
            "resourceVersion": meta.get("resourceVersion", ""),
        }
        try:
            self._queue.put_nowait(_Pending(involved, type_, reason, message[:1024], _now()))
        except asyncio.QueueFull:
            self.dropped += 1
            self._count_drop("queue_full")

    def _count_drop(self, reason: str) -> None:
        if self._dropped_metric is not None:
            self._dropped_metric.labels(self.component, reason).inc()

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"events {self.component}")

    async def stop(self, flush_timeout: float = 2.0) -> None:
        """Write what is queued (within `flush_timeout`), then stop."""
        if self._task is None:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._queue.join(), flush_timeout)
        task, self._task = self._task, None
        await cancel_and_wait(task)

    async def _run(self) -> None:
        while True:
            pending = await self._queue.get()
            try:
                await self._write(pending)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.log.warning("could not write event", reason=pending.reason, error=repr(exc))
            finally:
                self._queue.task_done()

    async def _write(self, ev: _Pending) -> None:
        inv = ev.involved
        namespace = inv["namespace"] or "default"
        key = (inv["uid"], inv["kind"], namespace, inv["name"], ev.type, ev.reason, ev.message)
        seen = self._seen.get(key)
        now = time.monotonic()
        if seen is not None and now - seen.last_write < self._window:
            patch = {"count": seen.count + 1, "lastTimestamp": ev.at}
            try:
                await self.client.patch(EVENTS, seen.name, patch, seen.namespace)
                seen.count += 1
                seen.last_write = now
                self._seen.move_to_end(key)
                self.written += 1
                return
            except ApiError as err:
                if not err.not_found:
                    raise
                # the Event was deleted (TTL): create a fresh one below
        name = f"{inv['name']}.{time.time_ns():x}"
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {k: v for k, v in inv.items() if v},
            "reason": ev.reason,
            "message": ev.message,
            "type": ev.type,
            "source": {"component": self.component, "host": self.host},
            "firstTimestamp": ev.at,
            "lastTimestamp": ev.at,
            "count": 1,
            "reportingComponent": self.component,
            "reportingInstance": self.host,
        }
        await self.client.create(EVENTS, body, namespace)
        self.written += 1
        self._seen[key] = _Seen(name, namespace, 1, ev.at, now)
        while len(self._seen) > self._cache_size:
            self._seen.popitem(last=False)
