"""The cluster DNS server's sockets: UDP and TCP on one address and port (RFC 1035, 7766).

The answers are `answer.respond`'s; this module only moves bytes. UDP answers are cut to
512 bytes, or to the requester's EDNS payload size but never above `UDP_EDNS_MAX` (as
CoreDNS caps them), with the TC bit set when they do not fit (the client retries over TCP,
as resolvers do for a large headless Service); TCP messages are length-prefixed, several
per connection. The table is read under the feed's lock: the server runs on a loop of its
own, in another thread than the store that feeds it.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from typing import Final, cast

import dns.exception
import dns.flags
import dns.message
import dns.rcode
import structlog

from kubesim.dns.answer import respond
from kubesim.dns.feed import ClusterRecords
from kubeutil.aio import cancel_and_wait

__all__ = ["UDP_EDNS_MAX", "UDP_PLAIN_MAX", "DnsServer", "answer_wire"]

log = structlog.get_logger("sim.dns")

UDP_PLAIN_MAX: Final = 512  # without EDNS (RFC 1035)
# The largest UDP answer whatever buffer the client's EDNS advertises: the DNS Flag Day
# 2020 size CoreDNS caps at, so a small query cannot draw a large datagram back.
UDP_EDNS_MAX: Final = 1232
TCP_MAX: Final = 65535
TCP_IDLE: Final = 10.0  # seconds an idle TCP connection is kept (RFC 7766 suggests some)


def answer_wire(records: ClusterRecords, wire: bytes, tcp: bool) -> bytes | None:
    """The response to one wire-format query, within what the transport carries (over UDP
    512 bytes or the query's EDNS buffer size up to `UDP_EDNS_MAX`; larger answers are
    truncated, TC set);
    FORMERR for a message that does not parse; None when not even its header does."""
    try:
        request = dns.message.from_wire(wire)
    except dns.exception.DNSException:
        if len(wire) < 12:
            return None
        error = dns.message.Message(id=struct.unpack("!H", wire[:2])[0])
        error.flags = dns.flags.QR
        error.set_rcode(dns.rcode.FORMERR)
        return error.to_wire()
    with records.lock:
        response = respond(records.table, request, records.nameserver)
    max_size = TCP_MAX if tcp else UDP_PLAIN_MAX
    if not tcp and request.edns >= 0:
        max_size = min(UDP_EDNS_MAX, max(UDP_PLAIN_MAX, request.payload))
    return response.to_wire(max_size=max_size, prefer_truncation=True)


class _Udp(asyncio.DatagramProtocol):
    def __init__(self, records: ClusterRecords) -> None:
        self.records = records
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str | int, ...]) -> None:
        out = answer_wire(self.records, data, tcp=False)
        if out is not None and self.transport is not None:
            self.transport.sendto(out, addr)


class DnsServer:
    """Serves `records` on `host:port` over UDP and TCP; port 0 picks one free for both."""

    def __init__(self, records: ClusterRecords, host: str, port: int = 53) -> None:
        self.records = records
        self.host = host
        self.port = port
        self._udp: asyncio.DatagramTransport | None = None
        self._tcp: asyncio.Server | None = None
        self._conns: set[asyncio.Task[None]] = set()

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        # With port 0, UDP's port may be taken on TCP: try again with another.
        for _attempt in range(20 if self.port == 0 else 1):
            udp, _ = await loop.create_datagram_endpoint(
                lambda: _Udp(self.records), local_addr=(self.host, self.port)
            )
            port = int(udp.get_extra_info("sockname")[1])
            try:
                self._tcp = await asyncio.start_server(self._serve_tcp, self.host, port)
            except OSError:
                udp.close()
                if self.port != 0:
                    raise
                continue
            self._udp, self.port = udp, port
            log.info("cluster DNS serving", address=self.address, zone=self.records.zone)
            return
        raise OSError(f"no port free for both UDP and TCP on {self.host}")

    async def stop(self) -> None:
        if self._tcp is not None:
            self._tcp.close()
        await cancel_and_wait(*self._conns)
        if self._tcp is not None:
            await self._tcp.wait_closed()
            self._tcp = None
        if self._udp is not None:
            self._udp.close()
            self._udp = None

    async def _serve_tcp(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._conns.add(task)
        try:
            while True:
                head = await asyncio.wait_for(reader.readexactly(2), TCP_IDLE)
                wire = await asyncio.wait_for(
                    reader.readexactly(struct.unpack("!H", head)[0]), TCP_IDLE
                )
                out = answer_wire(self.records, wire, tcp=True)
                if out is None:
                    break
                writer.write(struct.pack("!H", len(out)) + out)
                await writer.drain()
        except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._conns.discard(task)
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
