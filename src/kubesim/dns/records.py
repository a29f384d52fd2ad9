"""The DNS records of Services, EndpointSlices and Pods, as pure functions of the objects.

What the Kubernetes DNS-Based Service Discovery specification (and CoreDNS's kubernetes
plugin, which implements it) serves for a cluster domain `<zone>`:

- a Service with a cluster IP: `<svc>.<ns>.svc.<zone>` A -> the cluster IP, an SRV record
  `_<port>._<proto>.<svc>.<ns>.svc.<zone>` for each named port (target the Service's name,
  the Service port), and the PTR of the cluster IP;
- a headless Service (`clusterIP: None`): `<svc>.<ns>.svc.<zone>` A -> each ready endpoint
  address (every one with `publishNotReadyAddresses`), `<host>.<svc>.<ns>.svc.<zone>` A for
  each such endpoint, `<host>` its `hostname` (a pod whose `hostname`/`subdomain` name the
  Service) or else its address with dashes (CoreDNS's name for an endpoint without one), an
  SRV record per named port and endpoint (target `<host>.<svc>...`, the endpoint's port),
  and the PTR of each address to `<host>.<svc>...`;
- an ExternalName Service: a CNAME to its `externalName`;
- a pod with an IP: `<a-b-c-d>.<ns>.pod.<zone>` A -> that IP (CoreDNS's `pods verified`:
  only for a pod that exists with that IP in that namespace);
- `dns-version.<zone>` TXT, the specification's version.

A record is `(owner name, type, rdata text)`: names absolute, lower case, with the trailing
dot; the type dnspython's `RdataType` number. `EXISTS` marks a name that exists without
records of its own (a Service with no ready endpoints answers NODATA, not NXDOMAIN).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from dns.rdatatype import RdataType

__all__ = [
    "API_SERVICE",
    "CNAME",
    "EXISTS",
    "NS",
    "PTR",
    "SPEC_VERSION",
    "SRV",
    "TXT",
    "A",
    "ApiEndpoint",
    "Record",
    "endpoint_host",
    "fqdn",
    "is_headless",
    "pod_records",
    "reverse_name",
    "service_name",
    "service_records",
    "slice_records",
    "zone_records",
]

Record = tuple[str, int, str]
EXISTS: Final = 0  # no DNS type has number 0: a name that exists, without records
SPEC_VERSION: Final = "1.1.0"  # the schema version the specification says to publish
A: Final = int(RdataType.A)
SRV: Final = int(RdataType.SRV)
PTR: Final = int(RdataType.PTR)
CNAME: Final = int(RdataType.CNAME)
TXT: Final = int(RdataType.TXT)
NS: Final = int(RdataType.NS)
# The API server's Service, answered with where the API server really listens (below).
API_SERVICE: Final = ("default", "kubernetes")


@dataclass(frozen=True)
class ApiEndpoint:
    """Where pods reach the API server: `kubernetes.default.svc` resolves here instead of
    the Service's cluster IP, which nothing routes in the simulator (no kube-proxy)."""

    host: str
    port: int


def fqdn(*labels: str) -> str:
    """An absolute lower-case name from labels (each may hold dots: a zone)."""
    return ".".join(label.strip(".").lower() for label in labels if label.strip(".")) + "."


def service_name(namespace: str, name: str, zone: str) -> str:
    return fqdn(name, namespace, "svc", zone)


def reverse_name(ip: str) -> str | None:
    """The PTR owner of an address (`4.3.2.1.in-addr.arpa.`), None if it is not one."""
    try:
        return ipaddress.ip_address(ip).reverse_pointer.lower() + "."
    except ValueError:
        return None


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _named_ports(ports: Any) -> Iterator[tuple[str, str, int]]:
    """(name, protocol, port) of the ports that have a name (SRV needs one)."""
    for p in ports or ():
        name, number = p.get("name"), p.get("port")
        if name and isinstance(number, int):
            yield str(name).lower(), str(p.get("protocol") or "TCP").lower(), number


