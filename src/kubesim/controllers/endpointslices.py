"""Which EndpointSlices to create, update and delete for one Service: the endpointslice
controller's reconciler (k8s.io/endpointslice reconciler.go), as a pure plan.

A Service's endpoints are split by port set, and each port set over as many slices as it
takes to hold at most `MAX_ENDPOINTS_PER_SLICE` endpoints each (kube-controller-manager's
`--max-endpoints-per-slice`, default 100). A sync changes as little as it can, as upstream's
`reconcileByPortMapping` does:

1. each existing slice keeps the endpoints still desired (an endpoint is identified by its
   addresses, hostname and target pod, as upstream's endpoint hash); a slice whose kept
   endpoints differ from what it holds is to be updated, one left with none deleted, one
   whose labels are stale updated, the others are unchanged and not written;
2. endpoints left over first fill the slices already being updated, fullest first;
3. then, when fewer than a slice's worth remain, the unchanged slice they fit best (the one
   left with the least room), else new slices.

Slices of a port set no longer wanted, and slices not owned by the Service, are deleted;
with no endpoints at all the Service keeps one placeholder slice (no ports, no endpoints).
As upstream's `finalize`, a slice to be created takes over the name of one to be deleted
(an update instead of a create and a delete).

Simplified: upstream pops endpoints from a hash set in no particular order; this plan takes
them in the order given (by IP, then pod name) and each written slice lists its endpoints in
that order, so a Service of up to 100 endpoints has the single slice it always had. There is
one address type (IPv4), no topology hints and no trafficDistribution.
"""

from __future__ import annotations

import functools
import ipaddress
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

# kube-controller-manager's `--max-endpoints-per-slice` default.
MAX_ENDPOINTS_PER_SLICE: Final = 100

Endpoint = dict[str, Any]
Ports = list[dict[str, Any]]
PortsKey = tuple[tuple[tuple[str, Any], ...], ...]
EndpointKey = tuple[tuple[str, ...], str, str, str]


def ports_key(ports: Sequence[Mapping[str, Any]] | None) -> PortsKey:
    """A port set, independent of the order of its ports (upstream's NewPortMapKey)."""
    return tuple(sorted(tuple(sorted(p.items())) for p in ports or ()))


def endpoint_key(endpoint: Mapping[str, Any]) -> EndpointKey:
    """What identifies an endpoint across syncs (upstream's hashEndpoint): its addresses,
    hostname and target pod; conditions, node and zone are what may change about it."""
    ref = endpoint.get("targetRef") or {}
    return (
        tuple(str(a) for a in endpoint.get("addresses") or ()),
        str(endpoint.get("hostname") or ""),
        str(ref.get("namespace") or ""),
        str(ref.get("name") or ""),
    )


@functools.lru_cache(maxsize=1 << 18)
def ip_sort_key(ip: str) -> tuple[int, int, int | str]:
    """Addresses in numeric order (10.0.0.2 before 10.0.0.10, IPv4 before IPv6), anything
    unparsable last. Cached, and made of ints so a sort compares them in C: every sync of a
    Service sorts all of its endpoints, and parsing each address again took a tenth of the
    simulator's CPU with a 5,000-pod headless Service."""
    try:
        addr = ipaddress.ip_address(ip)
    except ValueError:
        return (1, 0, ip)
    return (0, addr.version, int(addr))


def _sort_key(endpoint: Mapping[str, Any]) -> tuple[Any, ...]:
    addresses = endpoint.get("addresses") or [""]
    return (ip_sort_key(str(addresses[0])), str((endpoint.get("targetRef") or {}).get("name")))


@dataclass
class SliceUpdate:
    """An existing slice (as stored) to be rewritten with these ports and endpoints."""

    current: Mapping[str, Any]
    ports: Ports
    endpoints: list[Endpoint]


@dataclass
class SlicePlan:
    """The writes of one sync; empty lists when the slices are already as desired."""

    create: list[tuple[Ports, list[Endpoint]]] = field(default_factory=list)
    update: list[SliceUpdate] = field(default_factory=list)
    delete: list[Mapping[str, Any]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.create or self.update or self.delete)


def _name(sl: Mapping[str, Any]) -> str:
    return str((sl.get("metadata") or {}).get("name") or "")


def _labels(sl: Mapping[str, Any]) -> Mapping[str, Any]:
    return (sl.get("metadata") or {}).get("labels") or {}


def owned_by(sl: Mapping[str, Any], service_uid: str) -> bool:
    refs = (sl.get("metadata") or {}).get("ownerReferences") or ()
    return any(r.get("uid") == service_uid for r in refs)


