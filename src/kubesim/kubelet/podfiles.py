"""The files a kubelet gives every container of a pod: `/etc/resolv.conf`, `/etc/hosts`, and
`/etc/hostname`, built from the pod as the kubelet and containerd build them.

Pure functions: `processes.py` writes the results into the pod's directory and binds them
into each container's root.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kubesim.apiserver.registry.core.poddns import (
    MAX_NAMESERVERS,
    MAX_SEARCH_CHARS,
    MAX_SEARCH_PATHS,
)

__all__ = [
    "MAX_NAMESERVERS",
    "MAX_SEARCH_CHARS",
    "MAX_SEARCH_PATHS",
    "DNSConfig",
    "hostname_and_domain",
    "hosts_file",
    "parse_resolv_conf",
    "pod_dns",
    "resolv_conf",
]

_MAX_SEARCH_NAME: Final = 253  # a search path longer than a DNS subdomain aborts some resolvers
_MAX_HOSTNAME: Final = 63
_DEFAULT_OPTIONS: Final = ("ndots:5",)

_HOSTS_HEADER: Final = (
    "# Kubernetes-managed hosts file.\n"
    "127.0.0.1\tlocalhost\n"
    "::1\tlocalhost ip6-localhost ip6-loopback\n"
    "fe00::0\tip6-localnet\n"
    "fe00::0\tip6-mcastprefix\n"
    "fe00::1\tip6-allnodes\n"
    "fe00::2\tip6-allrouters\n"
)


@dataclass
class DNSConfig:
    """What the kubelet hands the runtime for the sandbox's resolv.conf."""

    servers: list[str] = field(default_factory=list)
    searches: list[str] = field(default_factory=list)
    options: list[str] = field(default_factory=list)


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def parse_resolv_conf(text: str) -> DNSConfig:
    """The node's resolv.conf as the kubelet reads it: nameservers accumulate, the last
    `search` and the last `options` line win, a trailing dot of a search path is dropped."""
    out = DNSConfig()
    for line in text.splitlines():
        fields = line.strip().split()
        if not fields or fields[0].startswith("#"):
            continue
        if fields[0] == "nameserver" and len(fields) >= 2:
            out.servers.append(fields[1])
        elif fields[0] == "search":
            out.searches = [s.removesuffix(".") for s in fields[1:]]
        elif fields[0] == "options":
            out.options = fields[1:]
    return out


def _merge_options(existing: list[str], extra: Iterable[Mapping[str, Any]]) -> list[str]:
    """`dnsConfig.options` over the base ones, by name (the pod's value wins)."""
    merged: dict[str, str] = {}
    for op in existing:
        name, _, value = op.partition(":")
        merged[name] = value
    for option in extra:
        given = option.get("value")
        merged[str(option.get("name") or "")] = "" if given is None else str(given)
    return [f"{k}:{v}" if v else k for k, v in merged.items()]


def _fit_searches(searches: list[str]) -> list[str]:
    """The kubelet's cut of a search line that exceeds the limits (it warns and goes on)."""
    kept = [s for s in searches[:MAX_SEARCH_PATHS] if len(s) <= _MAX_SEARCH_NAME]
    while kept and len(" ".join(kept)) > MAX_SEARCH_CHARS:
        kept.pop()
    return kept


def pod_dns(
    pod: Mapping[str, Any], cluster_domain: str, nameserver: str, host_resolv: str
) -> DNSConfig:
    """The pod's DNS settings per `dnsPolicy` and `dnsConfig`, as the kubelet forms them."""
    spec = pod.get("spec") or {}
    policy = spec.get("dnsPolicy") or "ClusterFirst"
    host_network = bool(spec.get("hostNetwork"))
    if policy == "None":
        config = DNSConfig()
    elif policy == "Default" or (policy == "ClusterFirst" and host_network):
        config = parse_resolv_conf(host_resolv)
    else:  # ClusterFirst, ClusterFirstWithHostNet
        host = parse_resolv_conf(host_resolv)
        namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
        cluster = [f"{namespace}.svc.{cluster_domain}", f"svc.{cluster_domain}", cluster_domain]
        config = DNSConfig([nameserver], _unique([*cluster, *host.searches]), [*_DEFAULT_OPTIONS])
    extra = spec.get("dnsConfig")
    if extra:
        config.servers = _unique([*config.servers, *(extra.get("nameservers") or [])])
        config.searches = _unique([*config.searches, *(extra.get("searches") or [])])
        config.options = _merge_options(config.options, extra.get("options") or [])
    config.servers = config.servers[:MAX_NAMESERVERS]
    config.searches = _fit_searches(config.searches)
    return config


def resolv_conf(config: DNSConfig) -> str:
    """The sandbox's resolv.conf as containerd writes it: search, nameservers, options."""
    lines = []
    if config.searches:
        lines.append("search " + " ".join(config.searches))
    lines.extend(f"nameserver {s}" for s in config.servers)
    if config.options:
        lines.append("options " + " ".join(config.options))
    return "".join(f"{line}\n" for line in lines)


def hostname_and_domain(pod: Mapping[str, Any], cluster_domain: str) -> tuple[str, str]:
    """The pod's hostname (`spec.hostname`, else its name cut to 63 characters without a
    trailing '-' or '.') and, with `spec.subdomain`, its domain `<sub>.<ns>.svc.<domain>`."""
    spec = pod.get("spec") or {}
    meta = pod.get("metadata") or {}
    hostname = str(spec.get("hostname") or "")
    if not hostname:
        hostname = str(meta.get("name") or "")
        if len(hostname) > _MAX_HOSTNAME:
            hostname = hostname[:_MAX_HOSTNAME].rstrip("-.")
    domain = ""
    if spec.get("subdomain"):
        namespace = str(meta.get("namespace") or "default")
        domain = f"{spec['subdomain']}.{namespace}.svc.{cluster_domain}"
    return hostname, domain


def hosts_file(pod: Mapping[str, Any], pod_ips: list[str], cluster_domain: str) -> str:
    """The kubelet's managed /etc/hosts: localhost lines, each pod IP with the FQDN first
    (so `hostname -f` prints it) then the short name, and the pod's `hostAliases`."""
    hostname, domain = hostname_and_domain(pod, cluster_domain)
    lines = [_HOSTS_HEADER]
    for ip in pod_ips:
        names = f"{hostname}.{domain}\t{hostname}" if domain else hostname
        lines.append(f"{ip}\t{names}\n")
    aliases = (pod.get("spec") or {}).get("hostAliases") or []
    if aliases:
        lines.append("\n# Entries added by HostAliases.\n")
        for alias in aliases:
            names = "\t".join(str(h) for h in alias.get("hostnames") or [])
            lines.append(f"{alias.get('ip', '')}\t{names}\n")
    return "".join(lines)
