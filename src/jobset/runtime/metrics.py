"""The controller runtime's Prometheus metrics, on a registry per manager.

Names, label sets and buckets follow controller-runtime and client-go so that dashboards and
alerts written for Go controllers (kube-prometheus, the controller-runtime Grafana
dashboards) work unchanged against this controller.

Why a registry per manager instead of prometheus-client's global default: tests (and the
leader-election fixtures) run several managers side by side in one process; with the global
registry their series would be shared and a second registration of the same name would fail.
`new_registry()` gives each manager its own `CollectorRegistry`, `RuntimeMetrics(registry)`
registers the runtime's series on it, and the manager serves exactly that registry on
`--metrics-port`. The JobSet reconciler adds its own metrics (`jobset.controllers.metrics`)
to the same registry.
"""

from __future__ import annotations

import gc

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
)
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

__all__ = [
    "EVENT_LOOP_LAG_BUCKETS",
    "RECONCILE_TIME_BUCKETS",
    "REST_CLIENT_DURATION_BUCKETS",
    "WORKQUEUE_DURATION_BUCKETS",
    "RuntimeMetrics",
    "new_registry",
]

# Go's client_golang has no `_created` series; leaving them on doubles every counter's series
# count for nothing a Go dashboard reads. (A process-wide switch of prometheus-client.)
disable_created_metrics()  # type: ignore[no-untyped-call]

# controller-runtime pkg/internal/controller/metrics: reconcile_time_seconds buckets.
RECONCILE_TIME_BUCKETS: tuple[float, ...] = (
    *(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5),
    *(0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5),
    *(5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60),
)
# controller-runtime pkg/metrics/workqueue.go: ExponentialBuckets(10e-9, 10, 12).
WORKQUEUE_DURATION_BUCKETS: tuple[float, ...] = tuple(1e-8 * 10**i for i in range(12))
# client-go / component-base restclient metrics: request latency buckets.
REST_CLIENT_DURATION_BUCKETS: tuple[float, ...] = (
    *(0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0),
)


def new_registry(process_metrics: bool = True) -> CollectorRegistry:
    """A fresh registry; with the process/platform collectors a Go binary would also export."""
    registry = CollectorRegistry(auto_describe=True)
    if process_metrics:
        ProcessCollector(registry=registry)
        PlatformCollector(registry=registry)
    return registry


