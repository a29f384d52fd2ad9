"""Endpoints and EndpointSlices from the pods behind each Service, and how a Service is reached.

The controllers (kube-controller-manager's endpoints and endpointslice controllers), for every
Service with a selector:

- `core/v1 Endpoints` named after the Service: pods of its namespace matching the selector
  that have a pod IP and can still run (`restartPolicy` decides whether a finished pod
  counts), not being deleted; Ready pods under `addresses`, the others under
  `notReadyAddresses` (all under `addresses` with `publishNotReadyAddresses`). Each Service
  port resolves against the pod: a numeric `targetPort` as is, a named one through the
  container port of that name (a pod without it is left out of that port). Addresses carry
  `nodeName`, `targetRef` and, for a pod whose `subdomain` is the Service, `hostname`;
  subsets are packed as upstream's RepackSubsets packs them. Labels: the Service's, plus
  `endpointslice.kubernetes.io/skip-mirror`. At most `MAX_CAPACITY` (1,000) addresses, as
  upstream: above that `truncate_subsets` cuts them (ready ones kept first) and the object
  is annotated `endpoints.kubernetes.io/over-capacity: truncated`, the annotation removed
  once back within capacity (`endpoints_object`).
- `discovery.k8s.io/v1 EndpointSlices` (generateName `<service>-`, labels
  `kubernetes.io/service-name` and `endpointslice.kubernetes.io/managed-by`, owned by the
  Service): the endpoints of each distinct set of resolved ports, over as many slices of at
  most 100 endpoints (`--max-endpoints-per-slice`'s default) as it takes; endpoints with
  `conditions.ready/serving/terminating` (terminating pods stay listed, not ready), nodeName,
  zone (the node's `topology.kubernetes.io/zone`) and targetRef; a placeholder slice without
  endpoints when nothing matches. A sync writes only the slices whose endpoints change
  (the reconciler's plan, `endpointslices.plan_slices`), so a pod change costs the writes
  of one slice, not of every pod; working out the desired endpoints still reads every pod
  of the namespace (in memory).

Services without a selector are left alone: their Endpoints are whoever writes them (the
EndpointSlice mirroring controller is not modelled).

`resolve_service` is how the API server reaches a Service (admission webhooks): see there.
"""

from __future__ import annotations

import functools
import math
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Final

from kubesim.apiserver.core.apicore import ApiCore
from kubesim.apiserver.core.store import DELETED, ObjectKey, ResourceKey, Store, WatchEvent
from kubesim.apiserver.core.webhookclient import PodHost, ServiceUnavailable
from kubesim.base.controller import PODS, Controller, meta_key
from kubesim.base.podhost import SIMULATED_POD_HOST, simulated_pod_host
from kubesim.controllers.endpointslices import MAX_ENDPOINTS_PER_SLICE, ip_sort_key, plan_slices
from kubesim.controllers.rollout import pod_ready
from kubesim.machinery.errors import ApiError

SERVICES: Final[ResourceKey] = ("", "services")
ENDPOINTS: Final[ResourceKey] = ("", "endpoints")
SLICES: Final[ResourceKey] = ("discovery.k8s.io", "endpointslices")
NODES: Final[ResourceKey] = ("", "nodes")

