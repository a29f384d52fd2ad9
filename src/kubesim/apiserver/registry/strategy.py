"""`Strategy`: the per-type server behaviour of a resource, as kube-apiserver's registry
strategies have it: defaults on create, what an update may change, validation.

Each built-in type's own strategy is in its registry module (`registry/<group>/<kind>.py`);
a type without special needs gets `PLAIN`. They mirror kube-apiserver for the fields clients
(kubectl, Helm, the JobSet controller) depend on.
"""

from __future__ import annotations

from typing import Any

from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.machinery import field as fe
from kubesim.machinery.errors import Cause

__all__ = ["PLAIN", "Strategy", "immutable", "short"]


class Strategy:
    """Defaults and validation hooks for one type; the plain one changes nothing."""

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        if rt.has_status_subresource and rt.crd is not None:
            obj.pop("status", None)
        return obj

    def prepare_for_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any], subresource: str
    ) -> dict[str, Any]:
        return obj

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        return []


def immutable(path: str, new: Any, old: Any, what: str = "field is immutable") -> list[Cause]:
    if new != old:
        return [fe.invalid(path, fe.Shown(short(new)), what)]
    return []


def short(v: Any) -> str:
    text = repr(v)
    return text if len(text) < 120 else text[:117] + "..."


PLAIN = Strategy()
