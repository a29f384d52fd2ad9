"""Cluster DNS: the Kubernetes DNS-Based Service Discovery records of the simulated cluster.

- `records.py`: pure functions, a Service / EndpointSlice / Pod -> its DNS records;
- `table.py`: the record table, indexed by name and updated per object;
- `answer.py`: a DNS query -> its response from the table (pure);
- `feed.py`: keeps the table in step with the store's objects;
- `server.py`: UDP and TCP sockets;
- `thread.py`: the loop the sockets are served from, in a thread of its own.

`ClusterDns` puts them together: one table, served on any number of addresses (the pod
network's gateway with `--run-image`, a loopback address with `--dns-address`), from a
thread of its own so a busy API server does not hold DNS answers up.
"""

from __future__ import annotations

import ipaddress

from kubesim.apiserver.core.store import Store
from kubesim.dns.feed import ClusterRecords
from kubesim.dns.records import ApiEndpoint
from kubesim.dns.server import DnsServer
from kubesim.dns.thread import LoopThread
from kubeutil.names import is_dns1123_subdomain

__all__ = [
    "DEFAULT_CLUSTER_DOMAIN",
    "ApiEndpoint",
    "ClusterDns",
    "check_cluster_domain",
    "parse_dns_address",
]

DEFAULT_CLUSTER_DOMAIN = "cluster.local"


def check_cluster_domain(domain: str) -> str:
    """`--cluster-domain` as given, or ValueError saying which rule it breaks: a DNS
    (RFC 1123) subdomain whose labels are at most 63 characters, as DNS names must be."""
    errors = is_dns1123_subdomain(domain)
    if not errors:
        errors = [
            f"label {label!r} must be no more than 63 characters"
            for label in domain.split(".")
            if len(label) > 63
        ]
    if errors:
        raise ValueError(f'--cluster-domain: Invalid value: "{domain}": {"; ".join(errors)}')
    return domain


def _split_host_port(text: str) -> tuple[str, str]:
    """`HOST`, `HOST:PORT`, `[IPV6]`, `[IPV6]:PORT` or a bare IPv6 address."""
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise ValueError(f"--dns-address {text!r}: must be HOST, HOST:PORT or [IPV6]:PORT")
        return host, rest[1:] if rest else "53"
    if text.count(":") > 1:
        return text, "53"
    host, sep, port = text.rpartition(":")
    return (host, port) if sep else (text, "53")


def parse_dns_address(text: str, allow_wildcard: bool = False) -> tuple[str, int]:
    """`HOST[:PORT]` (port 53 by default) of `--dns-address`; ValueError naming the rule.

    A wildcard address (`0.0.0.0`, `::`) would answer the cluster's names to every network
    the host is on, so it needs `--dns-allow-wildcard` (`allow_wildcard`)."""
    host, port = _split_host_port(text)
    if not host:
        raise ValueError(f"--dns-address {text!r}: must be HOST or HOST:PORT")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--dns-address {text!r}: port must be a number from 0 to 65535")
    try:
        wildcard = ipaddress.ip_address(host).is_unspecified
    except ValueError:
        wildcard = False
    if wildcard and not allow_wildcard:
        raise ValueError(
            f"--dns-address {text!r}: a wildcard address serves cluster DNS on every network "
            "of the host; give a specific address, or add --dns-allow-wildcard to mean it"
        )
    return host, int(port)


class ClusterDns:
    """The cluster's DNS records, served on the addresses passed to `serve`."""

    def __init__(self, store: Store, cluster_domain: str, nameserver_ip: str) -> None:
        self.records = ClusterRecords(store, cluster_domain, nameserver_ip)
        self.servers: list[DnsServer] = []
        self._thread: LoopThread | None = None

    def start(self) -> None:
        self.records.attach()
        self._thread = LoopThread("cluster-dns")

    async def serve(self, host: str, port: int) -> DnsServer:
        assert self._thread is not None, "start() first"
        server = DnsServer(self.records, host, port)
        try:
            await self._thread.run(server.start())
        except OSError as exc:
            raise OSError(f"cluster DNS cannot listen on {host}:{port}: {exc}") from exc
        self.servers.append(server)
        return server

    async def stop(self) -> None:
        if self._thread is not None:
            for server in self.servers:
                await self._thread.run(server.stop())
            self._thread.stop()
            self._thread = None
        self.servers.clear()
        self.records.detach()