SERVICE_NAME_LABEL: Final = "kubernetes.io/service-name"
MANAGED_BY_LABEL: Final = "endpointslice.kubernetes.io/managed-by"
MANAGED_BY: Final = "endpointslice-controller.k8s.io"
SKIP_MIRROR_LABEL: Final = "endpointslice.kubernetes.io/skip-mirror"
ZONE_LABEL: Final = "topology.kubernetes.io/zone"
# The endpoints controller's cap on the addresses of one Endpoints (upstream's maxCapacity),
# and the annotation saying it was applied.
MAX_CAPACITY: Final = 1000
OVER_CAPACITY_ANNOTATION: Final = "endpoints.kubernetes.io/over-capacity"
TRUNCATED: Final = "truncated"
# Set while this controller's own sync writes: the watch events of those writes are not
# someone else changing its objects (upstream's endpointSliceTracker tells them apart by
# generation). The store notifies listeners synchronously, inside the writing task.
_OWN_WRITE: ContextVar[bool] = ContextVar("endpoints_own_write", default=False)
# After a Service's sync, its next pod-driven sync waits this many times as long as the sync
# took, so pod changes meanwhile are batched into one: a sync reads every pod of the Service
# (as upstream's does), which in Python is ~100x Go's cost, and syncing on every change of
# a 4,000-pod Service took all of the simulator's CPU. While pods keep changing, a large
# Service's syncs take 1 / (1 + BATCH_FACTOR) of the wall time, whatever one sync costs:
# this factor, not the sync's speed, sets the controller's share of the simulator's CPU.
# Small Services sync in milliseconds, so their Endpoints follow pods as promptly as before
# (upstream's --endpointslice-updates-batch-period is a fixed delay, default 0).
BATCH_FACTOR: Final = 8.0
# The simulated cluster's dial hint on a Service (host:port), used by `jobset dev`.
ADDRESS_ANNOTATION: Final = "sim.jobset.x-k8s.io/address"

# ---------------------------------------------------------------------------------------------
# Pure computation


def find_port(pod: Mapping[str, Any], service_port: Mapping[str, Any]) -> int | None:
    """The pod's port for a Service port (upstream's podutil.FindPort); None if it has none."""
    target = service_port.get("targetPort")
    if target is None or target == "":
        target = service_port.get("port")
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    protocol = service_port.get("protocol") or "TCP"
    for c in (pod.get("spec") or {}).get("containers") or ():
        for p in c.get("ports") or ():
            if p.get("name") == target and (p.get("protocol") or "TCP") == protocol:
                return int(p.get("containerPort") or 0) or None
    return None


def pod_ip(pod: Mapping[str, Any]) -> str:
    status = pod.get("status") or {}
    if status.get("podIP"):
        return str(status["podIP"])
    ips: list[dict[str, Any]] = status.get("podIPs") or []
    return str(ips[0].get("ip") or "") if ips else ""


