"""A controller: event handlers that map objects to keys, a workqueue, N reconcile workers.

controller-runtime's `pkg/internal/controller` and `pkg/handler`:

- `watch(informer, mapper)` turns every add/update/delete of the informer into
  `Request(namespace, name)` keys: `enqueue_object()` for the reconciled kind itself,
  `enqueue_owner(kind, group)` for owned kinds (the controller ownerReference's owner, as
  `EnqueueRequestForOwner(..., OnlyControllerOwner())`; on update both the old and the new
  owner), or any function (`enqueue_mapped`);
- `concurrency` workers (`--concurrency`, `MaxConcurrentReconciles`) take keys from the
  queue; one key is never reconciled by two workers at once (the queue guarantees it);
- the reconciler returns `Result()` (done: `forget` the key's backoff),
  `Result(requeue_after=s)` (forget, then re-add after s), `Result(requeue=True)` (re-add
  with backoff), or raises: the exception is logged with the controller and key, counted,
  and the key is re-added with per-item exponential backoff. A worker never dies.
- a `TerminalError` (controller-runtime's `reconcile.TerminalError`) is an error that
  retrying cannot fix: logged and counted as an error, and also in
  `controller_runtime_terminal_reconcile_errors_total`, but the key is not re-added; the
  next event of its objects brings it back. An `ExceptionGroup` (a `TaskGroup`'s) is
  terminal when every exception in it is: one retryable member is worth the retry.
- `reconcile_timeout` (`--reconcile-timeout`, controller-runtime's `ReconciliationTimeout`)
  time-boxes every pass: one that runs longer is cancelled at its next `await`, logged with
  the key, counted in `controller_runtime_reconcile_timeouts_total` (and as an error), and
  re-added with backoff. Passes are written so that a cut anywhere is safe: names are
  deterministic and expectations are recorded only after a write succeeded, so the next pass
  completes what this one left. A pass that never awaits cannot be cut; the reconciler's
  long loops yield (`cooperate()`), so one JobSet never holds the loop for the others.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Hashable, Iterable
from dataclasses import dataclass

import structlog

from jobset.runtime.cache import controller_of
from jobset.runtime.client import ApiError, Object
from jobset.runtime.informer import Informer
from jobset.runtime.logging import get_logger
from jobset.runtime.metrics import RuntimeMetrics
from jobset.runtime.ratelimit import RateLimiter, api_flow
from jobset.runtime.workqueue import ShutDown, WorkQueue
from kubeutil.aio import cancel_and_wait

__all__ = [
    "Controller",
    "EnqueueHandler",
    "Mapper",
    "Reconciler",
    "Request",
    "Result",
    "TerminalError",
    "enqueue_mapped",
    "enqueue_object",
    "enqueue_owner",
]


@dataclass(frozen=True, slots=True, order=True)
class Request:
    """What to reconcile: the namespace and name of one object (`reconcile.Request`)."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


@dataclass(frozen=True, slots=True)
class Result:
    """What the reconciler wants next (`reconcile.Result`)."""

    requeue: bool = False
    requeue_after: float = 0.0


class TerminalError(Exception):
    """Raised by a reconciler for an error that retrying will not fix (an object the
    controller cannot act on until someone changes it): not requeued, counted apart.

    `raise TerminalError("why") from err` keeps the cause in the logged traceback.
    """


def is_terminal(exc: BaseException) -> bool:
    """A `TerminalError`, or a group of nothing but terminal errors."""
    if isinstance(exc, TerminalError):
        return True
    if isinstance(exc, BaseExceptionGroup):
        _, rest = exc.split(TerminalError)
        return rest is None
    return False


Reconciler = Callable[[Request], Awaitable[Result | None]]
Mapper = Callable[[Object], Iterable[Request]]


def enqueue_object() -> Mapper:
    """The object's own key (`handler.EnqueueRequestForObject`)."""

    def mapper(obj: Object) -> Iterable[Request]:
        meta = obj["metadata"]
        return (Request(meta.get("namespace") or "", meta["name"]),)

    return mapper


def enqueue_owner(owner_kind: str, owner_group: str = "") -> Mapper:
    """The key of the object's controller owner, if it is of this kind and API group."""

    def mapper(obj: Object) -> Iterable[Request]:
        ref = controller_of(obj)
        if ref is None or ref.get("kind") != owner_kind:
            return ()
        api_version = str(ref.get("apiVersion", ""))
        group = api_version.rpartition("/")[0]
        if group != owner_group:
            return ()
        return (Request(obj["metadata"].get("namespace") or "", str(ref["name"])),)

    return mapper


def enqueue_mapped(fn: Callable[[Object], Iterable[Request]]) -> Mapper:
    """Any mapping (`handler.EnqueueRequestsFromMapFunc`)."""
    return fn


class EnqueueHandler:
    """Informer event handler feeding a controller's queue through a mapper."""

    def __init__(self, queue: WorkQueue[Request], mapper: Mapper) -> None:
        self.queue = queue
        self.mapper = mapper

    def on_add(self, obj: Object) -> None:
        for req in self.mapper(obj):
            self.queue.add(req)

    def on_update(self, old: Object, new: Object) -> None:
        reqs = set(self.mapper(new))
        reqs.update(self.mapper(old))
        for req in reqs:
            self.queue.add(req)

    def on_delete(self, obj: Object) -> None:
        for req in self.mapper(obj):
            self.queue.add(req)


