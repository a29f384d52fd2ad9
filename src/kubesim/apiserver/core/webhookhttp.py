"""The HTTP/1.1 transport of webhook calls: kept-alive TLS connections, at most
`limit` per server, one request at a time on each (no pipelining, as Go's transport).

Hand-written rather than aiohttp's client: aiohttp's per-request machinery (request and
response objects, timers, connector bookkeeping) cost the simulator more CPU than the rest of
a webhook call. Answers are parsed by `httptools` (llhttp, Node.js's parser); this module
only adds the pool and the limits a hostile server must not get past: response headers at
most `MAX_HEADER_BYTES` (the default of Go's `http.Transport`, which kube-apiserver's
webhook client keeps), a body at most `MAX_BODY_BYTES`. The caller's deadline (`asyncio.timeout`) bounds
the dial, the TLS handshake, the wait for a free connection and the answer; a connection
whose call was cut off is closed, never reused.
"""

from __future__ import annotations

import asyncio
import collections
import ssl
import time
from dataclasses import dataclass
from typing import Final

import httptools

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_HEADER_BYTES",
    "Endpoint",
    "HttpPool",
    "ProtocolError",
    "UnexpectedEOF",
]

MAX_HEADER_BYTES: Final = 10 << 20  # Go's http.Transport default (MaxResponseHeaderBytes)
# An AdmissionReview answer is a verdict and at most a patch of one object (objects are at
# most ~3 MiB): four times that is no real webhook's answer.
MAX_BODY_BYTES: Final = 16 << 20


class ProtocolError(Exception):
    """The server answered something that is not an acceptable HTTP/1.1 response."""


class UnexpectedEOF(ProtocolError):
    """The connection ended before a whole answer (`EOF` before any byte of it, as Go says
    it; `unexpected EOF` within it)."""

    def __init__(self, started: bool) -> None:
        super().__init__("unexpected EOF" if started else "EOF")


@dataclass(frozen=True)
class Endpoint:
    """Where connections go: the dialled host and port, the TLS context (None: plain TCP)
    and the name the server's certificate must carry."""

    host: str
    port: int
    tls: ssl.SSLContext | None
    server_hostname: str | None


