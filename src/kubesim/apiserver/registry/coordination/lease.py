"""coordination.k8s.io/v1 Lease: the holder column."""

from __future__ import annotations

from kubesim.apiserver.registry.columns import age, name
from kubesim.apiserver.registry.resource import Resource
from kubesim.apiserver.registry.resourcetype import ResourceType

TYPE = ResourceType("coordination.k8s.io", "v1", "Lease", "leases", True)


RESOURCE = Resource(
    TYPE,
    columns=(
        ("Name", "string", 0, name),
        ("Holder", "string", 0, lambda o: (o.get("spec") or {}).get("holderIdentity", "")),
        ("Age", "date", 0, age),
    ),
)
