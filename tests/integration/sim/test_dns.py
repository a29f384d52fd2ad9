"""Cluster DNS of `jobset sim`, asked with real DNS queries over UDP and TCP.

One `jobset sim` process serves DNS on a loopback port (`--dns-address`); the tests create
Services and pods with the real kubectl and check what the Kubernetes DNS specification
says a cluster answers: headless Services with ready and not-ready endpoints,
`publishNotReadyAddresses`, pods' hostname/subdomain names, SRV, PTR, NXDOMAIN versus
NODATA, `kubernetes.default`, and records that follow pods as they become ready and go.
Then, each with a process of its own: `--cluster-domain`, a `--run-image` pod that finds
another by `<hostname>.<subdomain>` at the gateway nameserver, and a JobSet's pods under
`jobset dev` answering to the names JobSet gives them.
"""

from __future__ import annotations

import functools
import json
import operator
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dns.flags
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype
import dns.reversename
import pytest

from jobset.dev.examplekit import start_dev
from kubesim.process import SimProcess, free_port, start_command, start_sim
from tests.eventually import eventually_sync

pytestmark = [pytest.mark.kubectl]

ZONE = "cluster.local"
NS = "default"


class Dns:
    def __init__(self, sim: SimProcess, port: int) -> None:
        self.sim = sim
        self.port = port

    def ask(self, name: str, rdtype: str = "A", tcp: bool = False) -> dns.message.Message:
        query = dns.message.make_query(name, rdtype)
        if tcp:
            return dns.query.tcp(query, "127.0.0.1", port=self.port, timeout=5)
        return dns.query.udp(query, "127.0.0.1", port=self.port, timeout=5)

    def values(self, name: str, rdtype: str = "A", tcp: bool = False) -> list[str]:
        """The answer's records of that type, as text, sorted."""
        response = self.ask(name, rdtype, tcp)
        kind = dns.rdatatype.from_text(rdtype)
        return sorted(
            r.to_text() for rrset in response.answer if rrset.rdtype == kind for r in rrset
        )

    def apply(self, *objects: dict[str, Any]) -> None:
        self.sim.kubectl(
            "apply",
            "-f",
            "-",
            input=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}),
        )

    def pod_ip(self, name: str) -> str:
        return str(self.sim.kubectl("get", "pod", name, "-o", "jsonpath={.status.podIP}").stdout)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dns]:
    port = free_port()
    sim = start_sim(
        tmp_path_factory.mktemp("dns"),
        "--nodes",
        "pools=1x4",
        "--dns-address",
        f"127.0.0.1:{port}",
    )
    yield Dns(sim, port)
    sim.stop()


def service(name: str, headless: bool, publish: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"app": "workers"},
        "ports": [{"name": "http", "port": 80, "targetPort": 8080}],
        "publishNotReadyAddresses": publish,
    }
    if headless:
        spec["clusterIP"] = "None"
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}


def pod(name: str, startup_delay: int = 0) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "c",
        "image": "busybox",
        "command": ["sleep", "infinity"],
        "ports": [{"containerPort": 8080}],
    }
    if startup_delay:
        # a simulated container's startup probe passes after its delay: not ready till then
        container["startupProbe"] = {
            "exec": {"command": ["true"]},
            "initialDelaySeconds": startup_delay,
        }
    spec = {"hostname": name, "subdomain": "workers", "containers": [container]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "workers"}},
        "spec": spec,
    }


def fq(name: str) -> str:
    return f"{name}.{NS}.svc.{ZONE}."


def _slice_conditions(d: Dns, svc: str) -> dict[str, bool]:
    out = d.sim.kubectl(
        "get", "endpointslices", "-l", f"kubernetes.io/service-name={svc}", "-o", "json"
    ).stdout
    return {
        ep["targetRef"]["name"]: bool(ep["conditions"].get("ready"))
        for sl in json.loads(out)["items"]
        for ep in sl.get("endpoints") or ()
    }


