"""kube-apiserver's validation of a pod's `dnsPolicy` and `dnsConfig` (its messages), and the
limits the kubelet's resolv.conf shares with it."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any, Final

from kubesim.machinery import field as fe
from kubesim.machinery.errors import Cause
from kubeutil.names import is_dns1123_subdomain

__all__ = [
    "DNS_POLICIES",
    "MAX_NAMESERVERS",
    "MAX_SEARCH_CHARS",
    "MAX_SEARCH_PATHS",
    "validate_pod_dns",
]

# The limits with the ExpandedDNSConfig feature (GA).
MAX_NAMESERVERS: Final = 3
MAX_SEARCH_PATHS: Final = 32
MAX_SEARCH_CHARS: Final = 2048
DNS_POLICIES: Final = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
_IP_DETAIL: Final = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"


def _strings(values: list[Any]) -> fe.Shown:
    """A `[]string` as Go's `%#v` prints it in a field error."""
    return fe.Shown("[]string{" + ", ".join(fe.go_quote(str(v)) for v in values) + "}")


def _valid_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def validate_pod_dns(spec: Mapping[str, Any], path: str = "spec") -> list[Cause]:
    """`validateDNSPolicy` and `validatePodDNSConfig` of a pod spec."""
    policy = spec.get("dnsPolicy")
    if policy is not None and policy not in DNS_POLICIES:
        return [fe.not_supported(f"{path}.dnsPolicy", policy, DNS_POLICIES)]
    config = spec.get("dnsConfig")
    where = f"{path}.dnsConfig"
    if policy == "None":
        if config is None:
            return [fe.required(where, "must provide `dnsConfig` when `dnsPolicy` is None")]
        if not config.get("nameservers"):
            detail = "must provide at least one DNS nameserver when `dnsPolicy` is None"
            return [fe.required(f"{where}.nameservers", detail)]
    if not config:
        return []
    causes: list[Cause] = []
    servers = list(config.get("nameservers") or [])
    if len(servers) > MAX_NAMESERVERS:
        detail = f"must not have more than {MAX_NAMESERVERS} nameservers"
        causes.append(fe.invalid(f"{where}.nameservers", _strings(servers), detail))
    for i, server in enumerate(servers):
        if not _valid_ip(str(server)):
            causes.append(fe.invalid(f"{where}.nameservers[{i}]", str(server), _IP_DETAIL))
    searches = [str(s) for s in config.get("searches") or []]
    if len(searches) > MAX_SEARCH_PATHS:
        detail = f"must not have more than {MAX_SEARCH_PATHS} search paths"
        causes.append(fe.invalid(f"{where}.searches", _strings(searches), detail))
    if len(" ".join(searches)) > MAX_SEARCH_CHARS:
        detail = (
            f"must not have more than {MAX_SEARCH_CHARS} characters (including spaces) "
            "in the search list"
        )
        causes.append(fe.invalid(f"{where}.searches", _strings(searches), detail))
    for i, search in enumerate(searches):
        name = search.removesuffix(".")  # a trailing dot is fine
        causes.extend(
            fe.invalid(f"{where}.searches[{i}]", name, msg) for msg in is_dns1123_subdomain(name)
        )
    for i, option in enumerate(config.get("options") or []):
        if not option.get("name"):
            causes.append(fe.required(f"{where}.options[{i}]", "must not be empty"))
    return causes