class Controller:
    """Workers reconciling keys from a rate-limited queue fed by informer events."""

    def __init__(
        self,
        name: str,
        reconcile: Reconciler,
        *,
        concurrency: int = 1,
        rate_limiter: RateLimiter[Hashable] | None = None,
        metrics: RuntimeMetrics | None = None,
        reconcile_timeout: float = 0.0,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if reconcile_timeout < 0:
            raise ValueError("reconcile_timeout must not be negative")
        self.name = name
        self.reconcile_timeout = reconcile_timeout
        self.reconcile = reconcile
        self.concurrency = concurrency
        self.metrics = metrics
        self.queue: WorkQueue[Request] = WorkQueue(name, rate_limiter=rate_limiter, metrics=metrics)
        self.informers: list[Informer] = []
        self._workers: list[asyncio.Task[None]] = []
        self.log = get_logger("controller", controller=name)
        if metrics is not None:
            metrics.max_concurrent_reconciles.labels(name).set(concurrency)
            metrics.active_workers.labels(name).set(0)
            for result in ("error", "requeue", "requeue_after", "success"):
                metrics.reconcile_total.labels(name, result)
            metrics.reconcile_errors_total.labels(name)
            metrics.terminal_reconcile_errors_total.labels(name)
            metrics.reconcile_panics_total.labels(name)
            metrics.reconcile_timeouts_total.labels(name)

    def watch(self, informer: Informer, mapper: Mapper | None = None) -> None:
        """Reconcile what `mapper` returns for every event of `informer`."""
        informer.add_event_handler(EnqueueHandler(self.queue, mapper or enqueue_object()))
        self.informers.append(informer)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        if self._workers:
            return
        self.log.info("starting workers", workers=self.concurrency)
        self._workers = [
            asyncio.create_task(self._worker(), name=f"{self.name} worker {i}")
            for i in range(self.concurrency)
        ]

    @property
    def started(self) -> bool:
        return bool(self._workers)

    async def stop(self, grace_period: float | None = None) -> bool:
        """Shut the queue down, let workers finish what is queued and in flight, within
        `grace_period` seconds; workers still busy then are cancelled. True if all finished."""
        self.queue.shutdown()
        if not self._workers:
            return True
        _, pending = await asyncio.wait(self._workers, timeout=grace_period)
        await cancel_and_wait(*pending)
        self._workers = []
        self.log.info("workers stopped", cancelled=len(pending))
        return not pending

    # ------------------------------------------------------------------ workers

    async def _worker(self) -> None:
        while True:
            try:
                req = await self.queue.get()
            except ShutDown:
                return
            try:
                await self._process(req)
            finally:
                self.queue.done(req)

    async def _process(self, req: Request) -> None:
        m = self.metrics
        if m is not None:
            m.active_workers.labels(self.name).inc()
        t0 = time.perf_counter()
        outcome = "success"
        budget = self.reconcile_timeout or None
        deadline = asyncio.timeout(budget)
        try:
            with (
                structlog.contextvars.bound_contextvars(controller=self.name, key=str(req)),
                api_flow((self.name, req)),  # its requests take turns with other keys'
            ):
                async with deadline:
                    result = await self.reconcile(req)
        except asyncio.CancelledError:
            raise
        except TimeoutError as exc:
            outcome = "error"
            self.queue.add_rate_limited(req)
            if deadline.expired():
                # Our budget ran out (a TimeoutError of the reconciler's own, e.g. a request's,
                # is an ordinary error below).
                self.log.error(
                    "Reconciler timeout",
                    key=str(req),
                    timeout=budget,
                    elapsed=round(time.perf_counter() - t0, 3),
                    requeues=self.queue.num_requeues(req),
                )
                if m is not None:
                    m.reconcile_timeouts_total.labels(self.name).inc()
                    m.reconcile_errors_total.labels(self.name).inc()
            else:
                self._log_error(req, exc)
        except Exception as exc:
            outcome = "error"
            terminal = is_terminal(exc)
            if not terminal:
                # As controller-runtime, a terminal error neither requeues nor forgets: the
                # key's backoff stands for when an event brings it back and it fails again.
                self.queue.add_rate_limited(req)
            self._log_error(req, exc, terminal=terminal)
        else:
            if result is not None and result.requeue_after > 0:
                outcome = "requeue_after"
                self.queue.forget(req)
                self.queue.add_after(req, result.requeue_after)
            elif result is not None and result.requeue:
                outcome = "requeue"
                self.queue.add_rate_limited(req)
            else:
                self.queue.forget(req)
        finally:
            if m is not None:
                m.active_workers.labels(self.name).dec()
                m.reconcile_time_seconds.labels(self.name).observe(time.perf_counter() - t0)
                m.reconcile_total.labels(self.name, outcome).inc()

    def _log_error(self, req: Request, exc: BaseException, *, terminal: bool = False) -> None:
        self.log.error(
            "Reconciler error",
            key=str(req),
            error=repr(exc),
            requeues=self.queue.num_requeues(req),
            **({"terminal": True} if terminal else {}),
            exc_info=True,  # called from the `except` block
        )
        m = self.metrics
        if m is not None:
            m.reconcile_errors_total.labels(self.name).inc()
            if terminal:
                m.terminal_reconcile_errors_total.labels(self.name).inc()
            elif not isinstance(exc, ApiError):
                # A deliberate TerminalError is not an unexpected exception.
                m.reconcile_panics_total.labels(self.name).inc()