def should_be_in_endpoints(pod: Mapping[str, Any], include_terminating: bool) -> bool:
    """upstream's ShouldPodBeInEndpoints."""
    if not pod_ip(pod):
        return False
    if not include_terminating and (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    phase = (pod.get("status") or {}).get("phase")
    policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
    if policy == "Never":
        return phase not in ("Failed", "Succeeded")
    if policy == "OnFailure":
        return phase != "Succeeded"
    return True


def _target_ref(pod: Mapping[str, Any]) -> dict[str, Any]:
    meta = pod.get("metadata") or {}
    return {
        "kind": "Pod",
        "namespace": meta.get("namespace", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
    }


def _port_entry(service_port: Mapping[str, Any], number: int) -> dict[str, Any]:
    entry: dict[str, Any] = {"port": number, "protocol": service_port.get("protocol") or "TCP"}
    if service_port.get("name"):
        entry["name"] = service_port["name"]
    if service_port.get("appProtocol"):
        entry["appProtocol"] = service_port["appProtocol"]
    return entry


def _resolved_ports(
    service: Mapping[str, Any], pod: Mapping[str, Any]
) -> list[dict[str, Any]] | None:
    """The pod's endpoint ports for the Service; None when no port resolves (and the Service
    has ports), [] for a headless Service without ports."""
    ports = (service.get("spec") or {}).get("ports") or []
    if not ports:
        return []
    out = []
    for sp in ports:
        number = find_port(pod, sp)
        if number is not None:
            out.append(_port_entry(sp, number))
    return out or None


class PodMemo:
    """What the last sync of one Service derived from each of its pods, reused while the pod
    and the Service are the very objects they were then and `extra` (the node's zone) is
    equal: stored objects are replaced, never edited, and a sync of a large Service reads
    every pod although few changed since the last one. Holds only the pods of the last sync."""

    def __init__(self) -> None:
        self._last: dict[str, tuple[Mapping[str, Any], Mapping[str, Any], str, Any]] = {}
        self._now: dict[str, tuple[Mapping[str, Any], Mapping[str, Any], str, Any]] = {}

    def start(self) -> None:
        """A new sync: what the previous one derived is what this one may reuse."""
        self._last, self._now = self._now, {}

    def get(
        self,
        pod: Mapping[str, Any],
        service: Mapping[str, Any],
        extra: str,
        derive: Callable[[], Any],
    ) -> Any:
        name = str((pod.get("metadata") or {}).get("name") or "")
        hit = self._last.get(name)
        if hit is not None and hit[0] is pod and hit[1] is service and hit[2] == extra:
            result = hit[3]
        else:
            result = derive()
        self._now[name] = (pod, service, extra, result)
        return result


_SubsetEntry = tuple[str, list[dict[str, Any]], dict[str, Any], bool]


def _subset_entry(
    service: Mapping[str, Any], pod: Mapping[str, Any], publish: bool, svc_name: Any
) -> _SubsetEntry | None:
    """The pod's address in the Service's Endpoints: (port-set key, ports, address, ready),
    or None when the pod has no place there."""
    if not should_be_in_endpoints(pod, publish):
        return None
    ports = _resolved_ports(service, pod)
    if ports is None:
        return None
    pspec = pod.get("spec") or {}
    address: dict[str, Any] = {"ip": pod_ip(pod), "targetRef": _target_ref(pod)}
    if pspec.get("nodeName"):
        address["nodeName"] = pspec["nodeName"]
    if pspec.get("hostname") and pspec.get("subdomain") == svc_name:
        address["hostname"] = pspec["hostname"]
    key = repr(sorted((p.get("name", ""), p["port"], p["protocol"]) for p in ports))
    return key, ports, address, publish or pod_ready(pod)


def endpoint_subsets(
    service: Mapping[str, Any], pods: Iterable[Mapping[str, Any]], memo: PodMemo | None = None
) -> list[dict[str, Any]]:
    """The `subsets` of the Service's Endpoints, packed by port set (RepackSubsets)."""
    spec = service.get("spec") or {}
    publish = bool(spec.get("publishNotReadyAddresses"))
    svc_name = (service.get("metadata") or {}).get("name")
    groups: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]] = {}
    for pod in pods:
        if memo is None:
            entry = _subset_entry(service, pod, publish, svc_name)
        else:
            entry = memo.get(
                pod, service, "", functools.partial(_subset_entry, service, pod, publish, svc_name)
            )
        if entry is None:
            continue
        key, ports, address, is_ready = entry
        ready, not_ready, _ = groups.setdefault(key, ([], [], ports))
        (ready if is_ready else not_ready).append(address)
    subsets = []
    for _key, (ready, not_ready, ports) in sorted(groups.items()):
        subset: dict[str, Any] = {}
        if ready:
            subset["addresses"] = sorted(
                ready, key=lambda a: (ip_sort_key(a["ip"]), a["targetRef"]["name"])
            )
        if not_ready:
            subset["notReadyAddresses"] = sorted(
                not_ready, key=lambda a: (ip_sort_key(a["ip"]), a["targetRef"]["name"])
            )
        if ports:
            subset["ports"] = sorted(ports, key=lambda p: (p.get("name", ""), p["port"]))
        subsets.append(subset)
    return subsets


