"""Cluster DNS answers while the API server's event loop is held: its servers run on a
loop of their own. Real UDP and TCP sockets on loopback; the "loaded API server" is the
test's own loop, held by a blocking call for as long as the query takes."""

from __future__ import annotations

import dns.message
import dns.query
import dns.rcode

from kubesim.apiserver.core.store import Store
from kubesim.dns import ClusterDns

NAME = "kubernetes.default.svc.cluster.local."


async def test_answers_arrive_while_the_store_loop_is_held() -> None:
    store = Store()
    cluster_dns = ClusterDns(store, "cluster.local", "127.0.0.1")
    cluster_dns.start()
    server = await cluster_dns.serve("127.0.0.1", 0)
    try:
        query = dns.message.make_query("dns-version.cluster.local.", "TXT")
        # Blocking calls on this loop: nothing else runs on it until they return.
        udp = dns.query.udp(query, "127.0.0.1", port=server.port, timeout=20)
        tcp = dns.query.tcp(query, "127.0.0.1", port=server.port, timeout=20)
        assert udp.rcode() == tcp.rcode() == dns.rcode.NOERROR
        assert udp.answer and udp.answer == tcp.answer
    finally:
        await cluster_dns.stop()
    assert not cluster_dns.servers