def test_kubernetes_default_is_the_api_server(cluster: Dns) -> None:
    assert cluster.values(fq("kubernetes")) == ["127.0.0.1"]
    api_port = cluster.sim.url.rsplit(":", 1)[1]
    srv = cluster.values(f"_https._tcp.{fq('kubernetes')}", "SRV")
    assert srv == [f"0 100 {api_port} {fq('kubernetes')}"]
    assert cluster.values(f"dns-version.{ZONE}.", "TXT") == ['"1.1.0"']


def test_headless_service_ready_and_not_ready_endpoints(cluster: Dns) -> None:
    cluster.apply(
        service("workers", headless=True),
        service("workers-all", headless=True, publish=True),
        pod("w-0"),
        pod("w-1", startup_delay=100_000),
    )
    # Both pods are endpoints, w-1 not ready; only then is the answer worth checking.
    eventually_sync(
        lambda: _slice_conditions(cluster, "workers"), lambda c: c == {"w-0": True, "w-1": False}
    )
    ip0, ip1 = cluster.pod_ip("w-0"), cluster.pod_ip("w-1")
    eventually_sync(lambda: cluster.values(fq("workers")), lambda v: v == [ip0])
    assert cluster.values(fq("workers"), tcp=True) == [ip0]
    assert cluster.values(f"w-0.{fq('workers')}") == [ip0]
    # The pods' own names: <hostname>.<subdomain>.<ns>.svc.<zone>
    assert cluster.ask(f"w-1.{fq('workers')}").rcode() == dns.rcode.NXDOMAIN
    # publishNotReadyAddresses: every endpoint
    both = sorted([ip0, ip1])
    eventually_sync(lambda: cluster.values(fq("workers-all")), lambda v: v == both)
    # ... named by address there: the pods' subdomain is another Service
    assert cluster.values(f"{ip1.replace('.', '-')}.{fq('workers-all')}") == [ip1]
    assert cluster.ask(f"w-1.{fq('workers-all')}").rcode() == dns.rcode.NXDOMAIN
    # SRV per named port, PTR per endpoint
    assert cluster.values(f"_http._tcp.{fq('workers')}", "SRV") == [
        f"0 100 8080 w-0.{fq('workers')}"
    ]
    reverse = dns.reversename.from_address(ip0).to_text()
    assert f"w-0.{fq('workers')}" in cluster.values(reverse, "PTR")


def test_nxdomain_nodata_and_names_outside(cluster: Dns) -> None:
    cluster.apply(service("plain", headless=False))
    ip = cluster.sim.kubectl("get", "svc", "plain", "-o", "jsonpath={.spec.clusterIP}").stdout
    assert eventually_sync(lambda: cluster.values(fq("plain"))) == [ip]
    assert cluster.values(dns.reversename.from_address(ip).to_text(), "PTR") == [fq("plain")]
    nodata = cluster.ask(fq("plain"), "AAAA")
    assert nodata.rcode() == dns.rcode.NOERROR and not nodata.answer
    assert [r.rdtype for r in nodata.authority] == [dns.rdatatype.SOA]
    assert nodata.authority[0].ttl == 5
    missing = cluster.ask(fq("no-such-service"))
    assert missing.rcode() == dns.rcode.NXDOMAIN
    assert [r.rdtype for r in missing.authority] == [dns.rdatatype.SOA]
    assert cluster.ask(f"{NS}.svc.{ZONE}.").rcode() == dns.rcode.NOERROR  # non-terminal
    assert cluster.ask("example.com.").rcode() == dns.rcode.REFUSED
    answer = cluster.ask(fq("plain"))
    assert answer.flags & dns.flags.AA and answer.answer[0].ttl == 5


