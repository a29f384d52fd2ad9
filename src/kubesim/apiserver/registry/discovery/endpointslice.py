"""discovery.k8s.io/v1 EndpointSlice: validated as kube-apiserver validates it
(`validation.py`: addresses by address type, hostnames as DNS labels, ports), and the
address type, ports and endpoints columns."""

from __future__ import annotations

from typing import Any

from kubesim.apiserver.registry.columns import Obj, age, more, name
from kubesim.apiserver.registry.discovery.validation import validate_endpoint_slice
from kubesim.apiserver.registry.resource import Resource, always
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.apiserver.registry.strategy import Strategy
from kubesim.machinery.errors import Cause

TYPE = ResourceType("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", True)


def _slice_endpoints(o: Obj) -> str:
    return more([a for e in o.get("endpoints") or [] for a in e.get("addresses") or []])


def _slice_ports(o: Obj) -> str:
    ports = [str(p.get("port")) for p in o.get("ports") or []]
    return ",".join(ports) or "<unset>"


class EndpointSliceStrategy(Strategy):
    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        return validate_endpoint_slice(obj, old)


RESOURCE = Resource(
    TYPE,
    always(EndpointSliceStrategy()),
    columns=(
        ("Name", "string", 0, name),
        ("AddressType", "string", 0, lambda o: o.get("addressType", "")),
        ("Ports", "string", 0, _slice_ports),
        ("Endpoints", "string", 0, _slice_endpoints),
        ("Age", "date", 0, age),
    ),
)
