"""The kubelet's pod files (`podfiles.py`) and capability sets (`security.py`): the cases
the real-process tests do not reach (limits, fallbacks, merging, errors)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.kubelet.envvars import ConfigError
from kubesim.kubelet.podfiles import hostname_and_domain, pod_dns, resolv_conf
from kubesim.kubelet.security import DEFAULT_CAPABILITIES, capabilities, no_new_privs

HOST = "# the node's\nnameserver 192.0.2.53\nsearch corp.example. lab.example\noptions rotate\n"


def pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "team"}, "spec": spec}


def test_cluster_first_searches_the_cluster_then_the_node() -> None:
    dns = pod_dns(pod(), "cluster.local", "10.244.0.1", HOST)
    assert resolv_conf(dns) == (
        "search team.svc.cluster.local svc.cluster.local cluster.local corp.example lab.example\n"
        "nameserver 10.244.0.1\noptions ndots:5\n"
    )


def test_cluster_first_on_the_host_network_is_the_node_resolution() -> None:
    dns = pod_dns(pod(hostNetwork=True), "cluster.local", "10.244.0.1", HOST)
    assert (dns.servers, dns.searches, dns.options) == (
        ["192.0.2.53"],
        ["corp.example", "lab.example"],
        ["rotate"],
    )
    with_host_net = pod(hostNetwork=True, dnsPolicy="ClusterFirstWithHostNet")
    assert pod_dns(with_host_net, "cluster.local", "10.244.0.1", HOST).servers == ["10.244.0.1"]


def test_dns_config_merges_and_is_cut_to_the_limits() -> None:
    extra = {
        "nameservers": ["10.0.0.1", "10.244.0.1", "10.0.0.2", "10.0.0.3"],
        "searches": [f"s{i}.example" for i in range(40)],
        "options": [{"name": "ndots", "value": "2"}, {"name": "rotate"}],
    }
    dns = pod_dns(pod(dnsConfig=extra), "cluster.local", "10.244.0.1", HOST)
    assert dns.servers == ["10.244.0.1", "10.0.0.1", "10.0.0.2"]  # deduplicated, 3 kept
    assert len(dns.searches) == 32 and dns.searches[0] == "team.svc.cluster.local"
    assert dns.options == ["ndots:2", "rotate"]


def test_a_long_search_line_is_cut_to_2048_characters() -> None:
    long = [f"{c * 60}.{c * 60}.example" for c in "abcdefghijklmnopqrstuvwxyz"]
    dns = pod_dns(pod(dnsPolicy="None", dnsConfig={"searches": long}), "c.l", "1.1.1.1", "")
    assert len(" ".join(dns.searches)) <= 2048
    assert dns.searches == long[: len(dns.searches)] and len(dns.searches) < len(long)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param({}, ("p", ""), id="pod-name"),
        pytest.param({"hostname": "h", "subdomain": "s"}, ("h", "s.team.svc.c.l"), id="subdomain"),
    ],
)
def test_hostname_and_domain(spec: dict[str, Any], expected: tuple[str, str]) -> None:
    assert hostname_and_domain(pod(**spec), "c.l") == expected


def test_capabilities_and_their_errors() -> None:
    plain: dict[str, Any] = {"securityContext": {}}
    assert set(capabilities(plain)) == DEFAULT_CAPABILITIES
    every = capabilities({"securityContext": {"capabilities": {"add": ["ALL"], "drop": ["KILL"]}}})
    assert 5 not in every and 21 in every  # KILL dropped, SYS_ADMIN kept
    bad = {"securityContext": {"capabilities": {"add": ["NET_FLY"]}}}
    with pytest.raises(
        ConfigError, match=r"securityContext\.capabilities\.add: unknown capability"
    ):
        capabilities(bad)
    assert no_new_privs({"securityContext": {"allowPrivilegeEscalation": False}})
    assert not no_new_privs(
        {"securityContext": {"allowPrivilegeEscalation": False, "privileged": True}}
    )