def _srv(svc: str, port: tuple[str, str, int], target: str) -> Record:
    name, proto, number = port
    return (f"_{name}._{proto}.{svc}", SRV, f"0 100 {number} {target}")


def zone_records(zone: str) -> list[Record]:
    """What the zone holds whatever the cluster: the specification's version record."""
    return [(fqdn("dns-version", zone), TXT, f'"{SPEC_VERSION}"')]


def service_records(
    service: Mapping[str, Any], zone: str, api: ApiEndpoint | None = None
) -> list[Record]:
    """The records a Service makes by itself (a headless one's come from its slices)."""
    meta, spec = _meta(service), service.get("spec") or {}
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    if not namespace or not name:
        return []
    svc = service_name(namespace, name, zone)
    records: list[Record] = [(svc, EXISTS, "")]
    if spec.get("type") == "ExternalName":
        if spec.get("externalName"):
            records.append((svc, CNAME, fqdn(str(spec["externalName"]))))
        return records
    ip = str(spec.get("clusterIP") or "")
    if not ip or ip == "None":
        return records
    ports: list[tuple[str, str, int]] = list(_named_ports(spec.get("ports")))
    if api is not None and (namespace, name) == API_SERVICE:
        ip = api.host
        ports = [(n, proto, api.port) for n, proto, _ in ports]
    records.append((svc, A, ip))
    records += [_srv(svc, port, svc) for port in ports]
    ptr = reverse_name(ip)
    if ptr is not None:
        records.append((ptr, PTR, svc))
    return records


def is_headless(service: Mapping[str, Any]) -> bool:
    spec = service.get("spec") or {}
    return spec.get("clusterIP") == "None" and spec.get("type", "ClusterIP") == "ClusterIP"


def endpoint_host(endpoint: Mapping[str, Any], address: str) -> str:
    """The endpoint's label under its Service: its hostname, else its address with dashes."""
    hostname = str(endpoint.get("hostname") or "")
    return hostname.lower() if hostname else address.replace(".", "-").replace(":", "-")


def slice_records(
    endpoint_slice: Mapping[str, Any], service: Mapping[str, Any] | None, zone: str
) -> list[Record]:
    """The records of one EndpointSlice of a headless Service (none for other Services:
    their name resolves to the cluster IP)."""
    if service is None or not is_headless(service):
        return []
    if endpoint_slice.get("addressType", "IPv4") != "IPv4":
        return []
    meta = _meta(service)
    svc = service_name(str(meta.get("namespace") or ""), str(meta.get("name") or ""), zone)
    publish = bool((service.get("spec") or {}).get("publishNotReadyAddresses"))
    ports = list(_named_ports(endpoint_slice.get("ports")))
    records: list[Record] = []
    for endpoint in endpoint_slice.get("endpoints") or ():
        # EndpointSlice API: an unset `ready` means ready.
        if not publish and (endpoint.get("conditions") or {}).get("ready") is False:
            continue
        for address in endpoint.get("addresses") or ():
            address = str(address)
            host = f"{endpoint_host(endpoint, address)}.{svc}"
            records += [(svc, A, address), (host, A, address)]
            records += [_srv(svc, port, host) for port in ports]
            ptr = reverse_name(address)
            if ptr is not None:
                records.append((ptr, PTR, host))
    return records


def pod_records(pod: Mapping[str, Any], zone: str) -> list[Record]:
    """`<a-b-c-d>.<ns>.pod.<zone>` of a pod with an IPv4 address."""
    namespace = str(_meta(pod).get("namespace") or "")
    status = pod.get("status") or {}
    ips = [str(i.get("ip")) for i in status.get("podIPs") or () if i.get("ip")]
    if not ips and status.get("podIP"):
        ips = [str(status["podIP"])]
    records: list[Record] = []
    for ip in ips:
        try:
            if ipaddress.ip_address(ip).version != 4:
                continue
        except ValueError:
            continue
        records.append((fqdn(ip.replace(".", "-"), namespace, "pod", zone), A, ip))
    return records if namespace else []