def truncate_subsets(
    subsets: Sequence[Mapping[str, Any]], max_capacity: int = MAX_CAPACITY
) -> tuple[list[dict[str, Any]], bool]:
    """The subsets cut down to `max_capacity` addresses, and whether anything was cut
    (upstream's truncateEndpoints).

    Ready addresses go first: while they fit, only not-ready ones are cut; when the ready
    ones alone are too many, every not-ready address goes and the ready ones are cut. The
    room is shared between subsets in proportion to what each holds (rounded up, so the
    last subsets may get less), and each subset keeps its first addresses.
    """
    out = [dict(s) for s in subsets]
    total_ready = sum(len(s.get("addresses") or ()) for s in out)
    total_not_ready = sum(len(s.get("notReadyAddresses") or ()) for s in out)
    if total_ready + total_not_ready <= max_capacity:
        return out, False
    cut_ready = total_ready > max_capacity
    room, total = (
        (max_capacity, total_ready) if cut_ready else (max_capacity - total_ready, total_not_ready)
    )
    can_add = room
    field_name = "addresses" if cut_ready else "notReadyAddresses"
    for subset in out:
        held = list(subset.get(field_name) or ())
        # float arithmetic as upstream's math.Ceil((n / total) * room), so the shares agree
        share = min(math.ceil((len(held) / total) * room), can_add) if total else 0
        kept = held[:share]
        can_add -= len(kept)
        if kept:
            subset[field_name] = kept
        else:
            subset.pop(field_name, None)
        if cut_ready:
            subset.pop("notReadyAddresses", None)
    return out, True


def endpoints_object(
    service: Mapping[str, Any],
    pods: Iterable[Mapping[str, Any]],
    current: Mapping[str, Any] | None,
    max_capacity: int = MAX_CAPACITY,
    memo: PodMemo | None = None,
) -> dict[str, Any] | None:
    """The Service's Endpoints to write over `current` (None: there is none yet), or None
    when `current` is already what it should be.

    Over `max_capacity` addresses the subsets are truncated (`truncate_subsets`) and the
    object carries `endpoints.kubernetes.io/over-capacity: truncated`; back within it, the
    annotation goes. Upstream writes an over-capacity Endpoints again on every sync, which
    the API server turns into a no-op when nothing changed: None here is the same to clients.
    """
    meta = service.get("metadata") or {}
    ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    labels = {**(meta.get("labels") or {}), SKIP_MIRROR_LABEL: "true"}
    subsets, truncated = truncate_subsets(endpoint_subsets(service, pods, memo), max_capacity)
    if current is None:
        new_meta: dict[str, Any] = {"name": name, "namespace": ns, "labels": labels}
        if truncated:
            new_meta["annotations"] = {OVER_CAPACITY_ANNOTATION: TRUNCATED}
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "Endpoints", "metadata": new_meta}
        if subsets:
            body["subsets"] = subsets
        return body
    current_meta = current.get("metadata") or {}
    annotations = dict(current_meta.get("annotations") or {})
    if (
        (current.get("subsets") or []) == subsets
        and current_meta.get("labels") == labels
        and (annotations.get(OVER_CAPACITY_ANNOTATION) == TRUNCATED) == truncated
    ):
        return None
    if truncated:
        annotations[OVER_CAPACITY_ANNOTATION] = TRUNCATED
    else:
        annotations.pop(OVER_CAPACITY_ANNOTATION, None)
    new = {k: v for k, v in current.items() if k != "subsets"}
    new["metadata"] = {**current_meta, "labels": labels}
    if annotations:
        new["metadata"]["annotations"] = annotations
    else:
        new["metadata"].pop("annotations", None)
    if subsets:
        new["subsets"] = subsets
    return new


_SliceEntry = tuple[str, list[dict[str, Any]], dict[str, Any]]


