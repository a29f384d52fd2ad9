"""What a request to the API server is about and what an error answer says: `Resource`
(where a kind lives), the core kinds, `ApiError` (a non-2xx answer with its `Status`).

Apart from `jobset.runtime.client` so that what only names resources and reads errors (the
user commands, their quick read-only connection) loads neither aiohttp nor
kubernetes_asyncio; `jobset.runtime.client` re-exports every name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote

__all__ = [
    "CONFIGMAPS",
    "EVENTS",
    "JOBS",
    "LEASES",
    "NAMESPACES",
    "NODES",
    "PODS",
    "PVCS",
    "SECRETS",
    "SERVICES",
    "ApiError",
    "Object",
    "Resource",
]

Object = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Resource:
    """One API resource: where it lives on the server. Hashable, so usable as a dict key."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str = ""
    ) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name:
            base += f"/{quote(name, safe='')}"
        if subresource:
            base += f"/{subresource}"
        return base

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


CONFIGMAPS: Final = Resource("", "v1", "configmaps", "ConfigMap")
SECRETS: Final = Resource("", "v1", "secrets", "Secret")
PODS: Final = Resource("", "v1", "pods", "Pod")
EVENTS: Final = Resource("", "v1", "events", "Event")
NAMESPACES: Final = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
JOBS: Final = Resource("batch", "v1", "jobs", "Job")
LEASES: Final = Resource("coordination.k8s.io", "v1", "leases", "Lease")
SERVICES: Final = Resource("", "v1", "services", "Service")
PVCS: Final = Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim")
NODES: Final = Resource("", "v1", "nodes", "Node", namespaced=False)


class ApiError(Exception):
    """A non-2xx answer, with the server's `Status` when it sent one."""

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        body: Object | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body
        self.retry_after = retry_after

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def conflict(self) -> bool:
        return self.status == 409 and self.reason != "AlreadyExists"

    @property
    def already_exists(self) -> bool:
        return self.status == 409 and self.reason == "AlreadyExists"

    @property
    def gone(self) -> bool:
        """410: the resourceVersion is too old (`Expired` or `Gone`); relist."""
        return self.status == 410

    @classmethod
    def from_status(cls, code: int, status: Object, retry_after: float | None = None) -> ApiError:
        return cls(
            int(status.get("code") or code),
            str(status.get("reason") or ""),
            str(status.get("message") or ""),
            status,
            retry_after,
        )