def plan_slices(
    existing: Sequence[Mapping[str, Any]],
    groups: Sequence[tuple[Ports, Sequence[Endpoint]]],
    labels: Mapping[str, str],
    service_uid: str,
    max_per_slice: int = MAX_ENDPOINTS_PER_SLICE,
) -> SlicePlan:
    """The slices to write so that `existing` (the Service's slices, as stored) hold the
    desired `groups` ((ports, endpoints) per port set, endpoints in the order to place
    them; groups without endpoints are ignored) with `labels` on each slice."""
    if max_per_slice < 1:
        raise ValueError(f"max endpoints per slice must be at least 1, not {max_per_slice}")
    plan = SlicePlan()
    by_ports: dict[PortsKey, list[Mapping[str, Any]]] = {}
    for sl in sorted(existing, key=_name):
        if owned_by(sl, service_uid):
            by_ports.setdefault(ports_key(sl.get("ports")), []).append(sl)
        else:
            plan.delete.append(sl)
    desired: dict[PortsKey, tuple[Ports, Sequence[Endpoint]]] = {}
    for ports, endpoints in groups:
        if endpoints:
            desired[ports_key(ports)] = (ports, endpoints)
    for key, (ports, endpoints) in desired.items():
        _plan_port_set(plan, by_ports.get(key, []), ports, endpoints, labels, max_per_slice)
    for key, slices in by_ports.items():
        if key not in desired:
            plan.delete.extend(slices)
    if len(plan.delete) == len(existing) and not plan.create:
        # No endpoints anywhere: one placeholder slice, kept if it is already the only one.
        only = plan.delete[0] if len(plan.delete) == 1 else None
        if (
            only is not None
            and owned_by(only, service_uid)
            and not only.get("ports")
            and not only.get("endpoints")
            and dict(_labels(only)) == dict(labels)
        ):
            plan.delete.clear()
        else:
            plan.create.append(([], []))
    _creates_take_over_deletes(plan, service_uid)
    return plan


def _plan_port_set(
    plan: SlicePlan,
    slices: Sequence[Mapping[str, Any]],
    ports: Ports,
    endpoints: Sequence[Endpoint],
    labels: Mapping[str, str],
    max_per_slice: int,
) -> None:
    """upstream's reconcileByPortMapping for one port set, appended to `plan`."""
    wanted: OrderedDict[EndpointKey, Endpoint] = OrderedDict(
        (endpoint_key(e), e) for e in endpoints
    )
    to_update: dict[str, SliceUpdate] = {}
    unchanged: dict[str, Mapping[str, Any]] = {}
    # 1. Keep what is still wanted in each slice.
    for sl in slices:
        held = sl.get("endpoints") or []
        kept: list[Endpoint] = []
        changed = False
        for ep in held:
            got = wanted.pop(endpoint_key(ep), None)
            if got is not None:
                kept.append(got)
                changed = changed or got != ep
        if changed or len(kept) != len(held):
            if kept:
                to_update[_name(sl)] = SliceUpdate(sl, ports, kept)
            else:
                plan.delete.append(sl)
        elif dict(_labels(sl)) != dict(labels) or (sl.get("ports") or []) != ports:
            to_update[_name(sl)] = SliceUpdate(sl, ports, kept)
        else:
            unchanged[_name(sl)] = sl
    # A slice without endpoints (the placeholder) is not kept beside slices that have some.
    empty = [sl for sl in unchanged.values() if not sl.get("endpoints")]
    # 2. Fill the slices being written anyway, fullest first.
    for upd in sorted(to_update.values(), key=lambda u: -len(u.endpoints)):
        while wanted and len(upd.endpoints) < max_per_slice:
            upd.endpoints.append(wanted.popitem(last=False)[1])
    # 3. The rest: into the unchanged slice it fits best, else into new slices.
    while wanted:
        target: SliceUpdate | None = None
        if len(wanted) < max_per_slice and unchanged:
            best = _slice_to_fill(list(unchanged.values()), len(wanted), max_per_slice)
            if best is not None:
                del unchanged[_name(best)]
                target = SliceUpdate(best, ports, list(best.get("endpoints") or []))
                to_update[_name(best)] = target
        new: list[Endpoint] = []
        fill = target.endpoints if target is not None else new
        while wanted and len(fill) < max_per_slice:
            fill.append(wanted.popitem(last=False)[1])
        if target is None:
            plan.create.append((ports, new))
    for upd in to_update.values():
        upd.endpoints.sort(key=_sort_key)
        plan.update.append(upd)
    plan.delete.extend(sl for sl in empty if _name(sl) in unchanged)


def _slice_to_fill(
    slices: Sequence[Mapping[str, Any]], count: int, max_per_slice: int
) -> Mapping[str, Any] | None:
    """The slice that `count` more endpoints fit with the least room to spare (upstream's
    getSliceToFill); None when they fit in none."""
    best: Mapping[str, Any] | None = None
    best_room = max_per_slice
    for sl in slices:
        room = max_per_slice - (count + len(sl.get("endpoints") or ()))
        if 0 <= room < best_room:
            best, best_room = sl, room
            if room == 0:
                break
    return best


def _creates_take_over_deletes(plan: SlicePlan, service_uid: str) -> None:
    """upstream's finalize: a slice to create reuses the name of an owned slice to delete."""
    i = 0
    while i < len(plan.delete) and plan.create:
        victim = plan.delete[i]
        if owned_by(victim, service_uid):
            ports, endpoints = plan.create.pop()
            plan.update.append(SliceUpdate(victim, ports, endpoints))
            del plan.delete[i]
        else:
            i += 1
