"""A base for object hooks that only mutate: an admission plugin's change before a write.

`ApiCore`'s `ObjectHooks` have three parts; most built-in admission plugins modelled here
(DefaultStorageClass, StorageObjectInUseProtection) only change an object before it is
written, so they take the other two from this class.
"""

from __future__ import annotations

from typing import Any

from kubesim.apiserver.core.request import Request
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.machinery.errors import Cause

__all__ = ["MutatingHook"]


class MutatingHook:
    """Changes nothing, validates nothing and does nothing after the write: subclasses
    override `before_write`."""

    def before_write(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None, req: Request
    ) -> dict[str, Any]:
        return obj

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        return []

    def after_write(
        self, rt: ResourceType, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> None:
        return None
