"""Cluster DNS: the Kubernetes DNS-Based Service Discovery records of the simulated cluster.

- `records.py`: pure functions, a Service / EndpointSlice / Pod -> its DNS records;
- `table.py`: the record table, indexed by name and updated per object;
- `answer.py`: a DNS query -> its response from the table (pure);
- `feed.py`: keeps the table in step with the store's objects;
- `server.py`: UDP and TCP sockets.

`ClusterDns` puts them together: one table, served on any number of addresses (the pod
network's gateway with `--run-image`, a loopback address with `--dns-address`).
"""

from __future__ import annotations

from kubesim.apiserver.core.store import Store
from kubesim.dns.feed import ClusterRecords
from kubesim.dns.records import ApiEndpoint
from kubesim.dns.server import DnsServer
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


def parse_dns_address(text: str) -> tuple[str, int]:
    """`HOST[:PORT]` (port 53 by default) of `--dns-address`; ValueError naming the rule."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = text, "53"
    if not host:
        raise ValueError(f"--dns-address {text!r}: must be HOST or HOST:PORT")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--dns-address {text!r}: port must be a number from 0 to 65535")
    return host, int(port)


class ClusterDns:
    """The cluster's DNS records, served on the addresses passed to `serve`."""

    def __init__(self, store: Store, cluster_domain: str, nameserver_ip: str) -> None:
        self.records = ClusterRecords(store, cluster_domain, nameserver_ip)
        self.servers: list[DnsServer] = []

    def start(self) -> None:
        self.records.attach()

    async def serve(self, host: str, port: int) -> DnsServer:
        server = DnsServer(self.records, host, port)
        try:
            await server.start()
        except OSError as exc:
            raise OSError(f"cluster DNS cannot listen on {host}:{port}: {exc}") from exc
        self.servers.append(server)
        return server

    async def stop(self) -> None:
        for server in self.servers:
            await server.stop()
        self.servers.clear()
        self.records.detach()
