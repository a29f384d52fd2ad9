"""core/v1 ServiceAccount: served with the plain strategy and the default columns."""

from __future__ import annotations

from kubesim.apiserver.registry.resource import Resource
from kubesim.apiserver.registry.resourcetype import ResourceType

TYPE = ResourceType(
    "",
    "v1",
    "ServiceAccount",
    "serviceaccounts",
    True,
    short_names=("sa",),
    subresources=frozenset(("token",)),
)
RESOURCE = Resource(TYPE)
