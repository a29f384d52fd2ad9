"""networking.k8s.io/v1 NetworkPolicy: served with the plain strategy and the default columns."""

from __future__ import annotations

from kubesim.apiserver.registry.resource import Resource
from kubesim.apiserver.registry.resourcetype import ResourceType

TYPE = ResourceType(
    "networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", True, short_names=("netpol",)
)
RESOURCE = Resource(TYPE)