def _slice_entry(
    service: Mapping[str, Any], pod: Mapping[str, Any], zone: str, publish: bool, svc_name: Any
) -> _SliceEntry | None:
    """The pod's endpoint in the Service's EndpointSlices: (port-set key, ports, endpoint),
    or None when the pod has no place there; `zone` is its node's."""
    if not should_be_in_endpoints(pod, True):
        return None
    ports = _resolved_ports(service, pod)
    if ports is None:
        return None
    pspec = pod.get("spec") or {}
    terminating = bool((pod.get("metadata") or {}).get("deletionTimestamp"))
    serving = publish or pod_ready(pod)
    endpoint: dict[str, Any] = {
        "addresses": [pod_ip(pod)],
        "conditions": {
            "ready": serving and (publish or not terminating),
            "serving": serving,
            "terminating": terminating,
        },
        "targetRef": _target_ref(pod),
    }
    node = pspec.get("nodeName")
    if node:
        endpoint["nodeName"] = node
        if zone:
            endpoint["zone"] = zone
    if pspec.get("hostname") and pspec.get("subdomain") == svc_name:
        endpoint["hostname"] = pspec["hostname"]
    ports = sorted(ports, key=lambda p: (p.get("name", ""), p["port"]))
    key = repr([(p.get("name", ""), p["port"], p["protocol"]) for p in ports])
    return key, ports, endpoint


def slice_groups(
    service: Mapping[str, Any],
    pods: Iterable[Mapping[str, Any]],
    zones: Mapping[str, str] | None = None,
    memo: PodMemo | None = None,
) -> list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """(ports, endpoints) for each EndpointSlice the Service should have; one group with no
    endpoints (the placeholder slice) when no pod qualifies."""
    spec = service.get("spec") or {}
    publish = bool(spec.get("publishNotReadyAddresses"))
    svc_name = (service.get("metadata") or {}).get("name")
    zones = zones or {}
    groups: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    for pod in pods:
        zone = zones.get(str((pod.get("spec") or {}).get("nodeName") or ""), "")
        if memo is None:
            entry = _slice_entry(service, pod, zone, publish, svc_name)
        else:
            entry = memo.get(
                pod,
                service,
                zone,
                functools.partial(_slice_entry, service, pod, zone, publish, svc_name),
            )
        if entry is None:
            continue
        key, ports, endpoint = entry
        groups.setdefault(key, (ports, []))[1].append(endpoint)
    if not groups:
        return [([], [])]
    out = []
    for _key, (ports, endpoints) in sorted(groups.items()):
        endpoints.sort(key=lambda e: (ip_sort_key(e["addresses"][0]), e["targetRef"]["name"]))
        out.append((ports, endpoints))
    return out


def selects(service: Mapping[str, Any], labels: Mapping[str, str] | None) -> bool:
    selector = (service.get("spec") or {}).get("selector") or {}
    if not selector:
        return False
    labels = labels or {}
    return all(labels.get(k) == v for k, v in selector.items())


# ---------------------------------------------------------------------------------------------
# Resolution


@dataclass(frozen=True)
class ServiceEndpoint:
    """Where a call to a Service goes: `host:port`, and the pod behind it if any."""

    host: str
    port: int
    pod: tuple[str, str] | None = None  # (namespace, name)