class RuntimeMetrics:
    """Every metric of the controller runtime, registered on one registry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else new_registry()
        self._controller_metrics(self.registry)
        self._workqueue_metrics(self.registry)
        self._client_metrics(self.registry)
        self._certwatcher_metrics(self.registry)
        self._own_metrics(self.registry)

    def _controller_metrics(self, r: CollectorRegistry) -> None:
        # controller-runtime: pkg/internal/controller/metrics
        self.reconcile_total = Counter(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            ["controller", "result"],
            registry=r,
        )
        self.reconcile_errors_total = Counter(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            ["controller"],
            registry=r,
        )
        self.terminal_reconcile_errors_total = Counter(
            "controller_runtime_terminal_reconcile_errors",
            "Total number of terminal reconciliation errors per controller",
            ["controller"],
            registry=r,
        )
        self.reconcile_panics_total = Counter(
            "controller_runtime_reconcile_panics",
            "Total number of reconciliation panics per controller",
            ["controller"],
            registry=r,
        )
        # This runtime's own: passes cut by --reconcile-timeout (controller-runtime's
        # ReconciliationTimeout), which also count as errors.
        self.reconcile_timeouts_total = Counter(
            "controller_runtime_reconcile_timeouts",
            "Total number of reconciliations cut by the reconcile timeout per controller",
            ["controller"],
            registry=r,
        )
        self.reconcile_time_seconds = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            ["controller"],
            buckets=RECONCILE_TIME_BUCKETS,
            registry=r,
        )
        self.max_concurrent_reconciles = Gauge(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            ["controller"],
            registry=r,
        )
        self.active_workers = Gauge(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            ["controller"],
            registry=r,
        )

    def _workqueue_metrics(self, r: CollectorRegistry) -> None:
        # controller-runtime: pkg/metrics/workqueue.go (labels name and controller)
        wq = ["name", "controller"]
        self.workqueue_depth = Gauge(
            "workqueue_depth", "Current depth of workqueue", wq, registry=r
        )
        self.workqueue_adds_total = Counter(
            "workqueue_adds", "Total number of adds handled by workqueue", wq, registry=r
        )
        self.workqueue_queue_duration_seconds = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            wq,
            buckets=WORKQUEUE_DURATION_BUCKETS,
            registry=r,
        )
        self.workqueue_work_duration_seconds = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            wq,
            buckets=WORKQUEUE_DURATION_BUCKETS,
            registry=r,
        )
        self.workqueue_retries_total = Counter(
            "workqueue_retries", "Total number of retries handled by workqueue", wq, registry=r
        )
        self.workqueue_unfinished_work_seconds = Gauge(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been "
            "observed by work_duration. Large values indicate stuck threads. One can deduce "
            "the number of stuck threads by observing the rate at which this increases.",
            wq,
            registry=r,
        )
        self.workqueue_longest_running_processor_seconds = Gauge(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            wq,
            registry=r,
        )

    def _client_metrics(self, r: CollectorRegistry) -> None:
        # client-go / component-base: restclient metrics
        self.rest_client_requests_total = Counter(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ["code", "method", "host"],
            registry=r,
        )
        self.rest_client_request_duration_seconds = Histogram(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            ["verb", "host"],
            buckets=REST_CLIENT_DURATION_BUCKETS,
            registry=r,
        )
        self.rest_client_rate_limiter_duration_seconds = Histogram(
            "rest_client_rate_limiter_duration_seconds",
            "Client side rate limiter latency in seconds. Broken down by verb, and host.",
            ["verb", "host"],
            buckets=REST_CLIENT_DURATION_BUCKETS,
            registry=r,
        )
        # client-go: tools/leaderelection/metrics.go
        self.leader_election_master_status = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
            "backup, 1 indicates master. 'name' is the string used to identify the lease.",
            ["name"],
            registry=r,
        )

    def _certwatcher_metrics(self, r: CollectorRegistry) -> None:
        # controller-runtime: pkg/certwatcher/metrics (no labels there either). Every load of
        # a serving certificate counts, for the webhook and the metrics server alike: from
        # files (runtime/certfiles.py, each poll) or from the internal rotator's Secret
        # (webhooks/certcontroller.py, each pass).
        self.certwatcher_read_certificate_total = Counter(
            "certwatcher_read_certificate",
            "Total number of certificate reads",
            registry=r,
        )
        self.certwatcher_read_certificate_errors_total = Counter(
            "certwatcher_read_certificate_errors",
            "Total number of certificate read errors",
            registry=r,
        )

    def _own_metrics(self, r: CollectorRegistry) -> None:
        # This runtime's own: events not written (runtime/events.py), by why: `spam` (the
        # per-object filter client-go's recorder has) or `queue_full`.
        self.event_recorder_dropped_total = Counter(
            "event_recorder_dropped",
            "Events not written to the API server, by recorder component and reason "
            "(spam: the per-object spam filter, queue_full: the writer is behind)",
            ["component", "reason"],
            registry=r,
        )
        # This runtime's own: how late the event loop runs what is due (see runtime/looplag.py).
        self.event_loop_lag_seconds = Histogram(
            "asyncio_event_loop_lag_seconds",
            "How late the event loop woke a task that was due (seconds): the time every "
            "reconcile, webhook answer and lease renewal waits behind work on the loop",
            buckets=EVENT_LOOP_LAG_BUCKETS,
            registry=r,
        )
        # And what stops the loop without any task computing: the cyclic garbage collector
        # (see runtime/gcpause.py).
        self.gc_duration_seconds = Histogram(
            "python_gc_duration_seconds",
            "How long each garbage collection stopped the process (seconds), by generation "
            "(2: a full collection, which walks every tracked object)",
            ["generation"],
            buckets=EVENT_LOOP_LAG_BUCKETS,
            registry=r,
        )
        self.gc_frozen_objects = Gauge(
            "python_gc_frozen_objects",
            "Objects frozen out of the garbage collector's walks (kubeutil.gcfreeze): what "
            "survived the last full collection; dropping back after each periodic reclaim",
            registry=r,
        )
        self.gc_frozen_objects.set_function(gc.get_freeze_count)


# A healthy loop answers within a millisecond; 100 ms is where the alert starts.
EVENT_LOOP_LAG_BUCKETS: tuple[float, ...] = (
    *(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
