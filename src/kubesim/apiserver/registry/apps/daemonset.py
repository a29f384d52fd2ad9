"""apps/v1 DaemonSet: served with the plain strategy and the default columns."""

from __future__ import annotations

from kubesim.apiserver.registry.resource import Resource
from kubesim.apiserver.registry.resourcetype import ResourceType

TYPE = ResourceType(
    "apps",
    "v1",
    "DaemonSet",
    "daemonsets",
    True,
    short_names=("ds",),
    subresources=frozenset(("status",)),
    categories=("all",),
)
RESOURCE = Resource(TYPE)
