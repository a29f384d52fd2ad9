"""Events from the simulated cluster's own components, recorded as client-go's `tools/record`.

`kubectl describe pod` and `kubectl get events` read what the Job controller, the scheduler
and the kubelet say about objects (SuccessfulCreate, FailedScheduling, BackOff, ...). Those
components record through client-go's event broadcaster, whose `EventCorrelator`
(`tools/record/events_cache.go`) decides what reaches the API server; this module does the
same, so counts, names and combined messages look as on a real cluster:

- Aggregation (`EventAggregator`): events with the same source, involved object, type and
  reason but more than `MAX_SIMILAR` (10) distinct messages within `AGGREGATE_WINDOW` (10
  minutes) become one Event whose message is `(combined from similar events): <latest>`.
- Deduplication (`eventLogger`): an event equal to an earlier one (same source, object
  including fieldPath, type, reason and message) patches that Event's `count` and
  `lastTimestamp` instead of creating a new object - `kubectl describe` shows "(x5 over 2m)".
- Spam filter (`kubeutil.eventspam`, shared with the controller): a token bucket per source
  and involved object, applied after the two steps above, as client-go does.

`EventCorrelator` is that decision alone (pure, with the time passed in); `EventSink` writes
what it lets through, from one task, in batches, straight into the in-process store, so a
benchmark creating tens of thousands of pods pays a dictionary lookup per event and at most
25 writes per object at once. The sink's queue is bounded: when the writer falls behind,
events are dropped and counted (`dropped`), as the broadcaster drops when its channel is full.

Events are core/v1 (what `tools/record` writes); the scheduler, which records through
events.k8s.io in Kubernetes, is written in the same core/v1 shape with its `action`, so
`kubectl describe` shows it alike (see docs/upstream-differences.md). Not modelled: the
broadcaster's retries (a write the API core refuses is logged and dropped) and event TTL
(`--event-ttl`): Events stay until their namespace is deleted.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import structlog

from kubesim.apiserver.core.apicore import ApiCore
from kubesim.clock import now_rfc3339
from kubesim.machinery.errors import ApiError
from kubeutil.aio import cancel_and_wait
from kubeutil.eventspam import SpamFilter

__all__ = [
    "NORMAL",
    "WARNING",
    "EventCorrelator",
    "EventRecorder",
    "EventSink",
    "EventWrite",
]

log = structlog.get_logger("sim.events")

NORMAL: Final = "Normal"
WARNING: Final = "Warning"

# client-go tools/record/events_cache.go defaults.
MAX_LRU_ENTRIES: Final = 4096  # maxLruCacheEntries
MAX_SIMILAR: Final = 10  # defaultAggregateMaxEvents
AGGREGATE_WINDOW: Final = 600.0  # defaultAggregateIntervalInSeconds
COMBINED_PREFIX: Final = "(combined from similar events): "
MAX_MESSAGE: Final = 1024  # what the scheduler truncates to; the API limit is larger
EVENT_TTL: Final = 3600.0  # kube-apiserver's --event-ttl default

INVOLVED_FIELDS: Final = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion")


def involved_object(obj: Mapping[str, Any], field_path: str = "") -> dict[str, str]:
    """The `involvedObject` reference of an event about `obj` (an object as the API holds
    it), with `fieldPath` such as `spec.containers{main}` for a container's events."""
    meta = obj.get("metadata") or {}
    ref = {
        "kind": str(obj.get("kind") or ""),
        "namespace": str(meta.get("namespace") or ""),
        "name": str(meta.get("name") or ""),
        "uid": str(meta.get("uid") or ""),
        "apiVersion": str(obj.get("apiVersion") or ""),
        "resourceVersion": str(meta.get("resourceVersion") or ""),
    }
    if field_path:
        ref["fieldPath"] = field_path
    return {k: v for k, v in ref.items() if v}


class _LRU(OrderedDict[Hashable, Any]):
    """A bounded mapping that forgets the least recently used key (client-go's lru.Cache)."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def lookup(self, key: Hashable) -> Any:
        value = self.get(key)
        if value is not None:
            self.move_to_end(key)
        return value

    def store(self, key: Hashable, value: Any) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)


@dataclass
class _Similar:
    messages: set[str]
    last: float


@dataclass
class _Observed:
    name: str
    count: int
    first: str


@dataclass(frozen=True)
class EventWrite:
    """What the correlator lets through: a new Event (`count == 1`) or a repeat that sets
    `count`, `lastTimestamp` and `message` of the Event `name`."""

    name: str
    namespace: str
    involved: dict[str, str]
    type: str
    reason: str
    message: str
    component: str
    host: str
    count: int
    first: str
    last: str
    action: str = ""

    def body(self) -> dict[str, Any]:
        """The core/v1 Event as client-go's recorder creates it."""
        ev: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "involvedObject": dict(self.involved),
            "reason": self.reason,
            "message": self.message,
            "source": {"component": self.component, **({"host": self.host} if self.host else {})},
            "firstTimestamp": self.first,
            "lastTimestamp": self.last,
            "count": self.count,
            "type": self.type,
            "eventTime": None,
            "reportingComponent": self.component,
            "reportingInstance": self.host,
        }
        if self.action:
            ev["action"] = self.action
        return ev