def test_records_follow_pods(cluster: Dns) -> None:
    follow = service("follow", headless=True)
    follow["spec"]["selector"] = {"app": "follow"}
    slow = pod("f-1", startup_delay=15)
    slow["metadata"]["labels"] = {"app": "follow"}
    cluster.apply(follow, slow)
    eventually_sync(lambda: _slice_conditions(cluster, "follow"), lambda c: c == {"f-1": False})
    assert cluster.values(fq("follow")) == []  # not ready yet: NODATA
    ip = cluster.pod_ip("f-1")
    eventually_sync(lambda: cluster.values(fq("follow")), lambda v: v == [ip], within=60)
    pod_name = f"{ip.replace('.', '-')}.{NS}.pod.{ZONE}."
    assert cluster.values(pod_name) == [ip]
    cluster.sim.kubectl("delete", "pod", "f-1", "--grace-period=0", "--force")
    eventually_sync(lambda: cluster.ask(fq("follow")).answer, lambda a: not a)
    eventually_sync(lambda: cluster.ask(pod_name).rcode(), lambda r: r == dns.rcode.NXDOMAIN)


def test_truncated_over_udp_complete_over_tcp(cluster: Dns) -> None:
    big = service("big", headless=True, publish=True)
    big["spec"]["selector"] = {"app": "big"}
    pods = []
    for i in range(40):
        p = pod(f"b-{i}")
        p["metadata"]["labels"] = {"app": "big"}
        p["spec"]["subdomain"] = "big"
        pods.append(p)
    cluster.apply(big, *pods)
    eventually_sync(lambda: len(cluster.values(fq("big"), tcp=True)), lambda n: n == 40, within=60)
    udp = cluster.ask(fq("big"))
    assert udp.flags & dns.flags.TC


def test_an_endpoint_hostname_that_is_no_dns_label_is_refused(cluster: Dns) -> None:
    """kube-apiserver validates a slice endpoint's hostname as a DNS label: `bad name`
    would become a DNS name no lookup could answer; a valid one answers PTR lookups."""

    def endpoint_slice(hostname: str) -> dict[str, Any]:
        return {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {"name": "manual", "labels": {"kubernetes.io/service-name": "manual"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.244.9.9"], "hostname": hostname}],
        }

    out = cluster.sim.kubectl(
        "apply", "-f", "-", input=json.dumps(endpoint_slice("bad name")), check=False
    )
    assert out.returncode != 0
    assert 'endpoints[0].hostname: Invalid value: "bad name": a lowercase RFC 1123 label' in (
        out.stderr
    )
    cluster.apply(service("manual", headless=True), endpoint_slice("good"))
    ptr = dns.reversename.from_address("10.244.9.9").to_text()
    eventually_sync(lambda: cluster.values(ptr, "PTR"), lambda v: v == [fq("good.manual")])


def test_cluster_domain_flag(tmp_path: Path) -> None:
    port = free_port()
    sim = start_sim(
        tmp_path, "--cluster-domain", "corp.example", "--dns-address", f"127.0.0.1:{port}"
    )
    try:
        d = Dns(sim, port)
        assert d.values("kubernetes.default.svc.corp.example.") == ["127.0.0.1"]
        assert d.ask(f"kubernetes.default.svc.{ZONE}.").rcode() == dns.rcode.REFUSED
    finally:
        sim.stop()


def test_invalid_cluster_domain_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError) as err:
        start_command(tmp_path, "sim", "--cluster-domain", "Not_A.Domain", timeout=30)
    assert '--cluster-domain: Invalid value: "Not_A.Domain": a lowercase RFC 1123 subdomain' in str(
        err.value
    )


def test_wildcard_dns_address_is_refused_without_its_flag(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError) as err:
        start_command(tmp_path, "sim", "--dns-address", "0.0.0.0:5353", timeout=30)
    assert "--dns-address '0.0.0.0:5353': a wildcard address" in str(err.value)


REALPOD = Path(__file__).with_name("realpod")
# A container that looks a name up at the pod network's gateway (the cluster nameserver),
# over UDP and TCP, then fetches http://<address>:8080/whoami from the pod it found.
RESOLVE = """
import os, sys, time, urllib.request
import dns.message, dns.query

gateway = os.environ["KUBERNETES_SERVICE_HOST"]
for _ in range(300):
    query = dns.message.make_query(sys.argv[1], "A")
    try:
        answers = [dns.query.udp(query, gateway, timeout=2), dns.query.tcp(query, gateway, timeout=2)]
    except Exception as exc:
        print("no answer yet:", exc, flush=True)
        time.sleep(0.2)
        continue
    found = [sorted(r.to_text() for rrset in a.answer for r in rrset) for a in answers]
    if found[0] and found[0] == found[1]:
        url = f"http://{found[0][0]}:8080/whoami"
        reply = urllib.request.urlopen(url, timeout=5).read().decode()
        print("resolved", found[0][0], reply, flush=True)
        sys.exit(0)
    time.sleep(0.2)
sys.exit(1)
"""


def test_real_pod_resolves_another_pod_by_hostname_and_subdomain(tmp_path: Path) -> None:
    # The resolver runs from the tests' virtualenv (it has dnspython): a container of an image
    # mapped to a virtualenv's bin sees that virtualenv and its base interpreter.
    sim = start_sim(
        tmp_path,
        "--nodes", "2",
        "--run-image", f"example.com/web={REALPOD}",
        "--run-image", f"example.com/resolver={Path(sys.prefix) / 'bin'}",
    )  # fmt: skip
    try:
        d = Dns(sim, 0)
        server = pod("s-0")
        server["metadata"]["labels"] = {"app": "peers"}
        server["spec"]["subdomain"] = "peers"
        server["spec"]["containers"] = [
            {"name": "web", "image": "example.com/web:v1", "command": ["web"]}
        ]
        peers = service("peers", headless=True, publish=True)
        peers["spec"]["selector"] = {"app": "peers"}
        name = f"s-0.peers.{NS}.svc.{ZONE}"
        client = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "client"},
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "c",
                        "image": "example.com/resolver:v1",
                        "command": [
                            "python",
                            "-c",
                            RESOLVE,
                            name,
                        ],
                    }
                ],
            },
        }
        d.apply(peers, server, client)
        phase = eventually_sync(
            lambda: sim.kubectl("get", "pod", "client", "-o", "jsonpath={.status.phase}").stdout,
            lambda p: p in ("Succeeded", "Failed"),
            within=90,
        )
        logs = sim.kubectl("logs", "client").stdout
        assert phase == "Succeeded", logs
        server_ip = d.pod_ip("s-0")
        assert f"resolved {server_ip} " in logs
        assert '"uid"' in logs  # the answer came from the server pod over the pod network
    finally:
        sim.stop()


