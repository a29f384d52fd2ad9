"""The simulated components' event correlator (kubesim.base.events), without a server:
client-go's aggregation of repeats and similar events, and its per-object spam filter."""

from __future__ import annotations

import time
from typing import Any

from kubesim.apiserver.core.apicore import ApiCore
from kubesim.apiserver.core.store import Store
from kubesim.apiserver.registry.catalogue import served_types
from kubesim.apiserver.registry.registry import Registry
from kubesim.base.events import (
    COMBINED_PREFIX,
    EventCorrelator,
    EventSink,
    EventWrite,
    involved_object,
)
from kubesim.controllers.jobpolicy import condition_events

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p-0", "namespace": "ns", "uid": "u1", "resourceVersion": "7"},
}
JOB: dict[str, Any] = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "j", "namespace": "ns", "uid": "u2"},
}


def _correlator(**kw: Any) -> EventCorrelator:
    ticks = iter(range(1, 1_000_000))
    return EventCorrelator(name_clock=lambda: next(ticks), **kw)


def _send(
    c: EventCorrelator,
    obj: dict[str, Any],
    message: str,
    now: float,
    *,
    reason: str = "SuccessfulCreate",
    component: str = "job-controller",
    field_path: str = "",
) -> EventWrite | None:
    return c.correlate(
        involved_object(obj, field_path),
        "Normal",
        reason,
        message,
        component=component,
        now=now,
        stamp=f"t{now:g}",
    )


def test_involved_object_reference() -> None:
    ref = involved_object(POD, "spec.containers{main}")
    assert ref == {
        "kind": "Pod",
        "namespace": "ns",
        "name": "p-0",
        "uid": "u1",
        "apiVersion": "v1",
        "resourceVersion": "7",
        "fieldPath": "spec.containers{main}",
    }


def test_first_event_is_a_new_event_object_named_after_the_object() -> None:
    c = _correlator()
    w = _send(c, POD, "Started container main", 0.0, reason="Started", component="kubelet")
    assert w is not None
    assert (w.count, w.name, w.namespace, w.first, w.last) == (1, "p-0.1", "ns", "t0", "t0")
    body = w.body()
    assert body["involvedObject"]["name"] == "p-0"
    assert body["source"] == {"component": "kubelet"}
    assert body["reportingComponent"] == "kubelet"
    assert (body["count"], body["firstTimestamp"], body["lastTimestamp"]) == (1, "t0", "t0")


def test_identical_events_increment_count_on_the_same_object() -> None:
    c = _correlator()
    first = _send(c, POD, "Back-off", 0.0, reason="BackOff")
    again = _send(c, POD, "Back-off", 30.0, reason="BackOff")
    third = _send(c, POD, "Back-off", 60.0, reason="BackOff")
    assert first is not None and again is not None and third is not None
    assert again.name == third.name == first.name
    assert (again.count, third.count) == (2, 3)
    assert (third.first, third.last) == ("t0", "t60")


def test_a_different_field_path_or_message_is_a_different_event() -> None:
    c = _correlator()
    a = _send(c, POD, "Created container: a", 0.0, field_path="spec.containers{a}")
    b = _send(c, POD, "Created container: b", 0.0, field_path="spec.containers{b}")
    a2 = _send(c, POD, "Created container: a", 1.0, field_path="spec.containers{a}")
    assert a is not None and b is not None and a2 is not None
    assert a.name != b.name
    assert (a2.name, a2.count) == (a.name, 2)


def test_similar_events_beyond_ten_are_combined_into_one_object() -> None:
    c = _correlator()
    writes = [_send(c, JOB, f"Created pod: j-{i}", float(i)) for i in range(14)]
    assert all(w is not None for w in writes)
    singles = [w for w in writes[:9] if w is not None]
    assert [w.message for w in singles] == [f"Created pod: j-{i}" for i in range(9)]
    assert len({w.name for w in singles}) == 9 and all(w.count == 1 for w in singles)
    combined = [w for w in writes[9:] if w is not None]
    assert [w.message for w in combined] == [
        f"{COMBINED_PREFIX}Created pod: j-{i}" for i in range(9, 14)
    ]
    assert len({w.name for w in combined}) == 1  # one Event, patched
    assert [w.count for w in combined] == [1, 2, 3, 4, 5]
    assert c.stats.combined == 5


def test_similar_events_are_combined_only_within_ten_minutes() -> None:
    c = _correlator()
    for i in range(9):
        _send(c, JOB, f"Created pod: j-{i}", float(i))
    late = _send(c, JOB, "Created pod: j-late", 9 + 601.0)
    assert late is not None and late.message == "Created pod: j-late"


def test_other_objects_and_reasons_are_not_combined() -> None:
    c = _correlator()
    for i in range(9):
        _send(c, JOB, f"Created pod: j-{i}", float(i))
    other_reason = _send(c, JOB, "Deleted pod: j-0", 10.0, reason="SuccessfulDelete")
    other_job = {**JOB, "metadata": {**JOB["metadata"], "name": "k", "uid": "u3"}}
    other_object = _send(c, other_job, "Created pod: k-0", 10.0)
    assert other_reason is not None and not other_reason.message.startswith(COMBINED_PREFIX)
    assert other_object is not None and not other_object.message.startswith(COMBINED_PREFIX)


