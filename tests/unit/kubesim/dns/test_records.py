"""Cluster DNS records from objects (`kubesim.dns.records`), the table they are kept in
(`kubesim.dns.table`) and the answers given from it (`kubesim.dns.answer`): pure, no sockets."""

from __future__ import annotations

from typing import Any

import dns.message
import dns.rcode
import dns.rdatatype
import pytest

from kubesim.dns.answer import TTL, respond
from kubesim.dns.records import (
    CNAME,
    PTR,
    SRV,
    A,
    ApiEndpoint,
    pod_records,
    service_records,
    slice_records,
)
from kubesim.dns.table import Outcome, RecordTable

ZONE = "cluster.local"
Z = "cluster.local."


def service(name: str, cluster_ip: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"clusterIP": cluster_ip, "type": "ClusterIP", **spec},
    }


def endpoint(ip: str, ready: bool | None = True, hostname: str = "") -> dict[str, Any]:
    ep: dict[str, Any] = {"addresses": [ip], "conditions": {}}
    if ready is not None:
        ep["conditions"]["ready"] = ready
    if hostname:
        ep["hostname"] = hostname
    return ep


def endpoint_slice(*endpoints: dict[str, Any], ports: Any = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "web-abc", "namespace": "ns"},
        "addressType": "IPv4",
        "endpoints": list(endpoints),
        "ports": ports
        if ports is not None
        else [{"name": "http", "port": 8080, "protocol": "TCP"}],
    }


def test_cluster_ip_service_has_its_ip_srv_per_named_port_and_ptr() -> None:
    svc = service(
        "web",
        "10.96.0.12",
        ports=[
            {"name": "http", "port": 80, "protocol": "TCP"},
            {"port": 9000, "protocol": "TCP"},  # unnamed: no SRV
        ],
    )
    assert sorted(service_records(svc, ZONE)) == sorted(
        [
            ("web.ns.svc.cluster.local.", 0, ""),
            ("web.ns.svc.cluster.local.", A, "10.96.0.12"),
            ("_http._tcp.web.ns.svc.cluster.local.", SRV, "0 100 80 web.ns.svc.cluster.local."),
            ("12.0.96.10.in-addr.arpa.", PTR, "web.ns.svc.cluster.local."),
        ]
    )


def test_cluster_ip_service_endpoints_make_no_records() -> None:
    svc = service("web", "10.96.0.12")
    assert slice_records(endpoint_slice(endpoint("10.244.0.5", hostname="h")), svc, ZONE) == []


def test_headless_service_serves_ready_endpoints_with_hostnames_srv_and_ptr() -> None:
    svc = service("web", "None")
    sl = endpoint_slice(
        endpoint("10.244.0.5", hostname="w-0"),
        endpoint("10.244.0.6"),  # no hostname: named by its address
        endpoint("10.244.0.7", ready=False),
        endpoint("10.244.0.8", ready=None),  # unset means ready
    )
    got = set(slice_records(sl, svc, ZONE))
    svc_name = "web.ns.svc.cluster.local."
    assert {r[2] for r in got if r[0] == svc_name and r[1] == A} == {
        "10.244.0.5",
        "10.244.0.6",
        "10.244.0.8",
    }
    assert ("w-0." + svc_name, A, "10.244.0.5") in got
    assert ("10-244-0-6." + svc_name, A, "10.244.0.6") in got
    assert ("_http._tcp." + svc_name, SRV, f"0 100 8080 w-0.{svc_name}") in got
    assert ("5.0.244.10.in-addr.arpa.", PTR, "w-0." + svc_name) in got
    assert not any("10.244.0.7" in r[2] or "7.0.244.10" in r[0] for r in got)


def test_publish_not_ready_addresses_serves_every_endpoint() -> None:
    svc = service("web", "None", publishNotReadyAddresses=True)
    sl = endpoint_slice(endpoint("10.244.0.7", ready=False, hostname="w-1"))
    assert ("w-1.web.ns.svc.cluster.local.", A, "10.244.0.7") in slice_records(sl, svc, ZONE)


def test_external_name_is_a_cname() -> None:
    svc = {
        "metadata": {"name": "db", "namespace": "ns"},
        "spec": {"type": "ExternalName", "externalName": "db.example.com"},
    }
    assert ("db.ns.svc.cluster.local.", CNAME, "db.example.com.") in service_records(svc, ZONE)


def test_api_service_points_at_the_api_server() -> None:
    svc = {
        "metadata": {"name": "kubernetes", "namespace": "default"},
        "spec": {"clusterIP": "10.96.0.1", "ports": [{"name": "https", "port": 443}]},
    }
    got = service_records(svc, ZONE, ApiEndpoint("10.244.40.1", 6443))
    assert ("kubernetes.default.svc.cluster.local.", A, "10.244.40.1") in got
    srv = "0 100 6443 kubernetes.default.svc.cluster.local."
    assert ("_https._tcp.kubernetes.default.svc.cluster.local.", SRV, srv) in got


def test_pod_record_is_its_dashed_address_in_its_namespace() -> None:
    pod = {"metadata": {"name": "p", "namespace": "ns"}, "status": {"podIP": "10.244.0.9"}}
    assert pod_records(pod, ZONE) == [("10-244-0-9.ns.pod.cluster.local.", A, "10.244.0.9")]
    assert pod_records({"metadata": {"name": "p", "namespace": "ns"}}, ZONE) == []


