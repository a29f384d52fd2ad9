"""authentication.k8s.io/v1 TokenReview: served with the plain strategy and the default columns."""

from __future__ import annotations

from kubesim.apiserver.registry.resource import Resource
from kubesim.apiserver.registry.resourcetype import ResourceType

TYPE = ResourceType(
    "authentication.k8s.io", "v1", "TokenReview", "tokenreviews", False, verbs=("create",)
)
RESOURCE = Resource(TYPE)
