"""rbac.authorization.k8s.io/v1 ClusterRoleBinding: served with the plain strategy and the default columns."""

from __future__ import annotations

from kubesim.apiserver.registry.resource import Resource
from kubesim.apiserver.registry.resourcetype import ResourceType

TYPE = ResourceType(
    "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False
)
RESOURCE = Resource(TYPE)
