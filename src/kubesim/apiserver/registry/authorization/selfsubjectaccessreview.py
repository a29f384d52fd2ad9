"""authorization.k8s.io/v1 SelfSubjectAccessReview: served with the plain strategy and the default columns."""

from __future__ import annotations

from kubesim.apiserver.registry.resource import Resource
from kubesim.apiserver.registry.resourcetype import ResourceType

TYPE = ResourceType(
    "authorization.k8s.io",
    "v1",
    "SelfSubjectAccessReview",
    "selfsubjectaccessreviews",
    False,
    verbs=("create",),
)
RESOURCE = Resource(TYPE)
