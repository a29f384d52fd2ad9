"""core/v1 ConfigMap: `binaryData` decoded as Go does, keys checked."""

from __future__ import annotations

from typing import Any

from kubesim.apiserver.registry.columns import age, name
from kubesim.apiserver.registry.core.secret import check_base64, key_causes
from kubesim.apiserver.registry.resource import Resource, always
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.apiserver.registry.strategy import Strategy
from kubesim.machinery import field as fe
from kubesim.machinery.errors import Cause

TYPE = ResourceType("", "v1", "ConfigMap", "configmaps", True, short_names=("cm",))


class ConfigMapStrategy(Strategy):
    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        check_base64("ConfigMap", obj.get("binaryData"))
        return obj

    def prepare_for_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any], subresource: str
    ) -> dict[str, Any]:
        check_base64("ConfigMap", obj.get("binaryData"))
        return obj

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        """`ValidateConfigMap`: keys are file names, none in both `data` and `binaryData`."""
        data, binary = obj.get("data"), obj.get("binaryData")
        causes = key_causes("data", data)
        if isinstance(data, dict) and isinstance(binary, dict):
            causes += [
                fe.invalid(f"data[{k}]", k, "duplicate of key present in binaryData")
                for k in data
                if k in binary
            ]
        return causes + key_causes("binaryData", binary)


RESOURCE = Resource(
    TYPE,
    always(ConfigMapStrategy()),
    (
        ("Name", "string", 0, name),
        ("Data", "integer", 0, lambda o: len(o.get("data") or {}) + len(o.get("binaryData") or {})),
        ("Age", "date", 0, age),
    ),
)
