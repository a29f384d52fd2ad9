"""apps/v1 ControllerRevision: served with the plain strategy and the default columns."""

from __future__ import annotations

from kubesim.apiserver.registry.resource import Resource
from kubesim.apiserver.registry.resourcetype import ResourceType

TYPE = ResourceType("apps", "v1", "ControllerRevision", "controllerrevisions", True)
RESOURCE = Resource(TYPE)