def test_custom_cluster_domain() -> None:
    names = {r[0] for r in service_records(service("web", "10.96.0.3"), "corp.example")}
    assert "web.ns.svc.corp.example." in names


# ------------------------------------------------------------------ the table


def test_table_tells_nxdomain_from_nodata_and_keeps_counts() -> None:
    table = RecordTable((Z, "in-addr.arpa."))
    table.replace("s1", [("web.ns.svc.cluster.local.", A, "10.0.0.1")])
    table.replace("s2", [("web.ns.svc.cluster.local.", A, "10.0.0.1")])
    assert table.lookup("web.ns.svc.cluster.local.", A).outcome is Outcome.ANSWER
    aaaa = int(dns.rdatatype.AAAA)
    assert table.lookup("web.ns.svc.cluster.local.", aaaa).outcome is Outcome.NODATA
    assert table.lookup("ns.svc.cluster.local.", A).outcome is Outcome.NODATA  # non-terminal
    assert table.lookup("other.ns.svc.cluster.local.", A).outcome is Outcome.NXDOMAIN
    assert table.lookup("example.com.", A).outcome is Outcome.NOT_AUTHORITATIVE
    table.replace("s1", [])
    assert table.lookup("web.ns.svc.cluster.local.", A).records == ((A, "10.0.0.1"),)
    table.replace("s2", [])
    assert table.lookup("web.ns.svc.cluster.local.", A).outcome is Outcome.NXDOMAIN
    assert table.lookup("ns.svc.cluster.local.", A).outcome is Outcome.NXDOMAIN
    assert len(table) == 0


def test_table_replace_applies_only_the_difference() -> None:
    table = RecordTable((Z,))
    table.replace("s", [("a.cluster.local.", A, "10.0.0.1"), ("b.cluster.local.", A, "10.0.0.2")])
    serial = table.serial
    assert not table.replace(
        "s", [("b.cluster.local.", A, "10.0.0.2"), ("a.cluster.local.", A, "10.0.0.1")]
    )
    assert table.serial == serial
    table.replace("s", [("b.cluster.local.", A, "10.0.0.2")])
    assert table.serial == serial + 1
    assert table.lookup("a.cluster.local.", A).outcome is Outcome.NXDOMAIN
    assert len(table) == 2 - 1


# ------------------------------------------------------------------ answers


def _ask(table: RecordTable, name: str, rdtype: str) -> dns.message.Message:
    return respond(table, dns.message.make_query(name, rdtype), "ns.dns.cluster.local.")


@pytest.mark.parametrize(
    ("name", "rdtype", "rcode", "answers", "soa"),
    [
        pytest.param("web.ns.svc.cluster.local.", "A", dns.rcode.NOERROR, 1, False, id="answer"),
        pytest.param("WEB.ns.svc.Cluster.Local.", "A", dns.rcode.NOERROR, 1, False, id="any-case"),
        pytest.param("web.ns.svc.cluster.local.", "AAAA", dns.rcode.NOERROR, 0, True, id="nodata"),
        pytest.param("no.ns.svc.cluster.local.", "A", dns.rcode.NXDOMAIN, 0, True, id="nxdomain"),
        pytest.param("example.com.", "A", dns.rcode.REFUSED, 0, False, id="outside"),
        pytest.param("cluster.local.", "SOA", dns.rcode.NOERROR, 1, False, id="apex-soa"),
    ],
)
def test_answers(name: str, rdtype: str, rcode: int, answers: int, soa: bool) -> None:
    table = RecordTable((Z,))
    table.replace("s", [("web.ns.svc.cluster.local.", A, "10.0.0.1")])
    response = _ask(table, name, rdtype)
    assert response.rcode() == rcode
    assert len(response.answer) == answers
    assert all(rrset.ttl == TTL for rrset in response.answer)
    assert [rrset.rdtype for rrset in response.authority] == ([dns.rdatatype.SOA] if soa else [])
    if soa:
        assert response.authority[0].ttl == TTL
        assert response.authority[0][0].minimum == TTL


def test_cname_answers_other_types() -> None:
    table = RecordTable((Z,))
    table.replace("s", [("db.ns.svc.cluster.local.", CNAME, "db.example.com.")])
    response = _ask(table, "db.ns.svc.cluster.local.", "A")
    assert response.rcode() == dns.rcode.NOERROR
    assert response.answer[0].rdtype == dns.rdatatype.CNAME


def test_srv_answer_carries_its_targets_addresses() -> None:
    table = RecordTable((Z,))
    svc = service("web", "None")
    sl = endpoint_slice(endpoint("10.244.0.5", hostname="w-0"), endpoint("10.244.0.6"))
    table.replace("slice", slice_records(sl, svc, ZONE))
    response = _ask(table, "_http._tcp.web.ns.svc.cluster.local.", "SRV")
    assert len(response.answer[0]) == 2
    extra = {rrset.name.to_text(): [r.to_text() for r in rrset] for rrset in response.additional}
    assert extra == {
        "w-0.web.ns.svc.cluster.local.": ["10.244.0.5"],
        "10-244-0-6.web.ns.svc.cluster.local.": ["10.244.0.6"],
    }
