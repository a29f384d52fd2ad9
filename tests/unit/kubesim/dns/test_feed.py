"""`ClusterRecords` follows the store: each write changes the records of that object, and a
Service's change reaches the records of its EndpointSlices."""

from __future__ import annotations

from typing import Any

from kubesim.apiserver.core.store import Store
from kubesim.dns.feed import PODS, SERVICES, SLICES, ClusterRecords
from kubesim.dns.records import A
from kubesim.dns.table import Outcome

SVC = "web.ns.svc.cluster.local."


def _service(publish: bool) -> dict[str, Any]:
    spec = {"clusterIP": "None", "type": "ClusterIP", "publishNotReadyAddresses": publish}
    return {"metadata": {"name": "web", "namespace": "ns"}, "spec": spec}


def _slice(ready: bool) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "web-1",
            "namespace": "ns",
            "labels": {"kubernetes.io/service-name": "web"},
        },
        "endpoints": [
            {"addresses": ["10.244.0.5"], "hostname": "w-0", "conditions": {"ready": ready}}
        ],
    }


def _addresses(records: ClusterRecords, name: str) -> list[str]:
    return [rdata for _, rdata in records.table.lookup(name, A).records]


def test_records_follow_writes_in_any_order() -> None:
    store = Store()
    records = ClusterRecords(store, "cluster.local", "10.244.40.1")
    store.put(SLICES, _slice(ready=False), 2)  # before its Service: kept, records later
    records.attach()
    assert records.table.lookup(SVC, A).outcome is Outcome.NXDOMAIN
    store.put(SERVICES, _service(publish=False), 3)
    assert records.table.lookup(SVC, A).outcome is Outcome.NODATA  # no ready endpoint
    store.put(SLICES, _slice(ready=True), 4)
    assert _addresses(records, "w-0." + SVC) == ["10.244.0.5"]
    store.put(SLICES, _slice(ready=False), 5)
    assert _addresses(records, SVC) == []
    store.put(SERVICES, _service(publish=True), 6)  # the Service alone changes
    assert _addresses(records, SVC) == ["10.244.0.5"]
    store.remove(SLICES, _slice(ready=False), 7)
    assert records.table.lookup("w-0." + SVC, A).outcome is Outcome.NXDOMAIN
    store.remove(SERVICES, _service(publish=True), 8)
    assert records.table.lookup(SVC, A).outcome is Outcome.NXDOMAIN
    records.detach()


def test_pod_records_come_and_go() -> None:
    store = Store()
    records = ClusterRecords(store, "cluster.local", "10.244.40.1")
    records.attach()
    pod = {"metadata": {"name": "p", "namespace": "ns"}, "status": {"podIP": "10.244.0.9"}}
    store.put(PODS, pod, 2)
    assert _addresses(records, "10-244-0-9.ns.pod.cluster.local.") == ["10.244.0.9"]
    store.remove(PODS, pod, 3)
    assert _addresses(records, "10-244-0-9.ns.pod.cluster.local.") == []
    assert records.table.lookup("ns.dns.cluster.local.", A).records == ((A, "10.244.40.1"),)
