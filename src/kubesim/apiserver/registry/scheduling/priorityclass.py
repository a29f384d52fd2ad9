"""scheduling.k8s.io/v1 PriorityClass: served with the plain strategy and the default columns."""

from __future__ import annotations

from kubesim.apiserver.registry.resource import Resource
from kubesim.apiserver.registry.resourcetype import ResourceType

TYPE = ResourceType(
    "scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False, short_names=("pc",)
)
RESOURCE = Resource(TYPE)
