"""Keeps a `RecordTable` in step with the simulator's Services, EndpointSlices and Pods.

Fed from the store's listeners (synchronous, in the writing task, as the endpoints
controller observes objects): each event recomputes the records of that one object, under
`lock`, which the DNS server's thread also takes to read the table. A Service's change also
recomputes its own slices, found through an index of slices by Service (the
`kubernetes.io/service-name` label), since a slice's records depend on whether its Service
is headless and publishes not-ready addresses.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Mapping
from typing import Any, Final

from kubesim.apiserver.core.store import DELETED, ObjectKey, ResourceKey, Store, WatchEvent
from kubesim.dns import records
from kubesim.dns.records import NS, A, ApiEndpoint, fqdn
from kubesim.dns.table import RecordTable

__all__ = ["REVERSE_ZONES", "ClusterRecords"]

SERVICES: Final[ResourceKey] = ("", "services")
SLICES: Final[ResourceKey] = ("discovery.k8s.io", "endpointslices")
PODS: Final[ResourceKey] = ("", "pods")
SERVICE_NAME_LABEL: Final = "kubernetes.io/service-name"
# The reverse zones served beside the cluster domain (CoreDNS's default Corefile has the
# kubernetes plugin answer them too).
REVERSE_ZONES: Final = ("in-addr.arpa.", "ip6.arpa.")


def _key(obj: Mapping[str, Any]) -> ObjectKey:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


class ClusterRecords:
    """The cluster domain's records, following the store once `attach`ed."""

    def __init__(
        self,
        store: Store,
        cluster_domain: str,
        nameserver_ip: str,
        api: ApiEndpoint | None = None,
    ) -> None:
        self.store = store
        self.zone = fqdn(cluster_domain)
        self.nameserver = fqdn("ns.dns", self.zone)
        self.api = api
        self.table = RecordTable((self.zone, *REVERSE_ZONES))
        # held while the table changes or is read: the servers answer from another thread
        self.lock = threading.Lock()
        # slices of each Service: (namespace, service name) -> slice keys
        self._slices: dict[ObjectKey, set[ObjectKey]] = {}
        self._slice_service: dict[ObjectKey, ObjectKey] = {}
        apex = [(zone, NS, self.nameserver) for zone in self.table.zones]
        self.table.replace(("zone",), [*apex, (self.nameserver, A, nameserver_ip)])
        self.table.replace(("version",), records.zone_records(self.zone))

    def attach(self) -> None:
        """Load what the store holds and follow its changes."""
        for rkey in (SERVICES, SLICES, PODS):
            rs = self.store.resources.get(rkey)
            for obj in list(rs.objects.values()) if rs is not None else ():
                self.on_event(rkey, WatchEvent("ADDED", obj, 0))
        self.store.listeners.append(self.on_event)

    def detach(self) -> None:
        if self.on_event in self.store.listeners:
            self.store.listeners.remove(self.on_event)

    def set_api(self, api: ApiEndpoint | None) -> None:
        """Where `kubernetes.default.svc` points (known once the API server listens)."""
        self.api = api
        svc = self.store.get(SERVICES, records.API_SERVICE)
        if svc is not None:
            with self.lock:
                self._service(svc, deleted=False)

    def on_event(self, rkey: ResourceKey, ev: WatchEvent) -> None:
        with self.lock:
            self._on_event(rkey, ev)

    def _on_event(self, rkey: ResourceKey, ev: WatchEvent) -> None:
        deleted = ev.type == DELETED
        if rkey == PODS:
            source: Hashable = ("pod", _key(ev.obj))
            self.table.replace(source, () if deleted else records.pod_records(ev.obj, self.zone))
        elif rkey == SLICES:
            self._slice(ev.obj, deleted)
        elif rkey == SERVICES:
            self._service(ev.obj, deleted)

    def _service(self, svc: Mapping[str, Any], deleted: bool) -> None:
        key = _key(svc)
        made = () if deleted else records.service_records(svc, self.zone, self.api)
        self.table.replace(("service", key), made)
        for slice_key in self._slices.get(key, ()):
            sl = self.store.get(SLICES, slice_key)
            if sl is not None:
                made = records.slice_records(sl, None if deleted else svc, self.zone)
                self.table.replace(("slice", slice_key), made)

    def _slice(self, sl: Mapping[str, Any], deleted: bool) -> None:
        key = _key(sl)
        labels = (sl.get("metadata") or {}).get("labels") or {}
        owner = (key[0], str(labels.get(SERVICE_NAME_LABEL) or ""))
        previous = self._slice_service.pop(key, None)
        if previous is not None:
            self._slices[previous].discard(key)
            if not self._slices[previous]:
                del self._slices[previous]
        if deleted or not owner[1]:
            self.table.replace(("slice", key), ())
            return
        self._slice_service[key] = owner
        self._slices.setdefault(owner, set()).add(key)
        svc = self.store.get(SERVICES, owner)
        self.table.replace(("slice", key), records.slice_records(sl, svc, self.zone))
