"""events.k8s.io/v1 Events as a view of core/v1 Events (kubesim.apiserver.registry.events.event): the
field mapping kube-apiserver's conversion uses, both ways."""

from __future__ import annotations

from kubesim.apiserver.registry.events.event import to_core, to_events_v1

CORE = {
    "apiVersion": "v1",
    "kind": "Event",
    "metadata": {"name": "p.1", "namespace": "ns", "resourceVersion": "5"},
    "involvedObject": {
        "kind": "Pod",
        "name": "p",
        "namespace": "ns",
        "fieldPath": "spec.containers{m}",
    },
    "reason": "BackOff",
    "message": "Back-off restarting failed container m",
    "source": {"component": "kubelet", "host": "node-1"},
    "firstTimestamp": "2026-01-01T00:00:00Z",
    "lastTimestamp": "2026-01-01T00:01:00Z",
    "count": 3,
    "type": "Warning",
    "eventTime": None,
    "reportingComponent": "kubelet",
    "reportingInstance": "node-1",
}


def test_core_event_as_events_v1() -> None:
    ev = to_events_v1(CORE)
    assert ev == {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": CORE["metadata"],
        "regarding": CORE["involvedObject"],
        "reason": "BackOff",
        "note": "Back-off restarting failed container m",
        "deprecatedSource": {"component": "kubelet", "host": "node-1"},
        "deprecatedFirstTimestamp": "2026-01-01T00:00:00Z",
        "deprecatedLastTimestamp": "2026-01-01T00:01:00Z",
        "deprecatedCount": 3,
        "type": "Warning",
        "reportingController": "kubelet",
        "reportingInstance": "node-1",
    }


def test_events_v1_body_as_core_and_back() -> None:
    body = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "js.1"},
        "regarding": {"kind": "JobSet", "name": "js"},
        "note": "Reconciling",
        "reason": "FailedCreate",
        "action": "Reconciling",
        "type": "Warning",
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "jobset",
        "reportingInstance": "jobset-0",
        "series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:05.000000Z"},
        "unknownField": 1,
    }
    core = to_core(body)
    assert core["apiVersion"] == "v1"
    assert core["involvedObject"] == {"kind": "JobSet", "name": "js"}
    assert (core["message"], core["reportingComponent"], core["action"]) == (
        "Reconciling",
        "jobset",
        "Reconciling",
    )
    assert core["series"]["count"] == 2 and "unknownField" not in core
    assert to_events_v1(core) == {k: v for k, v in body.items() if k != "unknownField"}
    assert to_core("not an object") == "not an object"
