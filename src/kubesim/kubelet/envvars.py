"""The environment a kubelet gives a container: pure functions, no I/O.

The order is the kubelet's (`makeEnvironmentVariables`): `envFrom` sources in order (with
their `prefix`), then `env` (each value may use `$(VAR)` of what came before, including the
service variables), then the service variables (`KUBERNETES_SERVICE_HOST`, ...) for names the
container did not set. `valueFrom` reads `fieldRef`, `resourceFieldRef`, `configMapKeyRef` and
`secretKeyRef`; a missing ConfigMap, Secret or key that is not `optional` is the kubelet's
`CreateContainerConfigError`, raised here as `ConfigError`.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from kubesim.programs.programs import k8s_expand, lookup_field_ref
from kubeutil.quantity import parse_quantity

__all__ = [
    "ConfigError",
    "Lookup",
    "container_env",
    "expand",
    "field_ref",
    "resource_field_ref",
    "service_env",
]

# (kind, namespace, name) -> the ConfigMap or Secret, or None when it does not exist
Lookup = Callable[[str, str, str], Mapping[str, Any] | None]

_VALID_NAME: Final = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")


class ConfigError(Exception):
    """The container cannot be configured (the kubelet's CreateContainerConfigError)."""


def expand(text: str, variables: Mapping[str, str]) -> str:
    """Kubernetes' `$(VAR)` expansion (undefined references stay, `$$` is `$`)."""
    return k8s_expand(text, variables)


def field_ref(pod: Mapping[str, Any], path: str) -> str:
    """The value of a downward-API `fieldRef` (`metadata.labels['k']`, `status.podIP`, ...).
    `metadata.labels` / `metadata.annotations` alone give all of them, one `k="v"` a line."""
    meta = pod.get("metadata") or {}
    if path in ("metadata.labels", "metadata.annotations"):
        items = sorted((meta.get(path.split(".")[1]) or {}).items())
        return "\n".join(f'{k}="{v}"' for k, v in items)
    if path == "status.podIPs":
        return ",".join(str(i.get("ip")) for i in (pod.get("status") or {}).get("podIPs") or [])
    value = lookup_field_ref(pod, path)
    if value is None:
        supported = path.startswith("metadata.") or path in (
            "spec.nodeName",
            "spec.serviceAccountName",
            "status.hostIP",
            "status.podIP",
        )
        if not supported:
            raise ConfigError(f"unsupported fieldRef fieldPath {path!r}")
        return ""
    return value


def resource_field_ref(
    container: Mapping[str, Any],
    ref: Mapping[str, Any],
    node_allocatable: Mapping[str, Any] | None = None,
) -> str:
    """`resourceFieldRef`: a limit or request of the container in units of `divisor` (rounded
    up, as the kubelet does); a limit that is not set is the node's allocatable amount."""
    resource = str(ref.get("resource") or "")
    kind, _, name = resource.partition(".")
    if kind not in ("limits", "requests") or not name:
        raise ConfigError(f"unsupported resourceFieldRef resource {resource!r}")
    resources = container.get("resources") or {}
    raw = (resources.get(kind) or {}).get(name)
    if raw is None and kind == "requests":
        raw = (resources.get("limits") or {}).get(name)
    if raw is None and kind == "limits":
        raw = (node_allocatable or {}).get(name)
    if raw is None:
        return "0"
    divisor_raw = ref.get("divisor") or "1"
    try:
        value = parse_quantity(raw)
        divisor = parse_quantity(divisor_raw)
    except ValueError as exc:
        raise ConfigError(f"resourceFieldRef {resource}: {exc}") from exc
    if not divisor:
        raise ConfigError(f"resourceFieldRef {resource}: divisor is zero")
    return str(math.ceil(value / divisor))


def _key_ref(kind: str, namespace: str, ref: Mapping[str, Any], lookup: Lookup) -> tuple[bool, str]:
    """(found, value) of a configMapKeyRef / secretKeyRef."""
    name, key = str(ref.get("name") or ""), str(ref.get("key") or "")
    optional = bool(ref.get("optional"))
    obj = lookup(kind, namespace, name)
    if obj is None:
        if optional:
            return False, ""
        raise ConfigError(f'{kind.lower()} "{name}" not found')
    data = _string_data(kind, obj)
    if key not in data:
        if optional:
            return False, ""
        raise ConfigError(f"couldn't find key {key} in {kind} {namespace}/{name}")
    return True, data[key]


def _string_data(kind: str, obj: Mapping[str, Any]) -> dict[str, str]:
    """A ConfigMap's or Secret's keys as strings (Secret data is base64)."""
    out: dict[str, str] = {}
    if kind == "Secret":
        for k, v in (obj.get("data") or {}).items():
            out[k] = base64.b64decode(str(v)).decode("utf-8", "replace")
        for k, v in (obj.get("stringData") or {}).items():
            out[k] = str(v)
    else:
        for k, v in (obj.get("binaryData") or {}).items():
            out[k] = base64.b64decode(str(v)).decode("utf-8", "replace")
        out.update({k: str(v) for k, v in (obj.get("data") or {}).items()})
    return out


def service_env(host: str, port: int) -> dict[str, str]:
    """The variables of the `kubernetes` Service every container gets (enableServiceLinks
    aside), pointing at an address of the API server reachable from the pod."""
    return {
        "KUBERNETES_SERVICE_HOST": host,
        "KUBERNETES_SERVICE_PORT": str(port),
        "KUBERNETES_SERVICE_PORT_HTTPS": str(port),
        "KUBERNETES_PORT": f"tcp://{host}:{port}",
        f"KUBERNETES_PORT_{port}_TCP": f"tcp://{host}:{port}",
        f"KUBERNETES_PORT_{port}_TCP_PROTO": "tcp",
        f"KUBERNETES_PORT_{port}_TCP_PORT": str(port),
        f"KUBERNETES_PORT_{port}_TCP_ADDR": host,
    }


def container_env(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    lookup: Lookup,
    services: Mapping[str, str] | None = None,
    node_allocatable: Mapping[str, Any] | None = None,
) -> dict[str, str]:
    """The container's variables from its `envFrom` and `env`, then `services` for names it
    did not set. Raises ConfigError where the kubelet would refuse to start the container."""
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    services = dict(services or {})
    out: dict[str, str] = {}
    for source in container.get("envFrom") or ():
        prefix = str(source.get("prefix") or "")
        for kind, field in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
            ref = source.get(field)
            if not ref:
                continue
            obj = lookup(kind, namespace, str(ref.get("name") or ""))
            if obj is None:
                if ref.get("optional"):
                    continue
                raise ConfigError(f'{kind.lower()} "{ref.get("name")}" not found')
            for k, v in _string_data(kind, obj).items():
                if _VALID_NAME.match(prefix + k):
                    out[prefix + k] = v
    for item in container.get("env") or ():
        name = str(item.get("name") or "")
        if not name:
            continue
        if "valueFrom" not in item:
            out[name] = expand(str(item.get("value") or ""), {**services, **out})
            continue
        value_from = item.get("valueFrom") or {}
        if "fieldRef" in value_from:
            out[name] = field_ref(pod, str(value_from["fieldRef"].get("fieldPath") or ""))
        elif "resourceFieldRef" in value_from:
            out[name] = resource_field_ref(
                container, value_from["resourceFieldRef"], node_allocatable
            )
        elif "configMapKeyRef" in value_from:
            found, value = _key_ref("ConfigMap", namespace, value_from["configMapKeyRef"], lookup)
            if found:
                out[name] = value
        elif "secretKeyRef" in value_from:
            found, value = _key_ref("Secret", namespace, value_from["secretKeyRef"], lookup)
            if found:
                out[name] = value
    return {**services, **out}