def resolve_service(
    store: Store,
    namespace: str,
    name: str,
    port: int,
    *,
    pod_host: PodHost = simulated_pod_host,
    choose: Callable[[Sequence[ServiceEndpoint]], ServiceEndpoint] = random.choice,
) -> ServiceEndpoint:
    """Resolve `service <namespace>/<name>` port `port` to one endpoint to dial.

    In order:
    1. the `sim.jobset.x-k8s.io/address: host:port` annotation on the Service (a dial hint
       for a controller running on the host, as `jobset dev` installs it);
    2. `spec.externalName`, with `port`;
    3. the Service's Endpoints: a ready address of the subset whose port has the name of the
       Service port numbered `port`, at that endpoint port; a pod address is dialled at
       `pod_host(pod, ip)` (the pod IP for pods with a real network, 127.0.0.1 for
       simulated ones). No ready address: `no endpoints available for service "<name>"`;
    4. no Endpoints object at all (a selector-less Service nobody wrote Endpoints for): the
       host stands in, 127.0.0.1 at the Service port's numeric targetPort (else the port).

    Raises ServiceUnavailable with kube-apiserver's wording when the Service, the port or a
    ready endpoint is missing.
    """
    service = store.get(SERVICES, (namespace, name))
    if service is None:
        raise ServiceUnavailable(f'service "{name}" not found')
    annotations = (service.get("metadata") or {}).get("annotations") or {}
    spec = service.get("spec") or {}
    address = annotations.get(ADDRESS_ANNOTATION)
    if address:
        host, _, dial_port = str(address).rpartition(":")
        if not host or not dial_port.isdigit():
            raise ServiceUnavailable(
                f'annotation {ADDRESS_ANNOTATION} of service "{name}" is not host:port: {address!r}'
            )
        return ServiceEndpoint(host.strip("[]"), int(dial_port))
    if spec.get("externalName"):
        return ServiceEndpoint(str(spec["externalName"]), port)
    entry = next((p for p in spec.get("ports") or () if p.get("port") == port), None)
    if entry is None:
        raise ServiceUnavailable(f'no service port {port} found for service "{name}"')
    endpoints = store.get(ENDPOINTS, (namespace, name))
    if endpoints is None:
        target = entry.get("targetPort")
        return ServiceEndpoint(SIMULATED_POD_HOST, target if isinstance(target, int) else port)
    port_name = entry.get("name") or ""
    candidates: list[ServiceEndpoint] = []
    for subset in endpoints.get("subsets") or ():
        for ep_port in subset.get("ports") or ():
            if (ep_port.get("name") or "") != port_name:
                continue
            for addr in subset.get("addresses") or ():
                ip = str(addr.get("ip") or "")
                ref = addr.get("targetRef") or {}
                pod = None
                if ref.get("kind") == "Pod":
                    pod = store.get(
                        PODS, (str(ref.get("namespace") or namespace), str(ref.get("name")))
                    )
                if pod is not None:
                    pod_ns, pod_name = meta_key(pod)
                    candidates.append(
                        ServiceEndpoint(pod_host(pod, ip), int(ep_port["port"]), (pod_ns, pod_name))
                    )
                elif ip:
                    candidates.append(ServiceEndpoint(ip, int(ep_port["port"])))
    if not candidates:
        raise ServiceUnavailable(f'no endpoints available for service "{name}"')
    return choose(candidates)


# ---------------------------------------------------------------------------------------------
# The controller

Key = tuple[str, str]


