"""networking.k8s.io/v1 Ingress: served with the plain strategy and the default columns."""

from __future__ import annotations

from kubesim.apiserver.registry.resource import Resource
from kubesim.apiserver.registry.resourcetype import ResourceType

TYPE = ResourceType(
    "networking.k8s.io",
    "v1",
    "Ingress",
    "ingresses",
    True,
    short_names=("ing",),
    subresources=frozenset(("status",)),
)
RESOURCE = Resource(TYPE)
