"""Smaller versions of Kubernetes' URL and IP/CIDR libraries: `url(s).getHost()`, `ip(s).family()`,
`cidr(s).containsIP(ip)`, ...
"""

from __future__ import annotations

import ipaddress
import urllib.parse
from collections.abc import Callable
from typing import Any

from celpy import celtypes

from kubesim.machinery.cel.values import check_str, error_value

# URLs ------------------------------------------------------------------------------------------


class URL:
    __slots__ = ("parts", "text")

    def __init__(self, text: str, parts: urllib.parse.SplitResult) -> None:
        self.text = text
        self.parts = parts

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, URL) and self.text == other.text

    __hash__ = None  # type: ignore[assignment]


def parse_url(s: str) -> URL | None:
    try:
        parts = urllib.parse.urlsplit(s)
        _ = parts.port
    except ValueError:
        return None
    if not (parts.scheme or s.startswith("/")) or any(c.isspace() for c in s):
        return None
    return URL(s, parts)


def _url(s: Any) -> Any:
    check_str(s)
    u = parse_url(s)
    return (
        u if u is not None else error_value(f"URL parse error during conversion from string: {s}")
    )


def _is_url(s: Any) -> Any:
    check_str(s)
    return celtypes.BoolType(parse_url(s) is not None)


def _url_part(name: str) -> Callable[[Any], Any]:
    def get(u: Any) -> Any:
        if not isinstance(u, URL):
            raise TypeError("no such overload")
        p = u.parts
        if name == "scheme":
            return celtypes.StringType(p.scheme)
        if name == "host":
            return celtypes.StringType(p.netloc.rsplit("@", 1)[-1])
        if name == "hostname":
            return celtypes.StringType(p.hostname or "")
        if name == "port":
            return celtypes.StringType("" if p.port is None else str(p.port))
        if name == "path":
            return celtypes.StringType(p.path)
        query: dict[Any, Any] = {}
        for k, v in urllib.parse.parse_qs(p.query, keep_blank_values=True).items():
            query[celtypes.StringType(k)] = celtypes.ListType(celtypes.StringType(x) for x in v)
        return celtypes.MapType(query)

    return get


# IP addresses and CIDRs ------------------------------------------------------------------------

_IPAddr = ipaddress.IPv4Address | ipaddress.IPv6Address


_IPNet = ipaddress.IPv4Network | ipaddress.IPv6Network


class IP:
    __slots__ = ("addr",)

    def __init__(self, addr: _IPAddr) -> None:
        self.addr = addr

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, IP) and self.addr == other.addr

    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:
        return str(self.addr)


class CIDR:
    __slots__ = ("addr", "net")

    def __init__(self, addr: _IPAddr, net: _IPNet) -> None:
        self.addr = addr
        self.net = net

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, CIDR) and (self.addr, self.net) == (other.addr, other.net)

    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:
        return f"{self.addr}/{self.net.prefixlen}"


def _parse_ip(s: str) -> IP | None:
    if "%" in s:  # zones are rejected by Kubernetes' ip library
        return None
    try:
        addr = ipaddress.ip_address(s)
    except ValueError:
        return None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return None
    return IP(addr)


def _parse_cidr(s: str) -> CIDR | None:
    if "/" not in s:
        return None
    ip_text, _, _ = s.partition("/")
    ip = _parse_ip(ip_text)
    if ip is None:
        return None
    try:
        net = ipaddress.ip_network(s, strict=False)
    except ValueError:
        return None
    return CIDR(ip.addr, net)


def _ip(v: Any) -> Any:
    if isinstance(v, CIDR):
        return IP(v.addr)
    check_str(v)
    ip = _parse_ip(v)
    return ip if ip is not None else error_value(f"IP Address {v!r} parse error during conversion")


def _is_ip(s: Any) -> Any:
    check_str(s)
    return celtypes.BoolType(_parse_ip(s) is not None)


def _cidr(s: Any) -> Any:
    check_str(s)
    c = _parse_cidr(s)
    return (
        c if c is not None else error_value(f"network address parse error during conversion: {s}")
    )


def _is_cidr(s: Any) -> Any:
    check_str(s)
    return celtypes.BoolType(_parse_cidr(s) is not None)


def _ip_prop(name: str) -> Callable[[Any], Any]:
    def get(ip: Any) -> Any:
        if not isinstance(ip, IP):
            raise TypeError("no such overload")
        a = ip.addr
        if name == "family":
            return celtypes.IntType(a.version)
        if name == "isUnspecified":
            return celtypes.BoolType(a.is_unspecified)
        if name == "isLoopback":
            return celtypes.BoolType(a.is_loopback)
        if name == "isLinkLocalMulticast":
            net = "224.0.0.0/24" if a.version == 4 else "ff02::/16"
            return celtypes.BoolType(a in ipaddress.ip_network(net))
        if name == "isLinkLocalUnicast":
            return celtypes.BoolType(a.is_link_local and not a.is_multicast)
        # isGlobalUnicast, with Go's meaning: not any of the special ranges above
        return celtypes.BoolType(
            not (a.is_unspecified or a.is_loopback or a.is_multicast or a.is_link_local)
            and a != ipaddress.IPv4Address("255.255.255.255")
        )

    return get


def _contains_ip(c: Any, other: Any) -> Any:
    if not isinstance(c, CIDR):
        raise TypeError("no such overload")
    ip = _parse_ip(other) if isinstance(other, str) else other
    if not isinstance(ip, IP):
        return error_value(f"IP Address {other!r} parse error")
    return celtypes.BoolType(ip.addr.version == c.net.version and ip.addr in c.net)


def _contains_cidr(c: Any, other: Any) -> Any:
    if not isinstance(c, CIDR):
        raise TypeError("no such overload")
    sub = _parse_cidr(other) if isinstance(other, str) else other
    if not isinstance(sub, CIDR):
        return error_value(f"network address {other!r} parse error")
    if sub.net.version != c.net.version:
        return celtypes.BoolType(False)
    return celtypes.BoolType(sub.net.subnet_of(c.net))  # type: ignore[arg-type]


def _prefix_length(c: Any) -> Any:
    if not isinstance(c, CIDR):
        raise TypeError("no such overload")
    return celtypes.IntType(c.net.prefixlen)


def _masked(c: Any) -> Any:
    if not isinstance(c, CIDR):
        raise TypeError("no such overload")
    return CIDR(c.net.network_address, c.net)


FUNCTIONS: dict[str, Any] = {
    "url": _url,
    "isURL": _is_url,
    "getScheme": _url_part("scheme"),
    "getHost": _url_part("host"),
    "getHostname": _url_part("hostname"),
    "getPort": _url_part("port"),
    "getEscapedPath": _url_part("path"),
    "getQuery": _url_part("query"),
    "ip": _ip,
    "isIP": _is_ip,
    "cidr": _cidr,
    "isCIDR": _is_cidr,
    "family": _ip_prop("family"),
    "isUnspecified": _ip_prop("isUnspecified"),
    "isLoopback": _ip_prop("isLoopback"),
    "isLinkLocalMulticast": _ip_prop("isLinkLocalMulticast"),
    "isLinkLocalUnicast": _ip_prop("isLinkLocalUnicast"),
    "isGlobalUnicast": _ip_prop("isGlobalUnicast"),
    "containsIP": _contains_ip,
    "containsCIDR": _contains_cidr,
    "prefixLength": _prefix_length,
    "masked": _masked,
}