@dataclass
class CorrelatorStats:
    created: int = 0
    repeated: int = 0
    combined: int = 0
    filtered: int = 0


class EventCorrelator:
    """client-go's `EventCorrelator` for any number of sources: aggregate similar events,
    count repeats, filter spam. `correlate` returns the write to make, or None when the
    spam filter drops the event."""

    def __init__(
        self,
        *,
        max_similar: int = MAX_SIMILAR,
        window: float = AGGREGATE_WINDOW,
        spam: SpamFilter | None = None,
        size: int = MAX_LRU_ENTRIES,
        name_clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self.max_similar = max_similar
        self.window = window
        self.spam = spam if spam is not None else SpamFilter(cache_size=size)
        self._similar = _LRU(size)
        self._observed = _LRU(size)
        self._name_clock = name_clock
        self._last_name_ns = 0
        self.stats = CorrelatorStats()

    def _new_name(self, involved_name: str) -> str:
        # `<object>.<unix nanoseconds in hex>`, as client-go names Events; strictly increasing
        # so two events in the same nanosecond tick do not collide.
        ns = max(self._name_clock(), self._last_name_ns + 1)
        self._last_name_ns = ns
        return f"{involved_name}.{ns:x}"

    def correlate(
        self,
        involved: dict[str, str],
        type_: str,
        reason: str,
        message: str,
        *,
        component: str,
        host: str = "",
        action: str = "",
        now: float,
        stamp: str,
    ) -> EventWrite | None:
        """Decide about one event at monotonic time `now` (`stamp`: the same instant as the
        RFC 3339 time written in the Event)."""
        message = message[:MAX_MESSAGE]
        g = involved.get
        obj = (g("kind"), g("namespace"), g("name"), g("uid"), g("apiVersion"))
        similar_key = (component, host, *obj, type_, reason)
        # A record found is already the most recent of its cache (`lookup`) and is changed
        # in place; only a new one is stored.
        similar: _Similar | None = self._similar.lookup(similar_key)
        if similar is None or now - similar.last > self.window:
            similar = _Similar(set(), now)
            self._similar.store(similar_key, similar)
        similar.messages.add(message)
        similar.last = now
        if len(similar.messages) < self.max_similar:
            key: Hashable = (*similar_key, g("fieldPath"), message)
        else:
            similar.messages.pop()  # keep the set at its bound, as client-go's PopAny
            key = similar_key
            message = COMBINED_PREFIX + message
            self.stats.combined += 1
        seen: _Observed | None = self._observed.lookup(key)
        if seen is None:
            seen = _Observed(self._new_name(g("name") or ""), 0, stamp)
            self._observed.store(key, seen)
        seen.count += 1
        if not self.spam.allow((component, host, *obj), now):
            self.stats.filtered += 1
            return None
        if seen.count > 1:
            self.stats.repeated += 1
        else:
            self.stats.created += 1
        return EventWrite(
            name=seen.name,
            namespace=g("namespace") or "default",
            involved=involved,
            type=type_,
            reason=reason,
            message=message,
            component=component,
            host=host,
            count=seen.count,
            first=seen.first,
            last=stamp,
            action=action,
        )

    def recreated(self, write: EventWrite) -> None:
        """The Event of `write` was gone (deleted with its namespace) and is created again
        with count 1: later repeats count from there."""
        for seen in self._observed.values():
            if seen.name == write.name:
                seen.count, seen.first = 1, write.last
                return


@dataclass
class SinkStats:
    written: int = 0
    dropped: int = 0
    failed: int = 0
    batches: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)