class EndpointsController(Controller[Key]):
    """Both the endpoints and the endpointslice controller, keyed by Service."""

    name = "endpoint-controller"
    workers = 2

    def __init__(
        self,
        core: ApiCore,
        *,
        max_per_slice: int = MAX_ENDPOINTS_PER_SLICE,
        max_capacity: int = MAX_CAPACITY,
    ) -> None:
        super().__init__(core)
        self.max_per_slice = max_per_slice
        self.max_capacity = max_capacity
        self._not_before: dict[Key, float] = {}  # per Service: see BATCH_FACTOR
        self.ep_rt = self.rt("", "endpoints")
        self.slice_rt = self.rt("discovery.k8s.io", "endpointslices")
        # (namespace, label key, value) -> Services whose selector requires that label.
        self._index: dict[tuple[str, str, str], set[str]] = {}
        self._indexed: dict[Key, tuple[str, str]] = {}
        # Service -> the slices this controller manages for it. Finding them by scanning the
        # namespace's slices made each sync O(Services in the namespace), and a tenant
        # creating JobSets one after another has one headless Service per JobSet.
        self._slice_index: dict[Key, set[ObjectKey]] = {}
        # Service -> what its last sync derived per pod, for its Endpoints and its slices.
        self._memos: dict[Key, tuple[PodMemo, PodMemo]] = {}

    def _index_service(self, svc: dict[str, Any] | None, key: Key) -> None:
        old = self._indexed.pop(key, None)
        if old is not None:
            members = self._index.get((key[0], *old))
            if members is not None:
                members.discard(key[1])
                if not members:
                    del self._index[(key[0], *old)]
        selector = ((svc or {}).get("spec") or {}).get("selector") or {}
        if selector:
            k, v = min(selector.items())
            self._indexed[key] = (k, str(v))
            self._index.setdefault((key[0], k, str(v)), set()).add(key[1])

    @staticmethod
    def _slice_owner(sl: Mapping[str, Any] | None) -> Key | None:
        """The Service whose managed slice `sl` is (by its labels), or None."""
        meta = (sl or {}).get("metadata") or {}
        labels = meta.get("labels") or {}
        svc = labels.get(SERVICE_NAME_LABEL)
        if not svc or labels.get(MANAGED_BY_LABEL) != MANAGED_BY:
            return None
        return (str(meta.get("namespace") or ""), str(svc))

    def _add_slice(self, sl: dict[str, Any]) -> None:
        owner = self._slice_owner(sl)
        if owner is not None:
            self._slice_index.setdefault(owner, set()).add(meta_key(sl))

    def _index_slice(self, ev: WatchEvent) -> None:
        okey = meta_key(ev.obj)
        for sl in (ev.old, ev.obj):  # wherever it was filed (its labels may have changed)
            owner = self._slice_owner(sl)
            if owner is None or owner not in self._slice_index:
                continue
            members = self._slice_index[owner]
            members.discard(okey)
            if not members:
                del self._slice_index[owner]
        if ev.type != DELETED:
            self._add_slice(ev.obj)

    def initial_keys(self) -> Iterable[Key]:
        self._slice_index = {}
        for sl in self.core.store.resource(SLICES).objects.values():
            self._add_slice(sl)
        keys = []
        for svc in self.core.store.resource(SERVICES).objects.values():
            key = meta_key(svc)
            self._index_service(svc, key)
            keys.append(key)
        return keys

    def keys_for(self, rkey: ResourceKey, ev: WatchEvent) -> Iterable[Key]:
        if rkey == SERVICES:
            key = meta_key(ev.obj)
            self._index_service(None if ev.type == DELETED else ev.obj, key)
            return [key]
        if rkey == SLICES:
            self._index_slice(ev)
        if rkey == ENDPOINTS or rkey == SLICES:
            if _OWN_WRITE.get():
                return []  # its own write: syncing again would only find it done
            # Someone else changed what this controller owns: put it back.
            if rkey == SLICES:
                svc = ((ev.obj.get("metadata") or {}).get("labels") or {}).get(SERVICE_NAME_LABEL)
                return [(ev.obj["metadata"].get("namespace", ""), str(svc))] if svc else []
            return [meta_key(ev.obj)]
        if rkey != PODS:
            return []
        ns = ev.obj["metadata"].get("namespace", "")
        keys: set[Key] = set()
        for pod in (ev.obj, ev.old):
            if pod is None:
                continue
            for k, v in ((pod.get("metadata") or {}).get("labels") or {}).items():
                for name in self._index.get((ns, k, str(v)), ()):
                    keys.add((ns, name))
        return keys

    def hold(self, key: Key) -> float:
        not_before = self._not_before.get(key)
        return max(0.0, not_before - time.monotonic()) if not_before is not None else 0.0

    async def sync(self, key: Key) -> float | None:
        token = _OWN_WRITE.set(True)
        started = time.monotonic()
        try:
            return await self._sync(key)
        finally:
            _OWN_WRITE.reset(token)
            if self.core.store.get(SERVICES, key) is None:
                self._not_before.pop(key, None)
            else:
                took = time.monotonic() - started
                self._not_before[key] = time.monotonic() + BATCH_FACTOR * took

    async def _sync(self, key: Key) -> float | None:
        ns = key[0]
        store = self.core.store
        service = store.get(SERVICES, key)
        if service is None:
            self._memos.pop(key, None)
            await self._delete_endpoints(key)
            for sl in self._slices(key):
                await self._delete(self.slice_rt, sl)
            return None
        if not (service.get("spec") or {}).get("selector"):
            return None  # selector-less: Endpoints are the user's
        pods = [
            p
            for p in store.resource(PODS).range(ns)
            if selects(service, (p.get("metadata") or {}).get("labels"))
        ]
        memos = self._memos.setdefault(key, (PodMemo(), PodMemo()))
        for memo in memos:
            memo.start()
        await self._sync_endpoints(service, pods, memos[0])
        zones = {}
        for pod in pods:
            node = (pod.get("spec") or {}).get("nodeName")
            if node and node not in zones:
                obj = store.get(NODES, ("", node))
                zones[node] = str(
                    ((obj or {}).get("metadata") or {}).get("labels", {}).get(ZONE_LABEL) or ""
                )
        await self._sync_slices(service, slice_groups(service, pods, zones, memos[1]))
        return None

    async def _sync_endpoints(
        self, service: dict[str, Any], pods: list[dict[str, Any]], memo: PodMemo
    ) -> None:
        ns, name = meta_key(service)
        current = self.core.store.get(ENDPOINTS, (ns, name))
        body = endpoints_object(service, pods, current, self.max_capacity, memo)
        if body is None:
            return
        if current is None:
            try:
                await self.core.create(self.ep_rt, ns, body, self.req())
            except ApiError as err:
                if err.code != 409:
                    raise
            return
        await self.core.update(self.ep_rt, ns, name, body, self.req())

    def _slices(self, key: Key) -> list[dict[str, Any]]:
        """The slices this controller manages for Service `key`, in name order."""
        store = self.core.store
        found = (store.get(SLICES, okey) for okey in sorted(self._slice_index.get(key, ())))
        return [sl for sl in found if sl is not None and self._slice_owner(sl) == key]

    async def _sync_slices(
        self,
        service: dict[str, Any],
        groups: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]],
    ) -> None:
        """Write only the slices the reconciler's plan changes (endpointslices.py)."""
        ns, name = meta_key(service)
        labels = {
            **((service.get("metadata") or {}).get("labels") or {}),
            SERVICE_NAME_LABEL: name,
            MANAGED_BY_LABEL: MANAGED_BY,
        }
        uid = str(service["metadata"]["uid"])
        plan = plan_slices(self._slices((ns, name)), groups, labels, uid, self.max_per_slice)
        owner = {
            "apiVersion": "v1",
            "kind": "Service",
            "name": name,
            "uid": uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }

        def body(ports: list[dict[str, Any]], endpoints: list[dict[str, Any]]) -> dict[str, Any]:
            return {
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "addressType": "IPv4",
                "endpoints": endpoints,
                "ports": ports or None,
            }

        if not service["metadata"].get("deletionTimestamp"):
            # As upstream: no new slices for a Service being deleted (the GC would race).
            for ports, endpoints in plan.create:
                new = body(ports, endpoints)
                new["metadata"] = {
                    "generateName": f"{name}-",
                    "namespace": ns,
                    "labels": labels,
                    "ownerReferences": [owner],
                }
                await self.core.create(self.slice_rt, ns, new, self.req())
        for upd in plan.update:
            new = body(upd.ports, upd.endpoints)
            new["metadata"] = {**upd.current["metadata"], "labels": labels}
            await self.core.update(
                self.slice_rt, ns, upd.current["metadata"]["name"], new, self.req()
            )
        for sl in plan.delete:
            await self._delete(self.slice_rt, sl)

    async def _delete_endpoints(self, key: Key) -> None:
        ep = self.core.store.get(ENDPOINTS, key)
        if ep is not None and (ep["metadata"].get("labels") or {}).get(SKIP_MIRROR_LABEL) == "true":
            await self._delete(self.ep_rt, ep)

    async def _delete(self, rt: Any, obj: Mapping[str, Any]) -> None:
        meta = obj["metadata"]
        try:
            await self.core.delete(rt, meta.get("namespace", ""), meta["name"], {}, self.req())
        except ApiError as err:
            if err.code != 404:
                raise
