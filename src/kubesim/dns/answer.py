"""A DNS response to a DNS query, from the record table: pure, no sockets.

As CoreDNS's kubernetes plugin answers for its zones:
- the records asked for, authoritative (AA), each with a TTL of `TTL` seconds (CoreDNS's
  default `ttl 5`), the addresses of SRV and NS targets in the additional section; a CNAME (ExternalName Service) answers any type at its name, not
  followed (its target is outside the cluster);
- NXDOMAIN for a name that does not exist in the zone, NOERROR with no answer (NODATA) for
  one that exists without that type; both with the zone's SOA in the authority section,
  its minimum TTL `TTL` (how long resolvers cache the negative answer);
- REFUSED for a name in none of the zones: there is no upstream to forward to (a real
  cluster's CoreDNS forwards to the node's resolvers; pods here reach nothing outside);
- NOTIMP for opcodes other than QUERY, REFUSED for zone transfers and for classes other
  than IN, FORMERR for a message without exactly one question.
"""

from __future__ import annotations

from typing import Final

import dns.flags
import dns.message
import dns.name
import dns.opcode
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rrset

from kubesim.dns.table import Outcome, RecordTable

__all__ = ["TTL", "respond", "soa_rdata"]

TTL: Final = 5  # seconds; CoreDNS's kubernetes plugin default, for records and negative answers
# The SOA timers CoreDNS's kubernetes plugin gives its zones (refresh, retry, expire).
SOA_TIMERS: Final = (7200, 1800, 86400)
IN: Final = dns.rdataclass.IN
_TRANSFERS: Final = frozenset({dns.rdatatype.AXFR, dns.rdatatype.IXFR})


def soa_rdata(zone: str, nameserver: str, serial: int) -> str:
    """The zone's SOA: `<nameserver> hostmaster.<zone> <serial> <timers> <minimum TTL>`."""
    refresh, retry, expire = SOA_TIMERS
    return f"{nameserver} hostmaster.{zone} {serial} {refresh} {retry} {expire} {TTL}"


def respond(
    table: RecordTable, request: dns.message.Message, nameserver: str
) -> dns.message.Message:
    """The response to `request`; `nameserver` is the name of this server (SOA MNAME)."""
    response = dns.message.make_response(request)
    response.flags &= ~dns.flags.AA
    if request.opcode() != dns.opcode.QUERY:
        response.set_rcode(dns.rcode.NOTIMP)
        return response
    if len(request.question) != 1:
        response.set_rcode(dns.rcode.FORMERR)
        return response
    question = request.question[0]
    if question.rdclass != IN or question.rdtype in _TRANSFERS:
        response.set_rcode(dns.rcode.REFUSED)
        return response
    qname = question.name.to_text().lower()
    any_type = question.rdtype == dns.rdatatype.ANY
    found = table.lookup(qname, int(question.rdtype), any_type=any_type)
    if found.outcome is Outcome.NOT_AUTHORITATIVE:
        response.set_rcode(dns.rcode.REFUSED)
        return response
    response.flags |= dns.flags.AA
    soa = _rrset(found.zone, dns.rdatatype.SOA, [soa_rdata(found.zone, nameserver, table.serial)])
    by_type: dict[int, list[str]] = {}
    for rdtype, rdata in found.records:
        by_type.setdefault(rdtype, []).append(rdata)
    for rdtype, rdatas in by_type.items():
        response.answer.append(_rrset(question.name, rdtype, rdatas))
    if qname == found.zone and question.rdtype in (dns.rdatatype.SOA, dns.rdatatype.ANY):
        response.answer.append(soa)
    _add_target_addresses(table, response)
    if not response.answer:
        response.authority.append(soa)
        if found.outcome is Outcome.NXDOMAIN:
            response.set_rcode(dns.rcode.NXDOMAIN)
    return response


def _add_target_addresses(table: RecordTable, response: dns.message.Message) -> None:
    """The A records of SRV and NS targets in the additional section, as CoreDNS adds them:
    a client needs no second query to reach what an SRV record names."""
    targets: list[dns.name.Name] = []
    for rrset in response.answer:
        if rrset.rdtype in (dns.rdatatype.SRV, dns.rdatatype.NS):
            targets += [r.target for r in rrset]
    for target in dict.fromkeys(targets):
        found = table.lookup(target.to_text().lower(), int(dns.rdatatype.A))
        addresses = [rdata for rdtype, rdata in found.records if rdtype == dns.rdatatype.A]
        if found.outcome is Outcome.ANSWER and addresses:
            response.additional.append(_rrset(target, int(dns.rdatatype.A), addresses))


def _rrset(name: dns.name.Name | str, rdtype: int, rdatas: list[str]) -> dns.rrset.RRset:
    kind = dns.rdatatype.RdataType.make(rdtype)
    rrset = dns.rrset.RRset(dns.name.from_text(name) if isinstance(name, str) else name, IN, kind)
    for text in rdatas:
        rrset.add(dns.rdata.from_text(IN, kind, text), TTL)
    return rrset
