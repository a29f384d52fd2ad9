"""core/v1 ResourceQuota: served with the plain strategy and the default columns."""

from __future__ import annotations

from kubesim.apiserver.registry.resource import Resource
from kubesim.apiserver.registry.resourcetype import ResourceType

TYPE = ResourceType(
    "",
    "v1",
    "ResourceQuota",
    "resourcequotas",
    True,
    short_names=("quota",),
    subresources=frozenset(("status",)),
)
RESOURCE = Resource(TYPE)