JOBSET = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2",
    "kind": "JobSet",
    "metadata": {"name": "train"},
    "spec": {
        "replicatedJobs": [
            {
                "name": "workers",
                "replicas": 2,
                "template": {
                    "spec": {
                        "parallelism": 2,
                        "completions": 2,
                        "template": {
                            "spec": {
                                "containers": [
                                    {
                                        "name": "w",
                                        "image": "busybox",
                                        "command": ["sleep", "infinity"],
                                    }
                                ]
                            }
                        },
                    }
                },
            }
        ]
    },
}


def test_jobset_pods_resolve_by_their_stable_names(tmp_path: Path) -> None:
    port = free_port()
    dev = start_dev(tmp_path, "--dns-address", f"127.0.0.1:{port}")
    try:
        d = Dns(dev, port)
        dev.kubectl("apply", "-f", "-", input=json.dumps(JOBSET))

        def pods() -> dict[str, str]:
            out = dev.kubectl(
                "get", "pods", "-l", "jobset.sigs.k8s.io/jobset-name=train", "-o", "json"
            ).stdout
            items = json.loads(out)["items"]
            return {
                f"{p['spec'].get('hostname')}.{p['spec'].get('subdomain')}": p["status"].get(
                    "podIP", ""
                )
                for p in items
            }

        names = eventually_sync(pods, lambda n: len(n) == 4 and all(n.values()), within=60)
        assert sorted(names) == [f"train-workers-{j}-{i}.train" for j in (0, 1) for i in (0, 1)]
        for name, ip in names.items():
            fqdn = f"{name}.{NS}.svc.{ZONE}."
            eventually_sync(functools.partial(d.values, fqdn), functools.partial(operator.eq, [ip]))
        assert d.values(fq("train")) == sorted(names.values())  # publishNotReadyAddresses
    finally:
        dev.stop()
