"""apps/v1 StatefulSet: served with the plain strategy and the default columns."""

from __future__ import annotations

from kubesim.apiserver.registry.resource import Resource
from kubesim.apiserver.registry.resourcetype import ResourceType

TYPE = ResourceType(
    "apps",
    "v1",
    "StatefulSet",
    "statefulsets",
    True,
    short_names=("sts",),
    subresources=frozenset(("status", "scale")),
    categories=("all",),
)
RESOURCE = Resource(TYPE)
