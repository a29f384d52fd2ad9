"""`apiregistration.k8s.io/v1` APIService, stored and validated as kube-apiserver's aggregator
does (`ValidateAPIService`): the name is `spec.version + "." + spec.group`, priorities in
range, a Service reference with namespace, name and a valid port (443 by default), no CA
bundle or TLS skip for a local one. The port defaults to 443 and status is written only through its subresource;
availability is `controllers/apiservices.py`'s."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesim.apiserver.registry.columns import age, name
from kubesim.apiserver.registry.resource import Resource, always
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.apiserver.registry.strategy import Strategy
from kubesim.machinery import field as fe
from kubesim.machinery import gobase64
from kubesim.machinery.errors import Cause
from kubeutil import names

__all__ = ["RESOURCE", "APIServiceStrategy", "validate_apiservice"]

TYPE = ResourceType(
    "apiregistration.k8s.io",
    "v1",
    "APIService",
    "apiservices",
    False,
    subresources=frozenset(("status",)),
    categories=("api-extensions",),
)


def _path_segment(name: str) -> list[str]:
    """`path.IsValidPathSegmentName`."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{ch}'" for ch in ("/", "%") if ch in name]


def _name(name: str, spec: Mapping[str, Any]) -> list[Cause]:
    required = f"{spec.get('version') or ''}.{spec.get('group') or ''}"
    msgs = _path_segment(name)
    if not msgs and name != required:
        msgs = [f'must be `spec.version+"."+spec.group`: {fe.go_quote(required)}']
    return [fe.invalid("metadata.name", name, m) for m in msgs]


def _service(spec: Mapping[str, Any]) -> list[Cause]:
    service = spec.get("service")
    causes: list[Cause] = []
    if not isinstance(service, Mapping):
        if spec.get("caBundle"):
            try:
                size = f"{len(gobase64.decode(str(spec['caBundle'])))} bytes"
            except gobase64.CorruptInputError:
                size = f"{len(str(spec['caBundle']))} bytes"
            causes.append(
                fe.invalid("spec.caBundle", size, "local APIServices may not have a caBundle")
            )
        if spec.get("insecureSkipTLSVerify"):
            causes.append(
                fe.invalid(
                    "spec.insecureSkipTLSVerify",
                    True,
                    "local APIServices may not have insecureSkipTLSVerify",
                )
            )
        return causes
    if not service.get("namespace"):
        causes.append(fe.required("spec.service.namespace"))
    if not service.get("name"):
        causes.append(fe.required("spec.service.name"))
    port = service.get("port")
    if not isinstance(port, int) or not 0 < port < 65536:
        causes.append(
            fe.invalid(
                "spec.service.port",
                port,
                "port is not valid: must be between 1 and 65535, inclusive",
            )
        )
    if spec.get("insecureSkipTLSVerify") and spec.get("caBundle"):
        causes.append(
            fe.invalid("spec.insecureSkipTLSVerify", True, "may not be true if caBundle is present")
        )
    return causes


def validate_apiservice(obj: Mapping[str, Any]) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes = _name(str((obj.get("metadata") or {}).get("name") or ""), spec)
    group, version = str(spec.get("group") or ""), str(spec.get("version") or "")
    if not group and version != "v1":
        causes.append(
            fe.required(
                "spec.group", "only v1 may have an empty group and it better be legacy kube"
            )
        )
    if group:
        causes += [fe.invalid("spec.group", group, m) for m in names.is_dns1123_subdomain(group)]
    causes += [fe.invalid("spec.version", version, m) for m in names.is_dns1035_label(version)]
    for key, top in (("groupPriorityMinimum", 20000), ("versionPriority", 1000)):
        value = spec.get(key)
        if not isinstance(value, int) or not 0 < value <= top:
            causes.append(
                fe.invalid(f"spec.{key}", value or 0, f"must be positive and less than {top}")
            )
    return causes + _service(spec)


class APIServiceStrategy(Strategy):
    """apiregistration.k8s.io/v1 APIService: the Service port defaults to 443; status is
    written only through its subresource."""

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        spec = dict(obj.get("spec") or {})
        if isinstance(spec.get("service"), dict):
            spec["service"] = {"port": 443, **spec["service"]}
        obj["spec"] = spec
        obj["status"] = {}
        return obj

    def prepare_for_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any], subresource: str
    ) -> dict[str, Any]:
        if subresource == "status":
            return {**obj, "spec": old.get("spec") or {}}
        spec = dict(obj.get("spec") or {})
        if isinstance(spec.get("service"), dict):
            spec["service"] = {"port": 443, **spec["service"]}
        return {**obj, "spec": spec, "status": old.get("status") or {}}

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        return validate_apiservice(obj)


def _apiservice_service(o: dict[str, Any]) -> str:
    ref = (o.get("spec") or {}).get("service")
    return f"{ref.get('namespace')}/{ref.get('name')}" if isinstance(ref, dict) else "Local"


def _apiservice_available(o: dict[str, Any]) -> str:
    """kubectl's AVAILABLE column: the condition's status, with the reason when not True."""
    for c in (o.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Available":
            status = str(c.get("status"))
            return status if status == "True" else f"{status} ({c.get('reason')})"
    return "Unknown"


RESOURCE = Resource(
    TYPE,
    always(APIServiceStrategy()),
    (
        ("Name", "string", 0, name),
        ("Service", "string", 0, _apiservice_service),
        ("Available", "string", 0, _apiservice_available),
        ("Age", "date", 0, age),
    ),
)
