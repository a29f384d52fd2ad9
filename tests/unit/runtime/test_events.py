"""The event recorder never blocks the caller: a full queue drops events and counts them."""

from __future__ import annotations

from typing import Any, cast

from jobset.runtime.client import Client
from jobset.runtime.events import WARNING, EventRecorder
from jobset.runtime.metrics import RuntimeMetrics, new_registry
from kubeutil.eventspam import SpamFilter


async def test_recording_never_blocks_and_drops_when_full() -> None:
    rec = EventRecorder(cast(Client, None), "test", host="h", queue_size=10)  # never started
    for i in range(1000):  # a plain function: it cannot wait for the API server
        # (1000 objects: the spam filter would stop 1000 events about one after 25)
        obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"x{i}"}}
        rec.event(obj, WARNING, "Failed", f"attempt {i}")
    assert rec.dropped == 990


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _dropped(registry: Any, reason: str) -> float:
    value = registry.get_sample_value(
        "event_recorder_dropped_total", {"component": "test", "reason": reason}
    )
    return float(value or 0.0)


def test_spam_filter_allows_a_burst_per_object_then_one_per_five_minutes() -> None:
    """client-go's EventSourceObjectSpamFilter: 25 events per object at once, refilled at
    one per 300 s; other objects keep their own budget; what is refused is counted."""
    clock = FakeClock()
    metrics = RuntimeMetrics(new_registry(process_metrics=False))
    rec = EventRecorder(
        cast(Client, None),
        "test",
        host="h",
        spam_filter=SpamFilter(clock=clock),
        metrics=metrics,
    )
    a = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n"}}
    b = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "n"}}
    for i in range(40):  # whatever the reason or message: the key is the object
        rec.event(a, WARNING, f"Reason{i % 3}", f"attempt {i}")
    assert rec._queue.qsize() == 25 and rec.filtered == 15
    assert _dropped(metrics.registry, "spam") == 15
    rec.event(b, WARNING, "Failed", "b has its own bucket")
    assert rec._queue.qsize() == 26

    clock.now += 299.0
    rec.event(a, WARNING, "Failed", "not yet")
    assert rec._queue.qsize() == 26
    clock.now += 1.0  # 300 s since the bucket ran dry: one token
    rec.event(a, WARNING, "Failed", "one more")
    rec.event(a, WARNING, "Failed", "and no more")
    assert rec._queue.qsize() == 27 and rec.filtered == 17
    assert _dropped(metrics.registry, "spam") == 17

    clock.now += 300.0 * 1000  # a long quiet spell refills the burst, never beyond it
    for i in range(30):
        rec.event(a, WARNING, "Failed", f"again {i}")
    assert rec._queue.qsize() == 27 + 25
    assert _dropped(metrics.registry, "spam") == 22
    assert _dropped(metrics.registry, "queue_full") == 0


def test_queue_full_drops_are_counted_in_the_metric() -> None:
    metrics = RuntimeMetrics(new_registry(process_metrics=False))
    rec = EventRecorder(cast(Client, None), "test", host="h", queue_size=3, metrics=metrics)
    for name in "abcde":
        obj = {"kind": "ConfigMap", "metadata": {"name": name, "namespace": "n"}}
        rec.event(obj, WARNING, "Failed", "x")
    assert rec.dropped == 2 and _dropped(metrics.registry, "queue_full") == 2
