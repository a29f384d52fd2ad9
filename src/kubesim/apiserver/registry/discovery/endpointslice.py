"""discovery.k8s.io/v1 EndpointSlice: the address type, ports and endpoints columns."""

from __future__ import annotations

from kubesim.apiserver.registry.columns import Obj, age, more, name
from kubesim.apiserver.registry.resource import Resource
from kubesim.apiserver.registry.resourcetype import ResourceType

TYPE = ResourceType("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", True)


def _slice_endpoints(o: Obj) -> str:
    return more([a for e in o.get("endpoints") or [] for a in e.get("addresses") or []])


def _slice_ports(o: Obj) -> str:
    ports = [str(p.get("port")) for p in o.get("ports") or []]
    return ",".join(ports) or "<unset>"


RESOURCE = Resource(
    TYPE,
    columns=(
        ("Name", "string", 0, name),
        ("AddressType", "string", 0, lambda o: o.get("addressType", "")),
        ("Ports", "string", 0, _slice_ports),
        ("Endpoints", "string", 0, _slice_endpoints),
        ("Age", "date", 0, age),
    ),
)