def test_spam_filter_allows_a_burst_of_25_per_object_then_one_per_five_minutes() -> None:
    c = _correlator()
    sent = [_send(c, POD, f"m{i % 3}", 0.0) for i in range(40)]
    assert sum(w is not None for w in sent) == 25
    assert c.stats.filtered == 15
    assert _send(c, POD, "m0", 299.0) is None
    refilled = _send(c, POD, "m0", 301.0)
    assert refilled is not None
    # what was filtered still counted: the patch carries every occurrence so far
    assert refilled.count == sum(1 for i in range(40) if i % 3 == 0) + 2
    # another object (or another source) has its own bucket
    assert _send(c, JOB, "x", 1.0) is not None
    assert _send(c, POD, "m0", 1.0, component="kubelet") is not None


def test_caches_are_bounded() -> None:
    c = _correlator(size=8)
    for i in range(100):
        obj = {**POD, "metadata": {**POD["metadata"], "name": f"p-{i}", "uid": f"u{i}"}}
        _send(c, obj, "Started", float(i))
    assert len(c._observed) <= 8 and len(c._similar) <= 8


def test_recreated_event_counts_from_one_again() -> None:
    c = _correlator()
    first = _send(c, POD, "x", 0.0)
    assert first is not None
    c.recreated(first)
    again = _send(c, POD, "x", 1.0)
    assert again is not None and (again.name, again.count) == (first.name, 2)


def _status(*conds: tuple[str, str, str]) -> dict[str, Any]:
    return {
        "conditions": [
            {"type": t, "status": s, "reason": r, "message": f"{r} message"} for t, s, r in conds
        ]
    }


def test_job_condition_events() -> None:
    running: dict[str, Any] = {}
    done = _status(("SuccessCriteriaMet", "True", "CompletionsReached"), ("Complete", "True", ""))
    assert condition_events(running, done) == [("Normal", "Completed", "Job completed")]
    assert condition_events(done, done) == []
    failed = _status(("Failed", "True", "BackoffLimitExceeded"))
    assert condition_events(running, failed) == [
        ("Warning", "BackoffLimitExceeded", "BackoffLimitExceeded message")
    ]
    suspended = _status(("Suspended", "True", "JobSuspended"))
    assert condition_events(running, suspended) == [("Normal", "Suspended", "Job suspended")]
    resumed = _status(("Suspended", "False", "JobResumed"))
    assert condition_events(suspended, resumed) == [("Normal", "Resumed", "Job resumed")]
    assert condition_events(None, running) == []


async def test_sink_writes_counts_and_expires_events_in_the_store() -> None:
    # The sink against the in-memory API core and store (no HTTP server is needed to check
    # what lands in the store).
    core = ApiCore(Registry(served_types()), Store())
    ns_rt = core.registry.get("", "v1", "namespaces")
    assert ns_rt is not None
    await core.create(ns_rt, "", {"metadata": {"name": "ns"}})
    sink = EventSink(core, sweep_every=3600)
    sink.start()
    try:
        rec = sink.recorder("kubelet")
        for _ in range(3):
            rec.event(POD, "Warning", "BackOff", "Back-off", field_path="spec.containers{m}")
        rec.event({**POD, "metadata": {**POD["metadata"], "namespace": "gone"}}, "Normal", "X", "y")
        await sink.flush()
        events = list(core.store.resource(("", "events")).objects.values())
        assert len(events) == 1  # the one in a namespace that does not exist failed
        ev = events[0]
        assert (ev["reason"], ev["count"], ev["involvedObject"]["fieldPath"]) == (
            "BackOff",
            3,
            "spec.containers{m}",
        )
        assert ev["metadata"]["uid"] and ev["metadata"]["creationTimestamp"]
        assert (sink.stats.written, sink.stats.failed) == (3, 1)
        assert sink.sweep(time.time()) == 0
        assert sink.sweep(time.time() + 3601) == 1
        assert not core.store.resource(("", "events")).objects
    finally:
        await sink.stop()


def test_a_repeated_event_stays_the_most_recent_of_the_caches() -> None:
    # client-go's LRU: a lookup makes a record the most recent, so the record evicted when
    # the cache is full is the one least recently seen, not the one first created.
    c = _correlator(size=2)
    first = _send(c, POD, "a", 0.0)
    _send(c, POD, "b", 1.0)
    again = _send(c, POD, "a", 2.0)  # "a" is now more recent than "b"
    _send(c, POD, "c", 3.0)  # evicts "b"
    assert first is not None and again is not None
    kept = _send(c, POD, "a", 4.0)
    assert kept is not None and (kept.name, kept.count) == (first.name, 3)
    gone = _send(c, POD, "b", 5.0)
    assert gone is not None and gone.count == 1
