"""The JobSet reconciler's Prometheus metrics (see docs/metrics.md), on the manager's registry.

Upstream's `jobset_failed_total` and `jobset_completed_total`, this project's restarts and
latency histograms, and `jobset_jobsets` by phase counted at scrape time. The runtime's
metrics (controller-runtime / client-go names) are `jobset.runtime.metrics`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily

__all__ = [
    "JOBSET_LATENCY_BUCKETS",
    "JOBSET_PHASES",
    "JobSetMetrics",
    "JobSetPhaseCollector",
]

# Seconds from a JobSet's creation to all its Jobs created / all ready: seconds to an hour+.
JOBSET_LATENCY_BUCKETS: tuple[float, ...] = (
    *(0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 30.0, 60.0),
    *(120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0, 7200.0),
)

JOBSET_PHASES: tuple[str, ...] = ("Running", "Suspended", "Restarting", "Completed", "Failed")


class JobSetMetrics:
    """Upstream's `jobset_failed_total` / `jobset_completed_total` plus this project's own.

    Cardinality is bounded by default: the `jobset_name` label (kept so upstream queries and
    dashboards still parse) is empty unless `per_jobset_names` is set, in which case each
    JobSet gets its own series, as upstream does. Everything else is by namespace.
    """

    def __init__(self, registry: CollectorRegistry, *, per_jobset_names: bool = False) -> None:
        self.per_jobset_names = per_jobset_names
        r = registry
        self.failed_total = Counter(
            "jobset_failed",
            "The total number of failed JobSets",
            ["jobset_name", "namespace"],
            registry=r,
        )
        self.completed_total = Counter(
            "jobset_completed",
            "The total number of completed JobSets",
            ["jobset_name", "namespace"],
            registry=r,
        )
        self.restarts_total = Counter(
            "jobset_restarts",
            "The total number of JobSet restarts applied by the failure policy "
            "(whole-JobSet and single-Job restarts) and of in-place group restarts",
            ["jobset_name", "namespace", "scope"],
            registry=r,
        )
        self.time_to_jobs_created_seconds = Histogram(
            "jobset_time_to_jobs_created_seconds",
            "Seconds from a JobSet's creation until the controller observed all its Jobs created",
            ["namespace"],
            buckets=JOBSET_LATENCY_BUCKETS,
            registry=r,
        )
        self.time_to_ready_seconds = Histogram(
            "jobset_time_to_ready_seconds",
            "Seconds from a JobSet's creation until the controller observed all its Jobs ready",
            ["namespace"],
            buckets=JOBSET_LATENCY_BUCKETS,
            registry=r,
        )

    def _name(self, name: str) -> str:
        return name if self.per_jobset_names else ""

    def jobset_failed(self, name: str, namespace: str) -> None:
        self.failed_total.labels(self._name(name), namespace).inc()

    def jobset_completed(self, name: str, namespace: str) -> None:
        self.completed_total.labels(self._name(name), namespace).inc()

    def jobset_restarted(self, name: str, namespace: str, scope: str) -> None:
        """`scope`: "jobset" (RestartJobSet*), "job" (RestartJob*) or "in-place" (an
        InPlaceRestart group restart began: previousInPlaceRestartAttempt was raised)."""
        self.restarts_total.labels(self._name(name), namespace, scope).inc()


class JobSetPhaseCollector:
    """`jobset_jobsets{namespace, phase}`: JobSets by phase, counted at scrape time.

    Counting the informer cache on each scrape (instead of inc/dec on transitions) cannot
    drift: a missed transition, a controller restart or a deleted JobSet is always right at
    the next scrape. `count` returns {(namespace, phase): n}.
    """

    def __init__(
        self, registry: CollectorRegistry, count: Callable[[], Mapping[tuple[str, str], int]]
    ) -> None:
        self._count = count
        registry.register(self)

    def describe(self) -> list[GaugeMetricFamily]:
        return [self._family()]

    def _family(self) -> GaugeMetricFamily:
        return GaugeMetricFamily(
            "jobset_jobsets",
            "Number of JobSets by namespace and phase (Running, Suspended, Restarting, "
            "Completed, Failed)",
            labels=["namespace", "phase"],
        )

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = self._family()
        for (namespace, phase), n in sorted(self._count().items()):
            family.add_metric([namespace, phase], n)
        yield family
