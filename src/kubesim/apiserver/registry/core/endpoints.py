"""core/v1 Endpoints: the addresses column."""

from __future__ import annotations

from kubesim.apiserver.registry.columns import Obj, age, more, name
from kubesim.apiserver.registry.resource import Resource
from kubesim.apiserver.registry.resourcetype import ResourceType

TYPE = ResourceType("", "v1", "Endpoints", "endpoints", True, short_names=("ep",))


def _endpoints(o: Obj) -> str:
    out = []
    for subset in o.get("subsets") or []:
        ports = subset.get("ports") or [{}]
        for addr in subset.get("addresses") or []:
            for p in ports:
                out.append(f"{addr.get('ip')}:{p['port']}" if "port" in p else str(addr.get("ip")))
    return more(out)


RESOURCE = Resource(
    TYPE,
    columns=(
        ("Name", "string", 0, name),
        ("Endpoints", "string", 0, _endpoints),
        ("Age", "date", 0, age),
    ),
)