class _Connection(asyncio.Protocol):
    """One connection; `send` writes a request and waits for its whole answer."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.waiter: asyncio.Future[tuple[int, bytes]] | None = None
        self.closed = False
        self.idle_since = 0.0
        self._reset()

    def _reset(self) -> None:
        self.body: list[bytes] = []
        self.body_bytes = 0
        self.header_bytes = 0
        self.started = False  # a byte of the current answer arrived
        self.headers_done = False
        self.delimited = False  # Content-Length or chunked: the answer's end is in-band

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self.waiter is None:  # an answer nobody asked for: the stream is out of step
            self.close()
            return
        self.started = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            # A limit a callback below enforced reaches here wrapped in the parser's error.
            cause = exc.__context__
            self._fail(
                cause
                if isinstance(cause, ProtocolError)
                else ProtocolError(f"malformed HTTP response: {exc}")
            )

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.waiter is not None and self.headers_done and not self.delimited:
            self.on_message_complete()  # an answer delimited by the connection's end
            return
        self._fail(UnexpectedEOF(self.started))

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self.header_bytes += len(name) + len(value) + 4
        if self.header_bytes > MAX_HEADER_BYTES:
            raise ProtocolError(
                f"net/http: server response headers exceeded {MAX_HEADER_BYTES} bytes; aborted"
            )
        lowered = name.lower()
        if lowered == b"content-length" or (
            lowered == b"transfer-encoding" and b"chunked" in value.lower()
        ):
            self.delimited = True

    def on_headers_complete(self) -> None:
        self.headers_done = True

    def on_body(self, data: bytes) -> None:
        self.body_bytes += len(data)
        if self.body_bytes > MAX_BODY_BYTES:
            raise ProtocolError(f"response body exceeds {MAX_BODY_BYTES} bytes")
        self.body.append(data)

    def on_message_complete(self) -> None:
        waiter, self.waiter = self.waiter, None
        answer = (self.parser.get_status_code(), b"".join(self.body))
        keep = self.parser.should_keep_alive() and self.delimited
        self._reset()
        if waiter is not None and not waiter.done():
            waiter.set_result(answer)
        if not keep:
            self.close()

    def _fail(self, exc: BaseException) -> None:
        self.close()
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    async def send(self, raw: bytes) -> tuple[int, bytes]:
        assert self.transport is not None and self.waiter is None
        waiter: asyncio.Future[tuple[int, bytes]] = asyncio.get_running_loop().create_future()
        self.waiter = waiter
        self.transport.write(raw)
        return await waiter


class _HostPool:
    """The connections to one endpoint: idle ones, and callers waiting for one."""

    def __init__(self, endpoint: Endpoint, limit: int, idle_timeout: float) -> None:
        self.endpoint = endpoint
        self.limit = limit
        self.idle_timeout = idle_timeout
        self.idle: list[_Connection] = []
        # A waiter gets a connection, or None: a slot came free, dial one.
        self.waiting: collections.deque[asyncio.Future[_Connection | None]] = collections.deque()
        self.live = 0  # open or being dialled
        self.opened = 0

    async def _dial(self) -> _Connection:
        ep = self.endpoint
        self.live += 1
        try:
            _, conn = await asyncio.get_running_loop().create_connection(
                _Connection, ep.host, ep.port, ssl=ep.tls, server_hostname=ep.server_hostname
            )
        except BaseException:
            self.live -= 1
            self._wake(None)
            raise
        self.opened += 1
        return conn

    def _idle_conn(self) -> _Connection | None:
        expired = time.monotonic() - self.idle_timeout
        while self.idle:
            conn = self.idle.pop()
            if not conn.closed and conn.idle_since > expired:
                return conn
            conn.close()
            self.live -= 1
        return None

    async def acquire(self) -> _Connection:
        while True:
            conn = self._idle_conn()
            if conn is not None:
                return conn
            if self.live < self.limit:
                return await self._dial()
            waiter: asyncio.Future[_Connection | None] = asyncio.get_running_loop().create_future()
            self.waiting.append(waiter)
            try:
                got = await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    handed = waiter.result()  # handed over just as the caller was cut off
                    if handed is not None:
                        self.release(handed)
                    else:
                        self._wake(None)
                raise
            if got is not None:
                return got

    def _wake(self, conn: _Connection | None) -> bool:
        while self.waiting:
            waiter = self.waiting.popleft()
            if not waiter.done():
                waiter.set_result(conn)
                return True
        return False

    def release(self, conn: _Connection) -> None:
        if conn.closed or conn.waiter is not None:
            conn.close()
            self.live -= 1
            self._wake(None)
            return
        if not self._wake(conn):
            conn.idle_since = time.monotonic()
            self.idle.append(conn)

    def close(self) -> None:
        for conn in self.idle:
            conn.close()
        self.live -= len(self.idle)
        self.idle.clear()


class HttpPool:
    """Kept-alive connections per endpoint; `post` sends prebuilt request bytes."""

    def __init__(self, limit_per_host: int, idle_timeout: float = 30.0) -> None:
        self.limit = limit_per_host
        self.idle_timeout = idle_timeout
        self._hosts: dict[Endpoint, _HostPool] = {}

    def host(self, endpoint: Endpoint) -> _HostPool:
        pool = self._hosts.get(endpoint)
        if pool is None:
            pool = self._hosts[endpoint] = _HostPool(endpoint, self.limit, self.idle_timeout)
        return pool

    async def post(self, endpoint: Endpoint, raw: bytes) -> tuple[int, bytes]:
        """Send one request (`request_bytes`) and return the answer's status and body.
        Raises OSError / ssl errors from the dial, ProtocolError for a bad answer."""
        pool = self.host(endpoint)
        conn = await pool.acquire()
        try:
            return await conn.send(raw)
        finally:
            pool.release(conn)  # closed unless its answer was read whole

    def close(self) -> None:
        """Close the idle connections (those in use close when their call ends)."""
        for pool in self._hosts.values():
            pool.close()
        self._hosts.clear()


def request_bytes(host_header: str, path: str, body: bytes) -> bytes:
    """A POST of a JSON AdmissionReview with the headers kube-apiserver sends."""
    head = (
        f"POST {path} HTTP/1.1\r\n"
        f"Host: {host_header}\r\n"
        "User-Agent: kube-apiserver-admission\r\n"
        "Content-Type: application/json\r\n"
        "Accept: application/json, */*\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode("latin-1") + body
