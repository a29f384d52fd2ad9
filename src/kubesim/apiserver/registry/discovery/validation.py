"""EndpointSlices validated as kube-apiserver's `ValidateEndpointSlice` validates them: the
address type, each endpoint's addresses by that type, its hostname (a DNS label: it becomes
a DNS name of the Service), its node name, and the ports. Errors read as upstream's."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any, Final

from kubesim.machinery import field as fe
from kubesim.machinery.errors import Cause
from kubeutil import names

__all__ = ["validate_endpoint_slice"]

ADDRESS_TYPES: Final = ("FQDN", "IPv4", "IPv6")
PROTOCOLS: Final = ("SCTP", "TCP", "UDP")
MAX_ENDPOINTS: Final = 1000
MAX_ADDRESSES: Final = 100
MAX_PORTS: Final = 20000


def _ip(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        return None


def _endpoint_ip(path: str, value: str) -> list[Cause]:
    """`ValidateEndpointIP`: an address a client can reach, not a host-local one."""
    ip = _ip(value)
    if ip is None:
        return [fe.invalid(path, value, "must be a valid IP address")]
    causes = []
    if ip.is_unspecified:
        causes.append(fe.invalid(path, value, f"may not be unspecified ({value})"))
    if ip.is_loopback:
        causes.append(
            fe.invalid(path, value, "may not be in the loopback range (127.0.0.0/8, ::1/128)")
        )
    if ip.is_link_local:
        causes.append(
            fe.invalid(
                path, value, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"
            )
        )
    if ip.is_multicast and ip in _LINK_LOCAL_MULTICAST[ip.version]:
        causes.append(
            fe.invalid(
                path,
                value,
                "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
            )
        )
    return causes


_LINK_LOCAL_MULTICAST: Final = {
    4: ipaddress.ip_network("224.0.0.0/24"),
    6: ipaddress.ip_network("ff02::/16"),
}


def _fqdn(path: str, value: str) -> list[Cause]:
    """`IsFullyQualifiedDomainName`."""
    if not value:
        return [fe.required(path)]
    name = value.removesuffix(".")
    errs = names.is_dns1123_subdomain(name)
    if errs:
        return [fe.invalid(path, name, ",".join(errs))]
    labels = name.split(".")
    if len(labels) < 2:
        return [
            fe.invalid(
                path, name, "should be a domain with at least two segments separated by dots"
            )
        ]
    for label in labels:
        errs = names.is_dns1123_label(label)
        if errs:
            return [fe.invalid(path, label, ",".join(errs))]
    return []


def _address(path: str, address_type: Any, value: Any) -> list[Cause]:
    text = value if isinstance(value, str) else str(value)
    if address_type == "IPv4":
        ip = _ip(text)
        causes = (
            []
            if ip is not None and ip.version == 4
            else [fe.invalid(path, text, "must be a valid IPv4 address")]
        )
        return causes + _endpoint_ip(path, text)
    if address_type == "IPv6":
        ip = _ip(text)
        causes = (
            []
            if ip is not None and ip.version == 6
            else [fe.invalid(path, text, "must be a valid IPv6 address")]
        )
        return causes + _endpoint_ip(path, text)
    if address_type == "FQDN":
        return _fqdn(path, text)
    return []  # an unknown type is reported once, at addressType


def _label(path: str, value: str) -> list[Cause]:
    return [fe.invalid(path, value, msg) for msg in names.is_dns1123_label(value)]


def _endpoints(endpoints: Any, address_type: Any) -> list[Cause]:
    endpoints = endpoints if isinstance(endpoints, list) else []
    if len(endpoints) > MAX_ENDPOINTS:
        return [fe.too_many("endpoints", len(endpoints), MAX_ENDPOINTS)]
    causes: list[Cause] = []
    for i, endpoint in enumerate(endpoints):
        endpoint = endpoint if isinstance(endpoint, Mapping) else {}
        at = f"endpoints[{i}]"
        addresses = endpoint.get("addresses")
        addresses = addresses if isinstance(addresses, list) else []
        if not addresses:
            causes.append(fe.required(f"{at}.addresses", "must contain at least 1 address"))
        elif len(addresses) > MAX_ADDRESSES:
            causes.append(fe.too_many(f"{at}.addresses", len(addresses), MAX_ADDRESSES))
        for j, address in enumerate(addresses):
            causes += _address(f"{at}.addresses[{j}]", address_type, address)
        node = endpoint.get("nodeName")
        if node is not None:
            causes += [
                fe.invalid(f"{at}.nodeName", node, msg)
                for msg in names.is_dns1123_subdomain(str(node))
            ]
        hostname = endpoint.get("hostname")
        if hostname is not None:
            causes += _label(f"{at}.hostname", str(hostname))
    return causes


def _ports(ports: Any) -> list[Cause]:
    ports = ports if isinstance(ports, list) else []
    if len(ports) > MAX_PORTS:
        return [fe.too_many("ports", len(ports), MAX_PORTS)]
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, port in enumerate(ports):
        port = port if isinstance(port, Mapping) else {}
        at = f"ports[{i}]"
        name = str(port.get("name") or "")
        if name:
            causes += _label(f"{at}.name", name)
        if name in seen:
            causes.append(fe.duplicate(f"{at}.name", name))
        seen.add(name)
        protocol = port.get("protocol")
        if protocol is None:
            causes.append(fe.required(f"{at}.protocol"))
        elif protocol not in PROTOCOLS:
            causes.append(fe.not_supported(f"{at}.protocol", protocol, PROTOCOLS))
        app = port.get("appProtocol")
        if app is not None:
            causes += [
                fe.invalid(f"{at}.appProtocol", app, msg)
                for msg in names.is_qualified_name(str(app))
            ]
    return causes


def validate_endpoint_slice(
    obj: Mapping[str, Any], old: Mapping[str, Any] | None = None
) -> list[Cause]:
    """`ValidateEndpointSlice` (and on update the immutable address type), without the
    object metadata (validated for every type)."""
    address_type = obj.get("addressType")
    causes: list[Cause] = []
    if not address_type:
        causes.append(fe.required("addressType"))
    elif address_type not in ADDRESS_TYPES:
        causes.append(fe.not_supported("addressType", address_type, ADDRESS_TYPES))
    causes += _endpoints(obj.get("endpoints"), address_type)
    causes += _ports(obj.get("ports"))
    if old is not None and old.get("addressType") != address_type:
        causes.append(fe.invalid("addressType", address_type, "field is immutable"))
    return causes
