"""`server.answer_wire`: bytes in, bytes out, as the UDP and TCP servers use it."""

from __future__ import annotations

import dns.flags
import dns.message
import dns.rcode

from kubesim.apiserver.core.store import Store
from kubesim.dns.feed import ClusterRecords
from kubesim.dns.records import A
from kubesim.dns.server import UDP_EDNS_MAX, UDP_PLAIN_MAX, answer_wire

NAME = "big.ns.svc.cluster.local."


def _records(addresses: int) -> ClusterRecords:
    records = ClusterRecords(Store(), "cluster.local", "10.244.40.1")
    records.table.replace("big", [(NAME, A, f"10.244.1.{i}") for i in range(1, addresses + 1)])
    return records


def test_large_answer_is_truncated_within_the_udp_size() -> None:
    records = _records(60)
    query = dns.message.make_query(NAME, "A")
    wire = answer_wire(records, query.to_wire(), tcp=False)
    assert wire is not None and len(wire) <= UDP_PLAIN_MAX
    assert dns.message.from_wire(wire).flags & dns.flags.TC
    full = dns.message.from_wire(answer_wire(records, query.to_wire(), tcp=True) or b"")
    assert not full.flags & dns.flags.TC and len(full.answer[0]) == 60


def test_edns_buffer_size_raises_the_udp_limit() -> None:
    records = _records(60)
    query = dns.message.make_query(NAME, "A", use_edns=0, payload=4096)
    wire = answer_wire(records, query.to_wire(), tcp=False)
    assert wire is not None and len(wire) > UDP_PLAIN_MAX
    assert not dns.message.from_wire(wire).flags & dns.flags.TC


def test_udp_answer_is_capped_whatever_edns_buffer_the_client_claims() -> None:
    """A small query claiming a 64 KiB buffer must not draw a large datagram back (CoreDNS
    caps UDP answers at 1232 bytes): the answer is truncated there, complete over TCP."""
    records = _records(250)
    query = dns.message.make_query(NAME, "A", use_edns=0, payload=65535)
    wire = answer_wire(records, query.to_wire(), tcp=False)
    assert wire is not None and len(wire) <= UDP_EDNS_MAX
    assert dns.message.from_wire(wire).flags & dns.flags.TC
    full = dns.message.from_wire(answer_wire(records, query.to_wire(), tcp=True) or b"")
    assert not full.flags & dns.flags.TC and len(full.answer[0]) == 250


def test_garbage_gets_formerr_with_its_id_and_a_runt_nothing() -> None:
    records = _records(1)
    wire = answer_wire(records, b"\x12\x34" + b"\x01" * 14, tcp=False)
    assert wire is not None
    response = dns.message.from_wire(wire)
    assert response.id == 0x1234 and response.rcode() == dns.rcode.FORMERR
    assert answer_wire(records, b"\x12", tcp=False) is None
