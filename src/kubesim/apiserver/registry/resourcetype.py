"""`ResourceType`: what the API server needs to know to route a request for one served type,
answer discovery for it and pick its storage semantics (namespaced or not, which subresources,
whether the main resource ignores `.status`).

Built-in types declare theirs in their registry module (`registry/<group>/<kind>.py`); CRDs
make theirs at run time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

STANDARD_VERBS = (
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
)


@dataclass(frozen=True)
class ResourceType:
    """One served resource, e.g. `batch/v1 jobs`."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: frozenset[str] = frozenset()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = STANDARD_VERBS
    # For custom resources: the served versions, their schemas and printer columns.
    crd: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    singular_name: str = ""
    # A view of another type's objects, stored as (group, version, plural) of that type and
    # converted at the API boundary: events.k8s.io/v1 Events are core/v1 Events
    # (`registry/events/event.py`), as in kube-apiserver.
    storage: tuple[str, str, str] | None = None

    @property
    def singular(self) -> str:
        return self.singular_name or self.kind.lower()

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> tuple[str, str]:
        """Storage key: one store per group and plural, whatever the version (the stored
        type's, for a view)."""
        if self.storage is not None:
            return (self.storage[0], self.storage[2])
        return (self.group, self.plural)

    @property
    def has_status_subresource(self) -> bool:
        return "status" in self.subresources

    @property
    def qualified(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural
