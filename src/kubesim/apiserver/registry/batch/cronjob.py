"""batch/v1 CronJob: served with the plain strategy and the default columns."""

from __future__ import annotations

from kubesim.apiserver.registry.resource import Resource
from kubesim.apiserver.registry.resourcetype import ResourceType

TYPE = ResourceType(
    "batch",
    "v1",
    "CronJob",
    "cronjobs",
    True,
    short_names=("cj",),
    subresources=frozenset(("status",)),
    categories=("all",),
)
RESOURCE = Resource(TYPE)
