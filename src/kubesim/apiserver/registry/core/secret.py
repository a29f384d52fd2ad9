"""core/v1 Secret: `stringData` folded into `data`, the type defaulted, keys and size checked."""

from __future__ import annotations

import base64
from typing import Any

from kubesim.apiserver.registry.columns import age, name
from kubesim.apiserver.registry.resource import Resource, always
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.apiserver.registry.strategy import Strategy
from kubesim.machinery import field as fe
from kubesim.machinery import gobase64
from kubesim.machinery.errors import Cause, bad_request
from kubesim.machinery.volumepaths import is_config_map_key

TYPE = ResourceType("", "v1", "Secret", "secrets", True)


MAX_SECRET_SIZE = 1024 * 1024  # kube-apiserver's core.MaxSecretSize, also a ConfigMap's


def check_base64(kind: str, values: Any) -> int:
    """The decoded size of a Secret's `data` / a ConfigMap's `binaryData`; a value Go cannot
    decode fails the request as kube-apiserver's body decoding does (400, the byte offset)."""
    size = 0
    for value in (values or {}).values() if isinstance(values, dict) else ():
        try:
            size += len(gobase64.decode(str(value)))
        except gobase64.CorruptInputError as exc:
            raise bad_request(
                f'{kind} in version "v1" cannot be handled as a {kind}: {exc}'
            ) from None
    return size


def key_causes(path: str, values: Any) -> list[Cause]:
    causes: list[Cause] = []
    for key in values if isinstance(values, dict) else ():
        causes += [fe.invalid(f"{path}[{key}]", key, m) for m in is_config_map_key(key)]
    return causes


class SecretStrategy(Strategy):
    def _fold(self, obj: dict[str, Any]) -> dict[str, Any]:
        check_base64("Secret", obj.get("data"))
        string_data = obj.pop("stringData", None)
        if string_data:
            data = dict(obj.get("data") or {})
            for k, v in string_data.items():
                data[k] = base64.b64encode(str(v).encode()).decode()
            obj["data"] = data
        obj.setdefault("type", "Opaque")
        return obj

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        return self._fold(obj)

    def prepare_for_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any], subresource: str
    ) -> dict[str, Any]:
        return self._fold(obj)

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        """`ValidateSecret`: keys are file names (`IsConfigMapKey`), 1 MiB in all."""
        causes = key_causes("data", obj.get("data"))
        if check_base64("Secret", obj.get("data")) > MAX_SECRET_SIZE:
            causes.append(fe.too_long("data", MAX_SECRET_SIZE))
        return causes


RESOURCE = Resource(
    TYPE,
    always(SecretStrategy()),
    (
        ("Name", "string", 0, name),
        ("Type", "string", 0, lambda o: o.get("type", "Opaque")),
        ("Data", "integer", 0, lambda o: len(o.get("data") or {})),
        ("Age", "date", 0, age),
    ),
)
