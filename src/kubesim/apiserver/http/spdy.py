"""SPDY/3.1 framing, as the Kubernetes clients speak it (moby/spdystream), pure: bytes in, frames
out, and frames to bytes.

Hand-written because no maintained Python library speaks SPDY any more; only what a
port-forward server needs is here: the frame layout (control frames with a 16-bit type, data
frames with a 31-bit stream id, 24-bit lengths) and the header blocks (32-bit counted name /
value pairs, compressed with one zlib stream per direction primed with the SPDY/3 dictionary).
spdystream does no flow control, so WINDOW_UPDATE frames are parsed and ignored.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

__all__ = [
    "DICTIONARY",
    "FLAG_FIN",
    "MAX_HEADER_BLOCK",
    "Data",
    "Frame",
    "FrameError",
    "Parser",
    "Ping",
    "RstStream",
    "SynStream",
    "Writer",
    "data_frame",
]

VERSION: Final = 3
FLAG_FIN: Final = 0x01
MAX_FRAME: Final = 1 << 24  # lengths are 24 bits
# The most a header block may decompress to (Go's HTTP server takes as much for a request's
# headers); a SYN_STREAM whose block inflates further ends the session.
MAX_HEADER_BLOCK: Final = 1 << 20
# RST_STREAM status codes used here.
PROTOCOL_ERROR: Final = 1
REFUSED_STREAM: Final = 3
CANCEL: Final = 5

SYN_STREAM: Final = 1
SYN_REPLY: Final = 2
RST_STREAM: Final = 3
SETTINGS: Final = 4
PING: Final = 6
GOAWAY: Final = 7
HEADERS: Final = 8
WINDOW_UPDATE: Final = 9

_NAMES: Final = [
    *(
        "options head post put delete trace accept accept-charset accept-encoding "
        "accept-language accept-ranges age allow authorization cache-control connection "
        "content-base content-encoding content-language content-length content-location "
        "content-md5 content-range content-type date etag expect expires from host if-match "
        "if-modified-since if-none-match if-range if-unmodified-since last-modified location "
        "max-forwards pragma proxy-authenticate proxy-authorization range referer retry-after "
        "server te trailer transfer-encoding upgrade user-agent vary via warning "
        "www-authenticate method get status"
    ).split(),
    "200 OK",
    *"version HTTP/1.1 url public set-cookie keep-alive origin".split(),
]
_TAIL: Final = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request"
    "401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented"
    "503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 "
    "Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,"
    "application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age="
    "gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)
# The zlib dictionary of SPDY/3 header blocks (section 2.6.10.1 of the draft): the common
# names, each with its 32-bit length, then common values.
DICTIONARY: Final = (
    b"".join(struct.pack(">I", len(n)) + n.encode() for n in _NAMES) + _TAIL.encode()
)


class FrameError(Exception):
    """The peer sent something that is not SPDY/3.1: the session must end."""


@dataclass(frozen=True)
class SynStream:
    stream_id: int
    headers: dict[str, str]
    fin: bool


@dataclass(frozen=True)
class Data:
    stream_id: int
    data: bytes
    fin: bool


@dataclass(frozen=True)
class RstStream:
    stream_id: int
    status: int


@dataclass(frozen=True)
class Ping:
    ping_id: int


@dataclass(frozen=True)
class GoAway:
    last_stream_id: int


@dataclass(frozen=True)
class Other:
    """A frame a port-forward server has no use for (SETTINGS, WINDOW_UPDATE, ...)."""

    kind: int


Frame = SynStream | Data | RstStream | Ping | GoAway | Other


def _decode_headers(block: bytes) -> dict[str, str]:
    pos = 0

    def take(n: int) -> bytes:
        nonlocal pos
        if pos + n > len(block):
            raise FrameError("truncated header block")
        pos += n
        return block[pos - n : pos]

    (count,) = struct.unpack(">I", take(4))
    headers: dict[str, str] = {}
    for _ in range(count):
        (n,) = struct.unpack(">I", take(4))
        name = take(n).decode("latin-1").lower()
        (n,) = struct.unpack(">I", take(4))
        # Several values of one name are joined with NUL; the first is the one used here.
        headers[name] = take(n).decode("latin-1").split("\x00", 1)[0]
    return headers


@dataclass
class Parser:
    """Frames from a byte stream fed in pieces of any size, given one at a time as they are
    parsed (a piece can hold a great many small frames; none is built before it is asked
    for)."""

    buffer: bytearray = field(default_factory=bytearray)
    inflate: zlib._Decompress = field(default_factory=lambda: zlib.decompressobj(zdict=DICTIONARY))

    def feed(self, data: bytes) -> Iterator[Frame]:
        self.buffer += data
        pos = 0
        try:
            while len(self.buffer) - pos >= 8:
                length = int.from_bytes(self.buffer[pos + 5 : pos + 8], "big")
                if len(self.buffer) - pos < 8 + length:
                    break
                head = bytes(self.buffer[pos : pos + 8])
                payload = bytes(self.buffer[pos + 8 : pos + 8 + length])
                pos += 8 + length
                yield self._frame(head, payload)
        finally:
            del self.buffer[:pos]  # once per piece: dropping each frame would copy the rest

    def _inflate(self, block: bytes) -> bytes:
        """A header block, decompressed on the session's shared zlib stream, refused past
        `MAX_HEADER_BLOCK` before more than that is ever produced."""
        try:
            out = self.inflate.decompress(block, MAX_HEADER_BLOCK + 1)
        except zlib.error as exc:
            raise FrameError(f"bad header block: {exc}") from None
        if len(out) > MAX_HEADER_BLOCK or self.inflate.unconsumed_tail:
            raise FrameError(f"header block larger than {MAX_HEADER_BLOCK} bytes")
        return out

    def _frame(self, head: bytes, payload: bytes) -> Frame:
        flags = head[4]
        if not head[0] & 0x80:
            stream_id = int.from_bytes(head[:4], "big") & 0x7FFFFFFF
            return Data(stream_id, payload, bool(flags & FLAG_FIN))
        version, kind = struct.unpack(">HH", head[:4])
        if version & 0x7FFF != VERSION:
            raise FrameError(f"unsupported SPDY version {version & 0x7FFF}")
        if kind == SYN_STREAM:
            if len(payload) < 10:
                raise FrameError("short SYN_STREAM")
            stream_id = int.from_bytes(payload[:4], "big") & 0x7FFFFFFF
            block = self._inflate(payload[10:])
            return SynStream(stream_id, _decode_headers(block), bool(flags & FLAG_FIN))
        if kind in (SYN_REPLY, HEADERS) and len(payload) > 4:
            self._inflate(payload[4:])  # keeps the shared zlib stream in step; headers unused
            return Other(kind)
        if kind == RST_STREAM and len(payload) >= 8:
            stream_id, status = struct.unpack(">II", payload[:8])
            return RstStream(stream_id & 0x7FFFFFFF, status)
        if kind == PING and len(payload) >= 4:
            return Ping(struct.unpack(">I", payload[:4])[0])
        if kind == GOAWAY and len(payload) >= 4:
            return GoAway(struct.unpack(">I", payload[:4])[0] & 0x7FFFFFFF)
        return Other(kind)


def _control(kind: int, flags: int, payload: bytes) -> bytes:
    return struct.pack(">HHI", 0x8000 | VERSION, kind, (flags << 24) | len(payload)) + payload


def data_frame(stream_id: int, data: bytes, fin: bool = False) -> bytes:
    if len(data) >= MAX_FRAME:
        raise ValueError("a data frame holds less than 16 MiB")
    flags = FLAG_FIN if fin else 0
    return struct.pack(">II", stream_id & 0x7FFFFFFF, (flags << 24) | len(data)) + data


@dataclass
class Writer:
    """Control frames this side sends; header blocks share one compression stream."""

    deflate: zlib._Compress = field(default_factory=lambda: zlib.compressobj(zdict=DICTIONARY))

    def _headers(self, headers: dict[str, str]) -> bytes:
        block = struct.pack(">I", len(headers))
        for name, value in headers.items():
            n, v = name.lower().encode("latin-1"), value.encode("latin-1")
            block += struct.pack(">I", len(n)) + n + struct.pack(">I", len(v)) + v
        return self.deflate.compress(block) + self.deflate.flush(zlib.Z_SYNC_FLUSH)

    def syn_reply(self, stream_id: int, headers: dict[str, str] | None = None) -> bytes:
        payload = struct.pack(">I", stream_id) + self._headers(headers or {})
        return _control(SYN_REPLY, 0, payload)

    def syn_stream(self, stream_id: int, headers: dict[str, str], fin: bool = False) -> bytes:
        """What a client sends to open a stream (the tests play the client with it)."""
        payload = struct.pack(">IIBB", stream_id, 0, 0, 0) + self._headers(headers)
        return _control(SYN_STREAM, FLAG_FIN if fin else 0, payload)

    @staticmethod
    def rst_stream(stream_id: int, status: int = CANCEL) -> bytes:
        return _control(RST_STREAM, 0, struct.pack(">II", stream_id, status))

    @staticmethod
    def ping(ping_id: int) -> bytes:
        return _control(PING, 0, struct.pack(">I", ping_id))

    @staticmethod
    def goaway(last_stream_id: int) -> bytes:
        return _control(GOAWAY, 0, struct.pack(">II", last_stream_id, 0))
