"""core/v1 LimitRange: served with the plain strategy and the default columns."""

from __future__ import annotations

from kubesim.apiserver.registry.resource import Resource
from kubesim.apiserver.registry.resourcetype import ResourceType

TYPE = ResourceType("", "v1", "LimitRange", "limitranges", True, short_names=("limits",))
RESOURCE = Resource(TYPE)