class EventSink:
    """The event writer of the simulated cluster: recorders correlate at once (no I/O) and
    queue what passes; one task writes the queue in batches into the API core's store
    (`ApiCore.write_trusted`: no admission or validation, which would cost more than the
    write), so watchers, field selectors and `kubectl get events` see Events like any
    object."""

    def __init__(
        self,
        core: ApiCore,
        *,
        queue_limit: int = 20_000,
        batch: int = 64,
        correlator: EventCorrelator | None = None,
        ttl: float = EVENT_TTL,
        sweep_every: float = 60.0,
    ) -> None:
        self.core = core
        rt = core.registry.get("", "v1", "events")
        assert rt is not None
        self._rt = rt
        self.correlator = correlator if correlator is not None else EventCorrelator()
        self.queue_limit = queue_limit
        self.batch = batch
        self.ttl = ttl
        self.sweep_every = sweep_every
        self._sweeper: asyncio.Task[None] | None = None
        self._queue: deque[EventWrite] = deque()
        self._wakeup: asyncio.Event | None = None
        self._idle: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self.stats = SinkStats()

    def recorder(self, component: str) -> EventRecorder:
        return EventRecorder(self, component)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        if self._task is None:
            self._wakeup = asyncio.Event()
            self._idle = asyncio.Event()
            self._idle.set()
            self._task = asyncio.create_task(self._run(), name="sim-event-sink")
            self._sweeper = asyncio.create_task(self._sweep_every(), name="sim-event-ttl")

    async def stop(self, flush_timeout: float = 2.0) -> None:
        if self._task is None:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.flush(), flush_timeout)
        tasks = [t for t in (self._task, self._sweeper) if t is not None]
        self._task = self._sweeper = None
        await cancel_and_wait(*tasks)

    # ------------------------------------------------------------------ TTL

    def sweep(self, now: float | None = None) -> int:
        """Remove the core/v1 Events (anyone's) last written more than `ttl` seconds before
        `now` (wall seconds), as kube-apiserver's `--event-ttl` (1 h) does; returns how many
        went."""
        cutoff = now_rfc3339((time.time() if now is None else now) - self.ttl)
        rs = self.core.store.resources.get(self._rt.key)
        if rs is None:
            return 0
        old = []
        for ev in rs.objects.values():
            # The API server's lease starts at each write: creation, or the latest repeat
            # (`lastTimestamp`; a client may set an old one on a new Event, hence the max).
            # RFC 3339 UTC stamps of one format compare as strings: no parsing per Event.
            created = ev["metadata"].get("creationTimestamp") or ""
            last = ev.get("lastTimestamp") or ""
            stamp = max(str(created), str(last))
            if stamp < cutoff:
                old.append(ev)
        for ev in old:
            self.core.force_remove(self._rt, ev)
        return len(old)

    async def _sweep_every(self) -> None:
        while True:
            await asyncio.sleep(self.sweep_every)
            try:
                self.sweep()
            except Exception:
                log.exception("event TTL sweep failed")

    async def flush(self) -> None:
        """Wait until everything queued so far is written."""
        while self._queue or (self._idle is not None and not self._idle.is_set()):
            if self._idle is None:
                return
            await self._idle.wait()
            if self._queue:
                await asyncio.sleep(0)

    # ------------------------------------------------------------------ recording

    def offer(self, write: EventWrite) -> None:
        if len(self._queue) >= self.queue_limit or self._task is None:
            self.stats.dropped += 1
            return
        self._queue.append(write)
        if self._wakeup is not None and not self._wakeup.is_set():
            self._wakeup.set()

    async def _run(self) -> None:
        assert self._wakeup is not None and self._idle is not None
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            while self._queue:
                self._idle.clear()
                n = min(len(self._queue), self.batch)
                batch = [self._queue.popleft() for _ in range(n)]
                self.stats.batches += 1
                for write in batch:
                    try:
                        self._write(write)
                        self.stats.written += 1
                        by = self.stats.by_reason
                        by[write.reason] = by.get(write.reason, 0) + 1
                    except ApiError as err:
                        self.stats.failed += 1
                        if err.code != 403:  # 403: the namespace is being deleted
                            log.info("event not written", reason=write.reason, error=str(err))
                    except Exception:
                        self.stats.failed += 1
                        log.exception("event write crashed", reason=write.reason)
                await asyncio.sleep(0)  # let the components run between batches
            self._idle.set()

    def _write(self, write: EventWrite) -> None:
        ns = write.namespace
        if write.count > 1:
            current = self.core.store.get(self._rt.key, (ns, write.name))
            if current is not None:
                updated = {
                    **current,
                    "metadata": dict(current["metadata"]),
                    "count": write.count,
                    "lastTimestamp": write.last,
                    "message": write.message,
                }
                self.core.write_trusted(self._rt, updated)
                return
            # Deleted meanwhile (or its first write was dropped): create it afresh.
            write = dataclasses.replace(write, count=1, first=write.last)
            self.correlator.recreated(write)
        self.core.write_trusted(self._rt, write.body(), write.last)


class EventRecorder:
    """`recorder.event(obj, type, reason, message)` for one component (its `source`).

    Never blocks and never fails the caller: the decision is the correlator's, the write
    happens later in the sink. Without a sink (components built on their own in tests)
    nothing is recorded."""

    def __init__(self, sink: EventSink | None, component: str) -> None:
        self.sink = sink
        self.component = component
        self._stamp_second = -1
        self._stamp = ""

    def _now(self) -> tuple[float, str]:
        """Monotonic time, and the wall time as RFC 3339 (formatted once a second: whole
        seconds are all an Event's timestamps carry, and formatting is the costly part)."""
        wall = time.time()
        second = int(wall)
        if second != self._stamp_second:
            self._stamp_second, self._stamp = second, now_rfc3339(second)
        return time.monotonic(), self._stamp

    def event(
        self,
        obj: Mapping[str, Any],
        type_: str,
        reason: str,
        message: str,
        *,
        field_path: str = "",
        host: str = "",
        action: str = "",
    ) -> None:
        sink = self.sink
        if sink is None or sink._task is None:
            return
        try:
            now, stamp = self._now()
            write = sink.correlator.correlate(
                involved_object(obj, field_path),
                type_,
                reason,
                message,
                component=self.component,
                host=host,
                action=action,
                now=now,
                stamp=stamp,
            )
        except Exception:  # an event must never break the component recording it
            log.exception("event correlation failed", reason=reason)
            return
        if write is not None:
            sink.offer(write)


NO_EVENTS: Final = EventRecorder(None, "")
